import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import type { AttachedMessage, DataMessage, KernelMessage, RequestId } from '../src/protocol';
import { SessionStream, type StreamAction } from '../src/stream';

const ME = 'me-1';

function attached(offset = 0, requestId: RequestId = ME, alive = true): AttachedMessage {
  return {
    type: 'attached',
    request_id: requestId,
    session_id: 0,
    offset,
    alive,
    exit_code: alive ? null : 0,
    rows: 24,
    cols: 80
  };
}

/** A data event for `text`, placed after `skipped` bytes from `offset`. */
function data(
  offset: number,
  text: string,
  requestId: RequestId | null = null,
  skipped = 0
): DataMessage {
  const start = offset + skipped;
  return {
    type: 'data',
    request_id: requestId,
    session_id: 0,
    offset: start,
    end: start + Buffer.byteLength(text),
    data: text,
    skipped
  };
}

/** Feed messages to a stream that has sent `attach` with id ME. */
function run(...msgs: KernelMessage[]): { stream: SessionStream; actions: (StreamAction | null)[] } {
  const stream = new SessionStream();
  stream.begin(ME);
  return { stream, actions: msgs.map(m => stream.handle(m)) };
}

function written(actions: (StreamAction | null)[]): string {
  return actions
    .map(a => (a && a.kind !== 'reattach' ? a.text + (a.kind === 'write' && a.bytes ? new TextDecoder().decode(a.bytes) : '') : ''))
    .join('');
}

function history(actions: (StreamAction | null)[]): (boolean | null)[] {
  return actions.map(a => (a?.kind === 'write' ? a.history === true : null));
}

