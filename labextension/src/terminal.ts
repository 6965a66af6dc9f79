/**
 * One session in xterm.js, on a plain DOM node: the same code runs in the
 * live view (an anywidget module, in any front end) and in JupyterLab's
 * terminal tabs (wrapped in a Lumino widget by tabs.ts). It opens itself
 * once its node is in the page with a size, because xterm measures its
 * font on open.
 */

import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';

import type { Carrier } from './carrier';
import { OutputPacer } from './pacer';
import { nextRequestId, type KernelMessage } from './protocol';
import { SessionStream, type StreamAction } from './stream';

export namespace SessionTerminal {
  export interface IOptions {
    carrier: Carrier;
    /** Shown as `data-session-id`; the carrier is what selects the session. */
    sessionId: number;
  }
}

/** Resizes arrive in bursts while a panel is dragged; fit once it settles. */
const FIT_DELAY_MS = 100;

/**
 * A lost message usually means the kernel's iopub queue overflowed under a
 * flood; waiting a little before replaying keeps us from adding to it.
 */
const REATTACH_DELAY_MS = 300;

const PTY_SIZE_MAX = 1000;

/** Keys kept while the view attaches: a paste's worth, not a flood. */
const TYPED_AHEAD_MAX = 64 * 1024;

export class SessionTerminal {
  readonly node: HTMLDivElement;

