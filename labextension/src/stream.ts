/**
 * The gap rule of docs/protocol.md for one view of one session, as a pure
 * state machine: it is fed the kernel's messages and says what to write to
 * the terminal and when the view must start over. No DOM, no Lumino, so it
 * is tested under plain node.
 */

import { exitNotice, skipNotice, READ_ONLY_NOTICE } from './format';
import type { AttachedMessage, EndReason, KernelMessage, RequestId } from './protocol';

export type StreamAction =
  /**
   * Append `text`, then `bytes` (UTF-8, from the direct channel) if any.
   * `history`: output printed before this view attached (the replay, or
   * what a resume missed): the terminal must not answer the queries in it.
   */
  | {
      kind: 'write';
      text: string;
      bytes?: Uint8Array;
      history?: boolean;
      /**
       * History written at other sizes, after `text`/`bytes`: resize the
       * terminal to each piece's `rows` x `cols` once what comes before it
       * is parsed, then write it.
       */
      resized?: ResizedPiece[];
    }
  /**
   * The view's own `attached` arrived: write `text`, then the view is live.
   * The replay that follows was written in a terminal of `rows` x `cols`.
   */
  | { kind: 'attached'; text: string; alive: boolean; rows: number; cols: number }
  /**
   * The answer to a `resume`'s attach: write `text` (a skip notice, if the
   * kernel no longer keeps all that was missed); the view is live again and
   * keeps what it showed.
   */
  | { kind: 'resumed'; text: string; alive: boolean }
  /** A message was lost: clear the terminal, then `begin` and `attach` again. */
  | { kind: 'reattach' };

type State = 'idle' | 'attaching' | 'attached';

/** A stretch of the replay and the terminal size it was written at. */
export interface ResizedPiece {
  rows: number;
  cols: number;
  data: string | Uint8Array;
  /** Its offsets in the session's output. */
  start: number;
  end: number;
}

export class SessionStream {
  /** Start (or start over) an attachment whose `attach` carries `requestId`. */
  begin(requestId: RequestId): void {
    this._state = 'attaching';
    this._requestId = requestId;
    this._end = 0;
    this._alive = false;
    this._exited = false;
    this._atLineStart = true;
    this._resuming = false;
    this._shown = false;
    this._replayEnd = 0;
    this._sizeChanges = [];
    this._line = '';
  }

  /**
   * Attach again, keeping what is shown: the carrier reconnected (or fell
   * back). The replay's bytes up to `end` are dropped, the rest shown. A
   * stream that never got its `attached` just begins again. `notice`, if
   * any, is written as a line of its own where the view goes on.
   */
  resume(requestId: RequestId, notice = ''): void {
    if (!this._shown) {
      this.begin(requestId);
      return;
    }
    this._state = 'attaching';
    this._requestId = requestId;
    this._resuming = true;
    this._sizeChanges = []; // what a resume replays is shown already, at the size it has
    this._resumeNotice = notice;
  }

  /** Where the next accepted `data` event must start (UTF-8 bytes). */
  get end(): number {
    return this._end;
  }

  /** Not attached (yet, or again after a lost message): what is typed now waits for `attached`. */
  get attaching(): boolean {
    return this._state !== 'attached';
  }

  /** The program's output is stopped by XOFF (Ctrl+S): the view says so until an XON (Ctrl+Q). */
  get paused(): boolean {
    return this._paused && this._state === 'attached' && this._alive;
  }

  /**
   * The replay has not all come yet (`attached.end` not reached): the view
   * keeps the PTY's size until it has, so all of it is parsed at the size it
   * was written at, however slowly it arrives.
   */
  get replaying(): boolean {
    return this._state === 'attached' && this._end < this._replayEnd;
  }

  /** Attached to a running process: keystrokes and resizes make sense. */
  get live(): boolean {
    return this._state === 'attached' && this._alive;
  }

  /** The view has said how the session ended (its `exited`): nothing more is to be said of it. */
  get ended(): boolean {
    return this._exited;
  }

  /** A pipes session (`attached.tty` false): there is no terminal to type into. */
  get readOnly(): boolean {
    return this._readOnly;
  }

  handle(msg: KernelMessage): StreamAction | null {
    switch (msg.type) {
      case 'attached':
        return this._onAttached(msg);
      case 'data':
        return this._onData(msg.request_id, msg.offset, msg.end, msg.skipped, msg.data);
      case 'exited':
        return this._onExited(msg.exit_code, msg.closed === true, msg.reason);
      case 'flow':
        // Nothing to write: `paused` changed (the terminal shows it beside the output, not in it).
        this._paused = msg.paused === true;
        return null;
      case 'error':
        return this._onError(msg.request_id, msg.error, msg.message);
      default:
        return null;
    }
  }

