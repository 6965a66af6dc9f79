/**
 * What a view hands its terminal per animation frame. xterm.js parses what
 * it is given in slices of up to 12 ms and renders in the next frame, so a
 * flood handed over as it arrives fills every frame with parsing and the
 * page dropped to 41-46 fps. The pacer keeps the output the terminal has not
 * been given yet and hands it at most a budget per frame: the bytes xterm
 * parses in `PARSE_MS_PER_FRAME` at the rate it showed on the last batches,
 * which leaves the rest of the frame to the renderer. Output that finds
 * nothing waiting and the frame's budget unspent (a keystroke's echo) goes
 * at once. Where no frames come (a hidden page, an iframe out of view)
 * output goes on without them, so the view keeps acknowledging. No DOM, no
 * xterm: the frame scheduler, the timer, the clock and the visibility
 * check are handed in, so it is tested under plain node.
 */

/**
 * The terminal's write: parse `data`, then call `parsed` (xterm's
 * `write(data, callback)`). `quiet`: the data is history (a replay), whose
 * queries the terminal must not answer (terminal.ts).
 */
export interface PacerSink {
  write(data: string | Uint8Array, parsed: () => void, quiet?: boolean): void;
}

export namespace OutputPacer {
  export interface IOptions {
    sink: PacerSink;
    /**
     * The terminal has parsed the output up to stream offset `end`;
     * `drained`: nothing waits here and nothing is left in the terminal.
     */
    written(end: number, drained: boolean): void;
    /** Calls back before the next frame is painted (`requestAnimationFrame`). */
    frame(callback: () => void): void;
    /** Calls back after `ms` milliseconds (`setTimeout`). */
    later(callback: () => void, ms: number): void;
    /** Milliseconds (`performance.now`). */
    now(): number;
    /** No frames come, or none are wanted (a background tab, a view out of sight): output goes on without them. */
    hidden(): boolean;
    /** Parse time per frame to aim at; defaults to `PARSE_MS_PER_FRAME`. */
    parseMsPerFrame?: number;
  }
}

/**
 * Parse time per frame to aim at: about half of a 60 Hz frame. A flood's
 * frame also holds xterm's render of a scrolled screen and the page's
 * style, layout and paint, which take a few ms; the main thread idles the
 * rest. At 4 ms a frame the parse was what bounded a flood (~3 MB/s: `seq 1
 * 2000000` typed into bash took 1.54-1.57x as long as in JupyterLab's
 * terminal of the same rows, at 60 fps); at 8 it takes 0.77-0.82x, at 58-59
 * fps (2 shared cores); 10-12 gained little more and lost frames under load
 * (benchmarks/bench_live.py flood_terminal, flood_seq, flood_view;
 * docs/architecture.md).
 */
export const PARSE_MS_PER_FRAME = 8;

/**
 * The budget before any batch was timed. Small: xterm parses slowest while
 * its scrollback fills (its scrollbar moves, with a timer, for each line:
 * ~100 us a line) and before its parser is optimised; a first 12 KiB batch
 * took 120 ms there, a first 4 KiB one up to 90.
 */
export const FIRST_BUDGET = 2 * 1024;

/** The most the budget grows per batch, so one quick timing does not flood the next frame. */
const GROWTH_MAX = 2;

/** Bounds on the budget: a slow sample never stalls output, a fast one never floods a frame. */
export const MIN_BUDGET = 1024;
export const MAX_BUDGET = 512 * 1024;

/**
 * A visible page that shows no frame for this long is not painting the
 * view (a cross-origin iframe scrolled out of view gets no frames, yet is
 * not `hidden`): what waits goes on without frames, as when hidden.
 */
export const FRAME_WAIT_MS = 1000;

/** The most given to the terminal in one write: xterm yields to the page only between writes. */
export const PIECE_BYTES = 32 * 1024;

/**
 * Batches smaller than this are not timed: a keystroke's echo parses in
 * timer noise. No more than the smallest budget, or a budget that low
 * would never learn again.
 */
const SAMPLE_MIN_BYTES = MIN_BUDGET;

