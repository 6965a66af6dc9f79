import assert from 'node:assert/strict';
import { test } from 'node:test';

import { FIRST_BUDGET, FRAME_WAIT_MS, MIN_BUDGET, OutputPacer, PARSE_MS_PER_FRAME, PIECE_BYTES } from '../src/pacer';

/**
 * A terminal that parses only when told to, at a set speed, on a clock
 * and frames driven by hand.
 */
class Page {
  now = 0;
  hidden = false;
  /** Units the terminal parses per millisecond: the budget it learns is the first one. */
  speed = FIRST_BUDGET / PARSE_MS_PER_FRAME;
  /** Everything written, in order (the pacer's empty timing marks left out). */
  written: (string | Uint8Array)[] = [];
  acks: [number, boolean][] = [];
  /** Calls of the terminal's write, empty ones included. */
  writes = 0;
  /** Each non-empty write: its length and whether it was history (`quiet`). */
  pieces: [number, boolean][] = [];
  private _unparsed: { data: string | Uint8Array; parsed: () => void }[] = [];
  private _frames: (() => void)[] = [];
  private _timers: { at: number; callback: () => void }[] = [];

  readonly pacer: OutputPacer;

  constructor(parseMsPerFrame?: number) {
    this.pacer = new OutputPacer({
      sink: {
        write: (data, parsed, quiet) => {
          this.writes++;
          if (data.length > 0) {
            this.pieces.push([data.length, quiet === true]);
          }
          if (data.length > 0) {
            this.written.push(data);
          }
          this._unparsed.push({ data, parsed });
        }
      },
      written: (end, drained) => this.acks.push([end, drained]),
      frame: callback => this._frames.push(callback),
      later: (callback, ms) => this._timers.push({ at: this.now + ms, callback }),
      now: () => this.now,
      hidden: () => this.hidden,
      parseMsPerFrame
    });
  }

  /** Units written since the last look. */
  take(): number {
    const units = this.written.reduce((sum, data) => sum + data.length, 0);
    this.written = [];
    return units;
  }

  get framesWaiting(): number {
    return this._frames.length;
  }

  /** The terminal parses what it was given so far, taking time at its speed. */
  parse(): void {
    for (const { data, parsed } of this._unparsed.splice(0)) {
      this.now += data.length / this.speed;
      parsed();
    }
  }

  /** Time passes without frames (an iframe out of view): timers fire. */
  wait(ms: number): void {
    this.now += ms;
    const due = this._timers.filter(timer => timer.at <= this.now);
    this._timers = this._timers.filter(timer => timer.at > this.now);
    for (const timer of due) {
      timer.callback();
    }
  }

  get timersWaiting(): number {
    return this._timers.length;
  }

  frame(): void {
    this.now += 16;
    for (const callback of this._frames.splice(0)) {
      callback();
    }
  }

  /** Frames, each followed by the terminal's parse, until nothing waits. */
  run(maxFrames = 1000): number {
    let frames = 0;
    while (!this.pacer.drained || this._unparsed.length > 0) {
      assert.ok(frames++ < maxFrames, 'the pacer never drained');
      this.frame();
      this.parse();
    }
    return frames;
  }
}

const bytes = (n: number, fill = 0x61) => new Uint8Array(n).fill(fill);
const text = (data: string | Uint8Array) => (typeof data === 'string' ? data : Buffer.from(data).toString());

test('output finding nothing waiting goes to the terminal at once', () => {
  const page = new Page();
  page.pacer.writeBytes(bytes(3), 3);
  assert.equal(page.take(), 3); // no frame needed
  page.parse();
  assert.deepEqual(page.acks, [[3, true]]);
});

test("an echo is the terminal's first write, which xterm parses at once after a keystroke", () => {
  const page = new Page();
  page.pacer.writeBytes(bytes(1, 0x78), 1);
  assert.equal(page.writes, 1);
});