  private _onAttached(msg: AttachedMessage): StreamAction | null {
    const { offset, alive, rows, cols } = msg;
    // Another view's answer, or a repeat of ours.
    if (this._state !== 'attaching' || msg.request_id !== this._requestId) {
      return null;
    }
    this._state = 'attached';
    this._alive = alive;
    this._readOnly = msg.tty === false;
    this._replayEnd = typeof msg.end === 'number' ? msg.end : offset;
    this._paused = msg.paused === true;
    if (this._resuming) {
      this._resuming = false;
      // What the kernel dropped while the view was away is a hole too.
      const lost = offset - this._end;
      this._end = Math.max(this._end, offset);
      // Under the notice, the line it cut (a shell's prompt) again, where the program's cursor is.
      const line = this._line;
      let said = '';
      if (this._resumeNotice) {
        said = this._notice(this._resumeNotice);
        const again = lost > 0 ? '' : redrawable(line);
        if (again) {
          said += again;
          this._line = again;
          this._atLineStart = false;
        }
      }
      return { kind: 'resumed', text: said + (lost > 0 ? this._notice(skipNotice(lost)) : ''), alive };
    }
    this._shown = true;
    this._end = offset;
    // Where the replay changes size: each stretch is parsed at the size it was written at.
    const sizes = Array.isArray(msg.sizes) && msg.sizes.length > 0 ? msg.sizes : [[offset, rows, cols]];
    this._sizeChanges = sizes.slice(1).map(([at, r, c]) => ({ at, rows: r, cols: c }));
    // Older output the kernel no longer keeps is a hole like any other skip.
    const text =
      (this._readOnly ? this._notice(READ_ONLY_NOTICE) : '') + (offset > 0 ? this._notice(skipNotice(offset)) : '');
    return { kind: 'attached', text, alive, rows: sizes[0][1], cols: sizes[0][2] };
  }

  private _onData(
    requestId: RequestId | null,
    offset: number,
    end: number,
    skipped: number,
    data: string | Uint8Array
  ): StreamAction | null {
    // Live output before our `attached` is covered by the replay that follows
    // it; replays answer other views' `attach`.
    if (this._state !== 'attached') {
      return null;
    }
    if (requestId != null && requestId !== this._requestId) {
      return null;
    }
    if (end <= this._end) {
      return null;
    }
    if (offset - skipped > this._end) {
      this._state = 'idle';
      return { kind: 'reattach' };
    }
    // It starts at or before `end`: after a resume, a replay overlaps what
    // is shown; only its new part is written.
    const hidden = Math.max(0, offset - this._end);
    const fresh = this._end > offset ? dropBytes(data, this._end - offset) : data;
    const notice = hidden > 0 ? this._notice(skipNotice(hidden)) : '';
    this._end = end;
    // Replayed (the comm says so by the request id; the direct channel's
    // frames carry none, `attached.end` says where the replay stops).
    const history = requestId != null || end <= this._replayEnd;
    this._keepLine(fresh);
    const resized = history ? this._cutAtSizeChanges(fresh, end) : null;
    if (resized) {
      const [head, pieces] = resized;
      return typeof head === 'string'
        ? { kind: 'write', text: notice + head, history, resized: pieces }
        : { kind: 'write', text: notice, bytes: head, history, resized: pieces };
    }
    if (typeof fresh === 'string') {
      if (fresh.length > 0) {
        this._atLineStart = fresh.endsWith('\n');
      }
      return { kind: 'write', text: notice + fresh, history };
    }
    if (fresh.length > 0) {
      this._atLineStart = fresh[fresh.length - 1] === 0x0a;
    }
    return { kind: 'write', text: notice, bytes: fresh, history };
  }

  private _onExited(exitCode: number | null, closed: boolean, reason?: EndReason): StreamAction | null {
    if (this._state !== 'attached' || this._exited) {
      return null;
    }
    this._exited = true;
    this._alive = false;
    return { kind: 'write', text: this._notice(exitNotice(exitCode, closed, reason)) };
  }

  private _onError(
    requestId: RequestId | null,
    error: string,
    message: string
  ): StreamAction | null {
    if (this._state !== 'attaching' || requestId !== this._requestId) {
      return null;
    }
    this._state = 'idle';
    if (this._resuming && this._exited) {
      // The session ended, the view said so, and the kernel forgot it.
      return null;
    }
    return { kind: 'write', text: this._notice(`[cannot attach: ${error}: ${message}]`) };
  }