/** How much a new timing moves the rate (the rest is the older estimate). */
const RATE_WEIGHT = 0.5;

/**
 * Output waiting for the terminal: text (notices, replays) or the stream's
 * bytes ending at `end`; `then` is called once it is parsed.
 */
type Waiting = (
  | { data: string; end: null; then?: () => void }
  | { data: Uint8Array; end: number; then?: undefined }
) & { quiet?: boolean };

/**
 * Text and bytes go through one queue, so a notice written after output
 * (the exit notice) shows after it. At most one batch is in the terminal
 * at a time: a frame that comes while the last one is still being parsed
 * hands nothing more, or the two would be parsed in one frame.
 */
export class OutputPacer {
  constructor(options: OutputPacer.IOptions) {
    this._options = options;
    this._parseMs = options.parseMsPerFrame ?? PARSE_MS_PER_FRAME;
    this._budget = FIRST_BUDGET;
  }

  /** Bytes (or UTF-16 units of text) handed to the terminal per frame now. */
  get budget(): number {
    return this._budget;
  }

  /** Nothing waits here and nothing handed on is still being parsed. */
  get drained(): boolean {
    return this._queue.length === 0 && this._inTerminal === 0;
  }

  /** `quiet`: history, handed to the sink as such, however it is cut (`PacerSink`). */
  writeText(text: string, quiet = false): void {
    if (text) {
      this._enqueue({ data: text, end: null, quiet });
    }
  }

  /** The stream's output; `end` is its offset after these bytes; `quiet` as for `writeText`. */
  writeBytes(bytes: Uint8Array, end: number, quiet = false): void {
    if (bytes.length > 0) {
      this._enqueue({ data: bytes, end, quiet });
    }
  }

  /** Call `callback` once all written so far is parsed. */
  whenParsed(callback: () => void): void {
    this._enqueue({ data: '', end: null, then: callback });
  }

  /** Call when the document is shown or hidden: hidden, what waits goes on without frames. */
  visibilityChanged(): void {
    this._pump();
  }

  /**
   * Drop what waits (the terminal is about to be reset): what is already
   * in the terminal is parsed, but no longer acknowledged.
   */
  reset(): void {
    this._queue = [];
    this._queued = 0;
    this._inTerminal = 0;
    this._end = null;
    this._generation++;
  }

  dispose(): void {
    this.reset();
    this._disposed = true;
  }

  private _enqueue(item: Waiting): void {
    if (this._disposed) {
      return;
    }
    this._queue.push(item);
    this._queued += item.data.length;
    this._pump();
  }

  /** Hand the terminal what the frame's budget allows (all of it while no frames come). */
  private _pump(): void {
    if (this._disposed || this._inTerminal > 0 || this._queue.length === 0) {
      return;
    }
    const hidden = this._framesStopped || this._options.hidden();
    const allowed = hidden ? this._queued : this._budget - this._spent;
    if (allowed <= 0) {
      this._requestFrame();
      return;
    }
    const batch = this._take(allowed);
    if (!hidden) {
      this._spent += batch.size;
      // The next frame starts a new budget (and takes what is left).
      this._requestFrame();
    }
    this._hand(batch.pieces, batch.size);
  }

  /** Up to `allowed` units from the front of the queue, cut into pieces a write each. */
  private _take(allowed: number): { pieces: Waiting[]; size: number } {
    const pieces: Waiting[] = [];
    let size = 0;
    // A `whenParsed` mark right after the budget's end goes with it.
    while (this._queue.length > 0 && (size < allowed || this._queue[0].data.length === 0)) {
      const item = this._queue[0];
      const room = Math.min(allowed - size, PIECE_BYTES);
      if (item.data.length <= room) {
        this._queue.shift();
        pieces.push(item);
        size += item.data.length;
        continue;
      }
      // Cut: xterm keeps a character (or an escape sequence) cut between
      // two writes and completes it with the next.
      const piece = cut(item, room);
      pieces.push(piece.head);
      this._queue[0] = piece.rest;
      size += room;
    }
    this._queued -= size;
    return { pieces, size };
  }