test('a flood is handed at most one budget per frame', () => {
  const page = new Page(6);
  page.speed = 3 * 1024; // faster than first thought: the budget grows as it learns
  const total = 1024 * 1024;
  for (let end = 64 * 1024; end <= total; end += 64 * 1024) {
    page.pacer.writeBytes(bytes(64 * 1024), end);
  }
  let handed = 0;
  while (!page.pacer.drained) {
    // What is handed between two frames: in the frame, and once the last batch is parsed.
    const budget = page.pacer.budget;
    page.parse();
    const units = page.take();
    assert.ok(units <= Math.max(budget, page.pacer.budget), `${units} handed in a frame of budget ${budget}`);
    handed += units;
    page.frame();
  }
  assert.equal(handed, total);
  assert.deepEqual(page.acks.at(-1), [total, true]);
});

test('the budget follows the parse speed towards the time aimed at', () => {
  const page = new Page(6);
  page.speed = 2 * 1024; // units per ms
  for (let end = 32 * 1024; end <= 512 * 1024; end += 32 * 1024) {
    page.pacer.writeBytes(bytes(32 * 1024), end);
  }
  page.run();
  assert.equal(page.pacer.budget, 6 * 2 * 1024);
  page.speed = 8 * 1024;
  for (let end = 512 * 1024 + 32 * 1024; end <= 2 * 512 * 1024; end += 32 * 1024) {
    page.pacer.writeBytes(bytes(32 * 1024), end);
  }
  page.run();
  assert.ok(Math.abs(page.pacer.budget - 6 * 8 * 1024) < 1024, `budget ${page.pacer.budget}`);
});

test('a flood is given about half of each 60 Hz frame to parse, the rest left to the renderer', () => {
  // 4 ms a frame bounded a flood at a third of what the page could draw
  // (bench_live.py flood_terminal); a whole frame of parsing drops frames.
  const page = new Page();
  page.speed = 2 * 1024; // units per ms
  const total = 4 * 1024 * 1024;
  for (let end = 64 * 1024; end <= total; end += 64 * 1024) {
    page.pacer.writeBytes(bytes(64 * 1024), end);
  }
  const parseMs: number[] = [];
  while (!page.pacer.drained) {
    page.frame(); // 16 ms
    const before = page.now;
    page.parse();
    parseMs.push(page.now - before);
  }
  const steady = parseMs.slice(10, -2); // learnt, and not the last, partial batches
  assert.ok(steady.length > 100, `${steady.length} frames`);
  for (const ms of steady) {
    assert.ok(ms >= 7 && ms <= 9, `${ms} ms of parsing in a 16 ms frame`);
  }
});

test('one quick batch at most doubles the budget', () => {
  const page = new Page();
  page.speed = 100 * FIRST_BUDGET; // a hundred times faster than the first budget assumes
  page.pacer.writeBytes(bytes(64 * FIRST_BUDGET), 64 * FIRST_BUDGET);
  page.parse();
  assert.equal(page.pacer.budget, 2 * FIRST_BUDGET);
  page.parse();
  assert.equal(page.pacer.budget, 4 * FIRST_BUDGET);
});

test('a budget driven to its least by a slow terminal grows again once it is quick', () => {
  const page = new Page();
  page.speed = 10; // units per ms: far slower than the least budget allows for
  page.pacer.writeBytes(bytes(16 * FIRST_BUDGET), 16 * FIRST_BUDGET);
  page.parse();
  page.frame();
  page.parse();
  assert.equal(page.pacer.budget, MIN_BUDGET);
  page.speed = FIRST_BUDGET / PARSE_MS_PER_FRAME;
  page.run();
  assert.equal(page.pacer.budget, FIRST_BUDGET);
});

test('a frame hands nothing while the last batch is still being parsed', () => {
  const page = new Page();
  page.pacer.writeBytes(bytes(4 * FIRST_BUDGET), 4 * FIRST_BUDGET);
  assert.equal(page.take(), FIRST_BUDGET);
  page.frame(); // not parsed yet
  assert.equal(page.take(), 0);
  page.parse();
  page.frame();
  assert.equal(page.take(), FIRST_BUDGET);
});

test('a keystroke after a flood waits for the next frame, not behind the whole flood', () => {
  const page = new Page();
  page.pacer.writeBytes(bytes(3 * FIRST_BUDGET), 3 * FIRST_BUDGET);
  page.take();
  page.parse();
  page.pacer.writeBytes(bytes(1, 0x78), 3 * FIRST_BUDGET + 1);
  assert.equal(page.take(), 0); // this frame's budget is spent
  page.run();
  assert.deepEqual(page.acks.at(-1), [3 * FIRST_BUDGET + 1, true]);
});