  constructor(options: SessionTerminal.IOptions) {
    this.node = document.createElement('div');
    this.node.className = 'uexec-terminal';
    this.node.dataset.sessionId = String(options.sessionId);
    this._carrier = options.carrier;
    this._term = new Terminal({ scrollback: 10000, fontSize: 13 });
    this._term.loadAddon(this._fit);
    this._term.onData(data => this._type(data));
    // Output reaches xterm through the pacer, a frame's budget at a time,
    // so a flood leaves the page its frames (pacer.ts).
    this._pacer = new OutputPacer({
      sink: { write: (data, parsed) => this._term.write(data, parsed) },
      written: (end, drained) => this._carrier.written?.(end, drained),
      frame: callback => requestAnimationFrame(callback),
      later: (callback, ms) => window.setTimeout(callback, ms),
      now: () => performance.now(),
      hidden: () => document.hidden
    });
    document.addEventListener('visibilitychange', this._onVisibilityChange);
    this._stopListening = this._carrier.listen({
      received: msg => this._onMessage(msg),
      closed: reason => this._onClosed(reason),
      restarted: notice => this._resume(notice)
    });
    // Fires once the node is laid out in the page, and on every size change.
    this._resizeObserver = new ResizeObserver(() => this._onResize());
    this._resizeObserver.observe(this.node);
    // Several views may show one session; the one being typed into gives the
    // PTY its size, even if another view resized it since.
    this.node.addEventListener('focusin', () => this._reclaimSize());
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  focus(): void {
    this._term.focus();
  }

  /** Shown again after being hidden: another view may have resized the PTY. */
  refit(): void {
    this._scheduleFit();
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._resizeObserver.disconnect();
    window.clearTimeout(this._fitTimer);
    window.clearTimeout(this._reattachTimer);
    this._stopListening();
    document.removeEventListener('visibilitychange', this._onVisibilityChange);
    this._pacer.dispose();
    this._term.dispose();
  }

  private _onResize(): void {
    if (!this._opened) {
      if (!this.node.isConnected || this.node.clientWidth === 0 || this.node.clientHeight === 0) {
        return;
      }
      this._opened = true;
      this._term.options.fontFamily = codeFont(this.node);
      this._term.open(this.node);
      this._attach();
    }
    this._scheduleFit();
  }

  /**
   * Keys go to the session while it is attached and alive. Typed while the
   * view attaches (again, after a lost message: the terminal is reset and
   * replayed), they wait for `attached` instead of vanishing.
   */
  private _type(data: string): void {
    if (this._closed) {
      return;
    }
    if (this._stream.live) {
      this._carrier.send({ type: 'input', data });
    } else if (this._stream.attaching && this._typedAhead.length < TYPED_AHEAD_MAX) {
      this._typedAhead += data;
    }
  }

  private _attach(): void {
    const requestId = nextRequestId();
    this._stream.begin(requestId);
    this._carrier.send({ type: 'attach', request_id: requestId });
  }

  /** The carrier has a new connection: attach on it, keeping what is shown (and saying `notice`). */
  private _resume(notice?: string): void {
    // Not attached yet (the first attach is on its way or to come), or a
    // fresh attach is already scheduled: nothing to keep.
    if (!this._opened || this._disposed || this._reattachPending) {
      return;
    }
    const requestId = nextRequestId();
    this._stream.resume(requestId, notice);
    this._carrier.send({ type: 'attach', request_id: requestId });
  }

  private _onMessage(msg: KernelMessage): void {
    const action = this._stream.handle(msg);
    if (action) {
      this._apply(action);
    }
    if (msg.type === 'data' && this._carrier.written && (!action || action.kind !== 'write')) {
      // Dropped, not written: the kernel need not hold the window for it.
      this._carrier.written(Math.max(msg.end, this._stream.end), this._pacer.drained);
    }
  }

  private _apply(action: StreamAction): void {
    switch (action.kind) {
      case 'write':
        this._write(action.text);
        if (action.bytes) {
          this._writeOutput(action.bytes);
        }
        break;
      case 'resumed':
        this._write(action.text);
        // The PTY may have another size by now: send ours.
        this._sentSize = '';
        this._scheduleFit();
        break;
      case 'attached':
        // The replay was written by a program in a terminal of the PTY's
        // size (a full-screen one addresses rows and columns): parse it at
        // that size, then resize to the view as a terminal window resizes.
        // Parsed at the view's width, it would be wrapped anew.
        this._term.resize(clamp(action.cols), clamp(action.rows));
        this._replayAtPtySize = true;
        this._write(action.text);
        // The PTY may have the size another view gave it: send ours.
        this._sentSize = '';
        this._scheduleFit();
        if (this._typedAhead) {
          const typed = this._typedAhead;
          this._typedAhead = '';
          this._type(typed);
        }
        break;
      case 'reattach':
        // What waits for a frame belongs to the attachment given up. The
        // reset (RIS) goes through xterm's write queue: `Terminal.reset()`
        // would run before output xterm has queued but not yet parsed.
        this._pacer.reset();
        this._write('\x1bc');
        window.clearTimeout(this._reattachTimer);
        this._reattachPending = true;
        this._reattachTimer = window.setTimeout(() => {
          this._reattachPending = false;
          this._attach();
        }, REATTACH_DELAY_MS);
        break;
    }
  }

  private _onClosed(reason: string): void {
    if (this._closed) {
      return;
    }
    this._closed = true;
    this._write(`\r\n\x1b[2m[${reason}]\x1b[22m\r\n`);
  }

  /** Text (notices, the kernel's text output) in order with the bytes before it. */
  private _write(text: string): void {
    if (!this._disposed) {
      this._pacer.writeText(text);
    }
  }

  /**
   * Output as UTF-8 bytes (the direct channel's; xterm decodes them, a
   * character cut between two writes included). The pacer tells the
   * carrier what xterm has parsed: its flow control acknowledges what is
   * on screen, so a flood never queues up in the page.
   */
  private _writeOutput(bytes: Uint8Array): void {
    if (!this._disposed) {
      this._pacer.writeBytes(bytes, this._stream.end);
    }
  }

  private readonly _onVisibilityChange = (): void => {
    this._pacer.visibilityChanged();
  };

  private _reclaimSize(): void {
    this._sentSize = '';
    this._scheduleFit();
  }

  private _scheduleFit(): void {
    window.clearTimeout(this._fitTimer);
    this._fitTimer = window.setTimeout(() => this._fitAndResize(), FIT_DELAY_MS);
  }

  private _fitAndResize(): void {
    // Hidden (a background tab, a collapsed output) measures as zero, and
    // fitting that would shrink the PTY to 1x2: keep the size until it shows.
    const { clientWidth, clientHeight } = this.node;
    if (!this._opened || this._disposed || clientWidth === 0 || clientHeight === 0) {
      this._hidden = true;
      return;
    }
    if (this._hidden) {
      // Shown again: another view may have resized the PTY meanwhile.
      this._hidden = false;
      this._sentSize = '';
    }
    if (this._replayAtPtySize) {
      // xterm parses writes later than `resize` applies: fit once the
      // replay queued so far (in the pacer, then in xterm) has been parsed
      // at the PTY's size.
      this._replayAtPtySize = false;
      this._pacer.whenParsed(() => this._fitAndResize());
      return;
    }
    this._fit.fit();
    const rows = clamp(this._term.rows);
    const cols = clamp(this._term.cols);
    const size = `${rows}x${cols}`;
    if (this._stream.live && !this._closed && size !== this._sentSize) {
      this._sentSize = size;
      this._carrier.send({ type: 'resize', rows, cols });
    }
  }

  private readonly _carrier: Carrier;
  private readonly _term: Terminal;
  private readonly _fit = new FitAddon();
  private readonly _stream = new SessionStream();
  private readonly _pacer: OutputPacer;
  private readonly _resizeObserver: ResizeObserver;
  private readonly _stopListening: () => void;
  private _opened = false;
  private _closed = false;
  private _disposed = false;
  private _fitTimer = 0;
  private _reattachTimer = 0;
  private _reattachPending = false;
  private _sentSize = '';
  private _typedAhead = '';
  private _hidden = false;
  private _replayAtPtySize = false;
}

function clamp(n: number): number {
  return Math.min(PTY_SIZE_MAX, Math.max(1, n));
}

/** JupyterLab's code font where there is one, so the terminal matches the cells. */
function codeFont(node: HTMLElement): string {
  return getComputedStyle(node).getPropertyValue('--jp-code-font-family').trim() || 'monospace';
}