  /**
   * Write the pieces, each acknowledged once parsed. Before a batch worth
   * timing, an empty write marks when the terminal starts parsing it, so
   * its timing is parsing alone, not the wait for the terminal's next task.
   * Not before a small one: xterm parses the first write after a keystroke
   * at once, and the mark would take that from the echo.
   */
  private _hand(pieces: Waiting[], size: number): void {
    const generation = this._generation;
    const current = () => generation === this._generation && !this._disposed;
    let started = -1;
    this._inTerminal = pieces.length;
    if (size >= SAMPLE_MIN_BYTES) {
      this._options.sink.write('', () => {
        started = this._options.now();
      });
    }
    pieces.forEach((piece, index) => {
      const last = index === pieces.length - 1;
      this._options.sink.write(piece.data, () => {
        if (!this._disposed) {
          piece.then?.();
        }
        if (!current()) {
          return;
        }
        this._inTerminal--;
        if (piece.end !== null) {
          this._end = piece.end;
        }
        if (last && started >= 0) {
          this._learn(size, this._options.now() - started);
        }
        if (this._end !== null && (piece.end !== null || last)) {
          this._options.written(this._end, this.drained);
        }
        if (last) {
          this._pump();
        }
      }, piece.quiet === true);
    });
  }

  /** Set the budget from how fast the terminal parsed the last batch. */
  private _learn(size: number, ms: number): void {
    if (size < SAMPLE_MIN_BYTES) {
      return;
    }
    const rate = size / Math.max(ms, 0.25);
    this._rate = this._rate === null ? rate : this._rate + RATE_WEIGHT * (rate - this._rate);
    const wanted = Math.min(this._rate * this._parseMs, this._budget * GROWTH_MAX, MAX_BUDGET);
    this._budget = Math.round(Math.max(MIN_BUDGET, wanted));
  }

  private _requestFrame(): void {
    if (this._frameRequested || this._disposed) {
      return;
    }
    this._frameRequested = true;
    this._watchFrames();
    this._options.frame(() => {
      this._frameRequested = false;
      this._framesStopped = false;
      this._frames++;
      this._spent = 0;
      this._pump();
      // Still parsing the last batch: the next frame hands what waits.
      if (this._queue.length > 0) {
        this._requestFrame();
      }
    });
  }

  /** While a frame is awaited, check now and then that frames come at all. */
  private _watchFrames(): void {
    if (this._watching) {
      return;
    }
    this._watching = true;
    const framesBefore = this._frames;
    this._options.later(() => {
      this._watching = false;
      if (this._disposed || !this._frameRequested) {
        return;
      }
      if (this._frames === framesBefore) {
        this._framesStopped = true;
        this._pump();
      }
      this._watchFrames();
    }, FRAME_WAIT_MS);
  }

  private readonly _options: OutputPacer.IOptions;
  private readonly _parseMs: number;
  private _queue: Waiting[] = [];
  /** Units waiting in the queue. */
  private _queued = 0;
  /** Pieces handed to the terminal and not parsed yet. */
  private _inTerminal = 0;
  /** Units handed to the terminal since the last frame. */
  private _spent = 0;
  private _budget: number;
  /** Units the terminal parses per millisecond, as last measured. */
  private _rate: number | null = null;
  /** The stream offset parsed so far (null: no bytes since the last reset). */
  private _end: number | null = null;
  private _frameRequested = false;
  /** Frames seen so far. */
  private _frames = 0;
  private _watching = false;
  /** A frame was awaited for `FRAME_WAIT_MS` in vain; the next one that comes ends this. */
  private _framesStopped = false;
  private _generation = 0;
  private _disposed = false;
}

function cut(item: Waiting, at: number): { head: Waiting; rest: Waiting } {
  const quiet = item.quiet;
  if (item.end === null) {
    return {
      head: { data: item.data.slice(0, at), end: null, quiet },
      rest: { data: item.data.slice(at), end: null, quiet }
    };
  }
  const restLength = item.data.length - at;
  return {
    head: { data: item.data.subarray(0, at), end: item.end - restLength, quiet },
    rest: { data: item.data.subarray(at), end: item.end, quiet }
  };
}