test('once the frames after a flood pass, output goes at once again', () => {
  const page = new Page();
  page.pacer.writeBytes(bytes(2 * FIRST_BUDGET), 2 * FIRST_BUDGET);
  page.run();
  page.frame(); // the frame requested after the last batch
  assert.equal(page.framesWaiting, 0); // idle: no frames asked for
  page.take();
  page.pacer.writeBytes(bytes(1), 2 * FIRST_BUDGET + 1);
  assert.equal(page.take(), 1);
});

test('text written after queued bytes comes after them, and is never acknowledged on its own', () => {
  const page = new Page();
  const output = 'x'.repeat(3 * FIRST_BUDGET);
  page.pacer.writeBytes(Buffer.from(output), output.length);
  page.pacer.writeText('\r\n[exited with code 0]\r\n');
  const shown: string[] = [];
  const collect = () => shown.push(...page.written.map(text).filter(Boolean));
  collect();
  page.written = [];
  while (!page.pacer.drained) {
    page.parse();
    page.frame();
    collect();
    page.written = [];
  }
  assert.equal(shown.join(''), output + '\r\n[exited with code 0]\r\n');
  assert.ok(page.acks.every(([end]) => end <= output.length));
  page.parse();
  assert.deepEqual(page.acks.at(-1), [output.length, true]);
});

test('a character cut between two batches is written whole across them', () => {
  const page = new Page();
  const euro = Buffer.from('€'.repeat(FIRST_BUDGET)); // 3 bytes each: a batch ends mid-character
  page.pacer.writeBytes(euro, euro.length);
  const chunks: Uint8Array[] = [];
  while (!page.pacer.drained) {
    chunks.push(...(page.written as Uint8Array[]));
    page.written = [];
    page.parse();
    page.frame();
  }
  assert.ok(Buffer.concat(chunks).equals(euro));
});

test('a callback waits for what was written before it to be parsed', () => {
  const page = new Page();
  let called = false;
  page.pacer.writeBytes(bytes(3 * FIRST_BUDGET), 3 * FIRST_BUDGET);
  page.pacer.whenParsed(() => (called = true));
  page.parse();
  page.frame();
  page.parse();
  assert.equal(called, false); // a third budget still waits
  page.frame();
  page.parse();
  assert.equal(called, true);
});

test('the drained flag is true only once nothing waits and nothing is being parsed', () => {
  const page = new Page();
  page.pacer.writeBytes(bytes(FIRST_BUDGET + 10), FIRST_BUDGET + 10);
  assert.equal(page.pacer.drained, false);
  page.parse();
  assert.deepEqual(page.acks, [[FIRST_BUDGET, false]]); // 10 bytes still wait
  page.frame();
  assert.equal(page.pacer.drained, false); // handed, not parsed
  page.parse();
  assert.equal(page.pacer.drained, true);
  assert.deepEqual(page.acks.at(-1), [FIRST_BUDGET + 10, true]);
});

test('every piece is acknowledged as it is parsed', () => {
  const page = new Page(1000); // a budget of several pieces
  page.pacer.writeBytes(bytes(64 * 1024), 64 * 1024);
  page.run();
  page.acks = [];
  page.frame();
  page.pacer.writeBytes(bytes(3 * PIECE_BYTES), 64 * 1024 + 3 * PIECE_BYTES);
  page.parse();
  assert.deepEqual(
    page.acks.map(([end]) => end),
    [1, 2, 3].map(n => 64 * 1024 + n * PIECE_BYTES)
  );
});

test('hidden, output goes on without frames', () => {
  const page = new Page();
  page.hidden = true;
  page.pacer.writeBytes(bytes(10 * FIRST_BUDGET), 10 * FIRST_BUDGET);
  assert.equal(page.take(), 10 * FIRST_BUDGET);
  page.parse();
  assert.deepEqual(page.acks.at(-1), [10 * FIRST_BUDGET, true]);
});