  /**
   * History ending at `end` cut where the terminal's size changed within
   * it: the part before the first change, and each later part with its
   * size; null when no change falls inside. Offsets are whole characters
   * (the kernel cuts output there), so each part decodes alone.
   */
  private _cutAtSizeChanges(
    fresh: string | Uint8Array,
    end: number
  ): [string | Uint8Array, ResizedPiece[]] | null {
    const bytes = typeof fresh === 'string' ? utf8.encode(fresh) : fresh;
    const start = end - bytes.length;
    const changes: { at: number; rows: number; cols: number }[] = [];
    while (this._sizeChanges.length > 0 && this._sizeChanges[0].at < end) {
      changes.push(this._sizeChanges.shift()!);
    }
    if (changes.length === 0) {
      return null;
    }
    const as = (part: Uint8Array): string | Uint8Array => (typeof fresh === 'string' ? text.decode(part) : part);
    const pieces = changes.map((change, index) => {
      const to = index + 1 < changes.length ? changes[index + 1].at : end;
      const from = Math.max(change.at, start);
      return { rows: change.rows, cols: change.cols, data: as(bytes.subarray(from - start, to - start)), start: from, end: to };
    });
    return [as(bytes.subarray(0, Math.max(changes[0].at, start) - start)), pieces];
  }

  /** A notice on a line of its own, dimmed so it does not pass for output. */
  private _notice(line: string): string {
    const text = `${this._atLineStart ? '' : '\r\n'}\x1b[2m${line}\x1b[22m\r\n`;
    this._atLineStart = true;
    this._line = '';
    return text;
  }

  /** Keep the output since the last line feed while it is short (null once it is not). */
  private _keepLine(fresh: string | Uint8Array): void {
    let tail: string;
    if (typeof fresh === 'string') {
      const at = fresh.lastIndexOf('\n');
      if (at >= 0) {
        this._line = '';
      }
      tail = fresh.slice(at + 1);
    } else {
      const at = fresh.lastIndexOf(0x0a);
      if (at >= 0) {
        this._line = '';
      }
      if (fresh.length - at - 1 > LINE_MAX) {
        this._line = null;
        return;
      }
      tail = text.decode(fresh.subarray(at + 1));
    }
    if (this._line !== null) {
      this._line = this._line.length + tail.length > LINE_MAX ? null : this._line + tail;
    }
  }

  private _state: State = 'idle';
  private _requestId: RequestId | null = null;
  private _end = 0;
  private _alive = false;
  private _exited = false;
  private _atLineStart = true;
  private _resuming = false;
  private _readOnly = false;
  private _paused = false;
  /** The replay's size changes not yet reached (`attached.sizes` after the first). */
  private _sizeChanges: { at: number; rows: number; cols: number }[] = [];
  /** Where the replay of the current attachment ends (`attached.end`). */
  private _replayEnd = 0;
  private _resumeNotice = '';
  /** The output since the last line feed, or null: too long to keep. */
  private _line: string | null = '';
  /** An `attached` of this attachment's `begin` arrived: there is something to keep. */
  private _shown = false;
}

const utf8 = new TextEncoder();
const text = new TextDecoder();

/** The longest last line a resume's notice draws again (a prompt, not a progress bar). */
const LINE_MAX = 256;

/**
 * What keeps the cursor on its line: colours (SGR), modes (bash turns
 * bracketed paste on before its prompt), titles and marks (OSC), erasing
 * in the line and moving along it (readline redraws its line so after a
 * resize: `\r\x1b[K\r$ `).
 */
const IN_LINE = /\x1b\[[0-9;]*m|\x1b\[\?[0-9;]*[hl]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-2]?K|\x1b\[[0-9]*[CD]/g;

/**
 * `line` if drawing it again from column 0 gives what it showed (it began
 * there): printable text, carriage returns, backspaces and the sequences
 * above; else ''.
 */
function redrawable(line: string | null): string {
  if (!line) {
    return '';
  }
  const bare = line.replace(IN_LINE, '');
  return /^[^\x00-\x07\x09-\x0c\x0e-\x1f\x7f\ufffd]*$/.test(bare) ? line : '';
}

/** `data` without its first `count` UTF-8 bytes. */
function dropBytes(data: string | Uint8Array, count: number): string | Uint8Array {
  if (typeof data !== 'string') {
    return data.subarray(count);
  }
  return text.decode(utf8.encode(data).subarray(count));
}