describe('SessionStream', () => {
  test('replayed output is history, whose queries get no answer; live output is not', () => {
    const { actions } = run(
      { ...attached(), end: 9 },
      data(0, '\x1b[c$ ', ME),
      data(5, 'vi\r\n', ME),
      data(9, '\x1b[c')
    );
    assert.deepEqual(history(actions), [null, true, true, false]);
  });

  test("the direct channel's replay (no request id) is history up to attached.end", () => {
    const bytes = (text: string, offset: number): DataMessage => ({
      ...data(offset, ''),
      end: offset + text.length,
      data: new TextEncoder().encode(text)
    });
    const { actions } = run({ ...attached(), end: 5 }, bytes('\x1b[c$ ', 0), bytes('\x1b[c', 5));
    assert.deepEqual(history(actions), [null, true, false]);
  });

  test('paused follows attached.paused and flow messages, and ends with the program', () => {
    const stream = new SessionStream();
    stream.begin(ME);
    stream.handle({ ...attached(), paused: true });
    assert.equal(stream.paused, true);
    assert.equal(stream.handle({ type: 'flow', session_id: 0, paused: false }), null);
    assert.equal(stream.paused, false);
    stream.handle({ type: 'flow', session_id: 0, paused: true });
    assert.equal(stream.paused, true);
    stream.handle({ type: 'exited', session_id: 0, exit_code: 0, request_id: null } as KernelMessage);
    assert.equal(stream.paused, false);
  });

  test('a pipes session (attached.tty false) is read-only and its view says so once, first', () => {
    const stream = new SessionStream();
    stream.begin(ME);
    const action = stream.handle({ ...attached(), tty: false }) as { kind: string; text: string };
    assert.equal(stream.readOnly, true);
    assert.match(action.text, /read-only: this session runs on pipes/);
    const terminal = new SessionStream();
    terminal.begin(ME);
    const plain = terminal.handle({ ...attached(), tty: true }) as { kind: string; text: string };
    assert.equal(terminal.readOnly, false);
    assert.equal(plain.text, '');
  });

  test('replaying until the data reaches attached.end, however it is cut', () => {
    const stream = new SessionStream();
    stream.begin(ME);
    stream.handle({ ...attached(), end: 9 });
    assert.equal(stream.replaying, true);
    stream.handle(data(0, 'abcd', ME));
    assert.equal(stream.replaying, true);
    stream.handle(data(4, 'efghi', ME));
    assert.equal(stream.replaying, false);
    const empty = new SessionStream();
    empty.begin(ME);
    empty.handle({ ...attached(), end: 0 });
    assert.equal(empty.replaying, false, 'an empty scrollback is no replay to wait for');
  });

  test('what a resume missed is history too, and what follows it is live', () => {
    const stream = new SessionStream();
    stream.begin(ME);
    stream.handle({ ...attached(), end: 2 });
    stream.handle(data(0, '$ ', ME));
    stream.resume('me-2');
    const actions = [
      stream.handle({ ...attached(0, 'me-2'), end: 6 }),
      stream.handle(data(0, '$ ls\r\n', 'me-2')),
      stream.handle(data(6, '\x1b[6n'))
    ];
    assert.deepEqual(history(actions), [null, true, false]);
    assert.equal(written(actions), 'ls\r\n\x1b[6n');
  });

  test('shows replay then live events in order', () => {
    const { stream, actions } = run(
      attached(),
      data(0, '$ ', ME),
      data(2, 'ls\r\n'),
      data(6, 'é\r\n')
    );
    // The replay's terminal size comes with it: the PTY's, which wrote it.
    assert.deepEqual(actions[0], { kind: 'attached', text: '', alive: true, rows: 24, cols: 80 });
    assert.equal(written(actions), '$ ls\r\né\r\n');
    // Offsets count UTF-8 bytes: "é" is two.
    assert.equal(stream.end, 10);
    assert.equal(stream.live, true);
  });

  test('ignores duplicates, including partial repeats ending at or before end', () => {
    const { stream, actions } = run(
      attached(),
      data(0, 'abc'),
      data(0, 'abc'),
      data(1, 'bc'),
      data(3, 'def'),
      data(3, 'def')
    );
    assert.deepEqual(
      actions.map(a => a?.kind ?? null),
      ['attached', 'write', null, null, 'write', null]
    );
    assert.equal(written(actions), 'abcdef');
    assert.equal(stream.end, 6);
  });

  test('shows a skip notice on its own line before the data after a skip', () => {
    const { stream, actions } = run(attached(), data(0, 'y\r\ny'), data(4, 'y\r\n', null, 1_234_567));
    const text = written(actions);
    assert.ok(text.includes('[… 1.2 MB skipped …]'), text);
    // The notice starts a new line because the output stopped mid-line.
    assert.ok(text.startsWith('y\r\ny\r\n\x1b[2m[… 1.2 MB skipped …]'), JSON.stringify(text));
    assert.ok(text.endsWith('\r\ny\r\n'), JSON.stringify(text));
    assert.equal(stream.end, 4 + 1_234_567 + 3);
  });

  test('notes output the kernel no longer keeps when the replay starts late', () => {
    const { actions } = run(attached(5000), data(5000, 'tail', ME));
    assert.equal(actions[0]?.kind, 'attached');
    assert.ok(written(actions).includes('[… 5.0 kB skipped …]'));
    assert.ok(written(actions).endsWith('tail'));
  });

  test('asks to re-attach after a lost message, then ignores data until begin', () => {
    const { stream, actions } = run(attached(), data(0, 'abc'), data(10, 'xyz'), data(13, 'more'));
    assert.deepEqual(actions[2], { kind: 'reattach' });
    assert.equal(actions[3], null);
    assert.equal(stream.live, false);
    assert.equal(stream.attaching, true); // keys typed now wait for the new `attached`

    stream.begin('me-2');
    assert.equal(stream.handle(data(13, 'late')), null);
    assert.equal(stream.handle(attached(0, 'me-2'))?.kind, 'attached');
    assert.equal(stream.attaching, false);
    assert.deepEqual(stream.handle(data(0, 'abcdefghijklmxyz', 'me-2')), {
      kind: 'write',
      text: 'abcdefghijklmxyz',
      history: true
    });
    assert.equal(stream.end, 16);
  });

  test("ignores replays answering another view's attach", () => {
    const { actions } = run(
      attached(),
      data(0, 'one', ME),
      attached(0, 'other'),
      data(0, 'one', 'other'),
      data(0, 'onetwo', 'other'),
      data(3, 'two')
    );
    assert.deepEqual(
      actions.map(a => a?.kind ?? null),
      ['attached', 'write', null, null, null, 'write']
    );
    assert.equal(written(actions), 'onetwo');
  });

  test('ignores live events and other answers before its own attached', () => {
    const { stream, actions } = run(
      data(0, 'early'),
      { type: 'exited', session_id: 0, exit_code: 1 },
      attached(0, 'other'),
      attached(),
      data(0, 'early', ME),
      data(5, '!')
    );
    assert.deepEqual(
      actions.map(a => a?.kind ?? null),
      [null, null, null, 'attached', 'write', 'write']
    );
    assert.equal(written(actions), 'early!');
    assert.equal(stream.live, true);
  });

  test('ends with one exit line, and is no longer live', () => {
    const { stream, actions } = run(
      attached(),
      data(0, 'bye'),
      { type: 'exited', session_id: 0, exit_code: 0 },
      { type: 'exited', session_id: 0, exit_code: 0 }
    );
    assert.equal(written(actions), 'bye\r\n\x1b[2m[exited with code 0]\x1b[22m\r\n');
    assert.equal(actions[3], null);
    assert.equal(stream.live, false);
  });

  test('shows the exit of a session that had ended before attaching', () => {
    const { stream, actions } = run(
      attached(0, ME, false),
      data(0, 'done\r\n', ME),
      { type: 'exited', session_id: 0, exit_code: -9 }
    );
    assert.equal(stream.live, false);
    assert.equal(written(actions), 'done\r\n\x1b[2m[killed by signal 9]\x1b[22m\r\n');
  });

  test('says a session the user closed was closed', () => {
    const { actions } = run(attached(), { type: 'exited', session_id: 0, exit_code: -1, closed: true });
    assert.equal(written(actions), '\x1b[2m[closed]\x1b[22m\r\n');
  });

  test('says a session its kernel ended ended with the kernel, not its signal, and then is ended', () => {
    const { stream, actions } = run(attached(), { type: 'exited', session_id: 0, exit_code: -1, closed: true, reason: 'kernel' });
    assert.equal(written(actions), '\x1b[2m[ended with the kernel]\x1b[22m\r\n');
    assert.ok(stream.ended && !stream.live);
  });

  test('a replay written at several sizes is cut where the size changed, each stretch with its size', () => {
    // 'wide€' at 24x100 (offsets 0..7), 'narrow' at 24x40 (7..13), then 'back' at 30x120 (13..17).
    const { actions } = run(
      { ...attached(), end: 17, sizes: [[0, 24, 100], [7, 24, 40], [13, 30, 120]] },
      data(0, 'wide€nar', ME),
      data(10, 'rowback', ME),
      data(17, 'live')
    );
    const start = actions[0] as Extract<StreamAction, { kind: 'attached' }>;
    assert.deepEqual([start.rows, start.cols], [24, 100], 'the replay starts at the size it was written at');
    const first = actions[1] as Extract<StreamAction, { kind: 'write' }>;
    assert.equal(first.text, 'wide€');
    assert.deepEqual(first.resized, [{ rows: 24, cols: 40, data: 'nar', start: 7, end: 10 }]);
    const second = actions[2] as Extract<StreamAction, { kind: 'write' }>;
    assert.equal(second.text, 'row');
    assert.deepEqual(second.resized, [{ rows: 30, cols: 120, data: 'back', start: 13, end: 17 }]);
    const live = actions[3] as Extract<StreamAction, { kind: 'write' }>;
    assert.equal(live.text, 'live');
    assert.equal(live.resized, undefined, 'live output is at the size of now');
  });

  test('reports a failed attach, and only its own', () => {
    const { stream, actions } = run(
      { type: 'error', request_id: 'other', error: 'BadRequest', message: 'nope' },
      { type: 'error', request_id: ME, error: 'UnknownSessionId', message: 'no session 7' }
    );
    assert.equal(actions[0], null);
    assert.ok(written(actions).includes('[cannot attach: UnknownSessionId: no session 7]'));
    assert.equal(stream.live, false);
  });

  test('writes bytes from the direct channel as bytes, after any skip notice', () => {
    const bytes = new TextEncoder().encode('y\r\n');
    const { stream, actions } = run(attached(), {
      type: 'data',
      request_id: null,
      session_id: 0,
      offset: 10,
      end: 13,
      skipped: 10,
      data: bytes
    });
    assert.equal(actions[1]?.kind, 'write');
    const action = actions[1] as { text: string; bytes?: Uint8Array };
    assert.equal(action.text, '\x1b[2m[… 10 bytes skipped …]\x1b[22m\r\n');
    assert.deepEqual(action.bytes, bytes);
    assert.equal(stream.end, 13);
  });

  test('a resume keeps what is shown and writes only what the replay adds', () => {
    const { stream, actions } = run(attached(), data(0, 'ab'), data(2, 'cé'));
    stream.resume('me-2');
    assert.equal(stream.live, false);
    const more = [
      data(5, 'late'), // live, before the new attached: the replay covers it
      attached(0, 'me-2'),
      data(0, 'abc', 'me-2'), // all shown
      data(3, 'éfg', 'me-2'), // "é" shown, "fg" new
      data(7, 'h')
    ].map(m => stream.handle(m));
    assert.deepEqual(more[1], { kind: 'resumed', text: '', alive: true });
    assert.equal(written([...actions, ...more]), 'abcéfgh');
    assert.equal(stream.end, 8);
    assert.ok(stream.live);
  });

  test('a resume that finds older output gone says how much', () => {
    const { stream } = run(attached(), data(0, 'abc'));
    stream.resume('me-2');
    const resumed = stream.handle(attached(2000, 'me-2'));
    assert.equal(resumed?.kind, 'resumed');
    assert.equal((resumed as { text: string }).text, '\r\n\x1b[2m[… 2.0 kB skipped …]\x1b[22m\r\n');
    assert.deepEqual(stream.handle(data(2000, 'x', 'me-2')), { kind: 'write', text: 'x', history: true });
  });

  test("a resume's notice is one dim line where the view goes on, then the skip notice if any", () => {
    const { stream } = run(attached(), data(0, '$ '));
    stream.resume('me-2', 'kernel restarted');
    const resumed = stream.handle(attached(0, 'me-2'));
    // The line it cut (the prompt) is drawn again under it, where the program's cursor is.
    assert.deepEqual(resumed, { kind: 'resumed', text: '\r\n\x1b[2mkernel restarted\x1b[22m\r\n$ ', alive: true });
    stream.resume('me-3', 'again');
    const skipped = stream.handle(attached(1002, 'me-3'));
    // Output was lost: what the line held is not known, so it is not drawn.
    assert.equal((skipped as { text: string }).text, '\r\n\x1b[2magain\x1b[22m\r\n\x1b[2m[… 1.0 kB skipped …]\x1b[22m\r\n');
    // A resume without one says nothing.
    stream.resume('me-4');
    assert.deepEqual(stream.handle(attached(1002, 'me-4')), { kind: 'resumed', text: '', alive: true });
  });

  test("only a short line of text and colours is drawn again under a resume's notice", () => {
    const cases: [string, string][] = [
      ['out\r\n\x1b[1;32muser$\x1b[0m ', '\x1b[1;32muser$\x1b[0m '], // a coloured prompt
      ['\x1b[?2004l\r\r\n\x1b[?2004h$ ', '\x1b[?2004h$ '], // bash's, bracketed paste on
      ['\x1b]0;title\x07\x1b]133;A\x1b\\> ', '\x1b]0;title\x07\x1b]133;A\x1b\\> '], // a title and a mark
      ['out\r\n', ''], // at a line's start: nothing to draw
      ['\x1b[2J\x1b[1;1Htop', ''], // cursor movement: drawn again, it would go elsewhere
      ['50%\r60%', '50%\r60%'], // a carriage return: drawn again from column 0, the same line
      ['\x1b[?2004h$ \r\x1b[K\r$ ', '\x1b[?2004h$ \r\x1b[K\r$ '], // readline's redraw after a resize
      ['a\tb', ''], // a tab moves by the terminal's stops
      ['\x1b[Aup', ''], // off the line
      ['x'.repeat(300), ''] // not a prompt
    ];
    for (const [shown, again] of cases) {
      const { stream } = run(attached(), data(0, shown));
      stream.resume('me-2', 'n');
      const resumed = stream.handle(attached(0, 'me-2')) as { text: string };
      assert.ok(resumed.text.endsWith(`\x1b[2mn\x1b[22m\r\n${again}`), JSON.stringify([shown, resumed.text]));
    }
  });

  test('a resume shows the exit once, and a forgotten exited session needs no words', () => {
    const exited: KernelMessage = { type: 'exited', session_id: 0, exit_code: 0 };
    const { stream, actions } = run(attached(), data(0, 'bye\r\n'), exited);
    stream.resume('me-2');
    const again = [attached(0, 'me-2', false), data(0, 'bye\r\n', 'me-2'), exited].map(m => stream.handle(m));
    assert.equal(written([...actions, ...again]), 'bye\r\n\x1b[2m[exited with code 0]\x1b[22m\r\n');
    stream.resume('me-3');
    assert.equal(stream.handle({ type: 'error', request_id: 'me-3', error: 'UnknownSessionId', message: 'gone' }), null);
  });

  test('a resume before the first attached is a fresh begin', () => {
    const stream = new SessionStream();
    stream.begin(ME);
    stream.resume('me-2');
    assert.equal(stream.handle(attached(0, ME)), null);
    assert.equal(stream.handle(attached(0, 'me-2'))?.kind, 'attached');
  });

  test('ignores messages that are not about the stream', () => {
    const { actions } = run(attached(), { type: 'sessions_changed' }, {
      type: 'ok',
      request_id: null,
      session_id: 0
    });
    assert.deepEqual(actions.slice(1), [null, null]);
  });
});