test('hidden while output waits for a frame, it goes on at once', () => {
  const page = new Page();
  page.pacer.writeBytes(bytes(10 * FIRST_BUDGET), 10 * FIRST_BUDGET);
  page.take();
  page.parse();
  page.hidden = true;
  page.pacer.visibilityChanged();
  assert.equal(page.take(), 9 * FIRST_BUDGET);
  page.parse();
  assert.deepEqual(page.acks.at(-1), [10 * FIRST_BUDGET, true]);
});

test('visible but given no frames (an iframe out of view), output goes on after a wait', () => {
  const page = new Page();
  const asked = page.now; // the first frame is asked for with the first write
  page.pacer.writeBytes(bytes(10 * FIRST_BUDGET), 10 * FIRST_BUDGET);
  page.take();
  page.parse();
  page.wait(asked + FRAME_WAIT_MS - 1 - page.now);
  assert.equal(page.take(), 0);
  page.wait(1);
  assert.equal(page.take(), 9 * FIRST_BUDGET);
  page.parse();
  assert.deepEqual(page.acks.at(-1), [10 * FIRST_BUDGET, true]);
  page.pacer.writeBytes(bytes(4 * FIRST_BUDGET), 14 * FIRST_BUDGET); // still no frames: at once
  assert.equal(page.take(), 4 * FIRST_BUDGET);
  page.parse();
  page.frame(); // in view again: paced
  page.pacer.writeBytes(bytes(4 * FIRST_BUDGET), 18 * FIRST_BUDGET);
  assert.equal(page.take(), FIRST_BUDGET);
});

test('frames that come keep the wait from handing everything on', () => {
  const page = new Page();
  page.pacer.writeBytes(bytes(100 * FIRST_BUDGET), 100 * FIRST_BUDGET);
  page.take();
  for (let ms = 0; ms < 3 * FRAME_WAIT_MS; ms += 16) {
    page.frame();
    page.wait(0); // any timer now due
    page.parse();
    assert.ok(page.take() <= page.pacer.budget);
  }
});

test('an idle pacer keeps no timer', () => {
  const page = new Page();
  page.pacer.writeBytes(bytes(3 * FIRST_BUDGET), 3 * FIRST_BUDGET);
  page.run();
  page.frame();
  page.wait(FRAME_WAIT_MS);
  assert.equal(page.timersWaiting, 0);
});

test('a reset drops what waits and no longer acknowledges what was handed', () => {
  const page = new Page();
  page.pacer.writeBytes(bytes(4 * FIRST_BUDGET), 4 * FIRST_BUDGET);
  page.take();
  page.pacer.reset();
  page.pacer.writeText('\x1bc');
  page.parse(); // the old batch
  page.frame();
  assert.deepEqual(page.written, ['\x1bc']);
  page.parse();
  assert.deepEqual(page.acks, []);
  assert.equal(page.pacer.drained, true);
  page.pacer.writeBytes(bytes(5), 5); // the new attachment's output
  page.run();
  assert.deepEqual(page.acks.at(-1), [5, true]);
});

test('after dispose nothing is written or acknowledged', () => {
  const page = new Page();
  page.pacer.writeBytes(bytes(4 * FIRST_BUDGET), 4 * FIRST_BUDGET);
  page.take();
  page.pacer.dispose();
  page.parse();
  page.frame();
  page.pacer.writeText('late');
  assert.equal(page.take(), 0);
  assert.deepEqual(page.acks, []);
});

test('history stays history however it is cut, and live output after it is not', () => {
  const page = new Page();
  const replay = bytes(3 * PIECE_BYTES + 5);
  page.pacer.writeText('notice\r\n');
  page.pacer.writeBytes(replay, replay.length, true);
  page.pacer.writeText('[a replayed notice]', true);
  page.pacer.writeBytes(bytes(7), replay.length + 7);
  page.run();
  const quiet = page.pieces.filter(([, q]) => q).reduce((sum, [n]) => sum + n, 0);
  assert.equal(quiet, replay.length + '[a replayed notice]'.length);
  assert.deepEqual(page.pieces[0], ['notice\r\n'.length, false]);
  assert.deepEqual(page.pieces[page.pieces.length - 1], [7, false]);
  assert.ok(page.pieces.length > 5, 'the replay went in pieces');
});
