/**
 * A Lumino widget showing one session in xterm.js, attached through a
 * carrier: the kernel comm (Sessions panel) or a widget's custom messages.
 */

import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import type { Message } from '@lumino/messaging';
import type { ISignal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import {
  nextRequestId,
  type FrontEndMessage,
  type KernelMessage
} from './protocol';
import { SessionStream, type StreamAction } from './stream';

/**
 * How a view talks to one session. The carrier fills in `session_id` where
 * it needs one and delivers only that session's messages (plus answers
 * without a session, such as `error`).
 */
export interface Carrier {
  send(msg: FrontEndMessage): void;
  readonly received: ISignal<Carrier, KernelMessage>;
  /** Nothing more will arrive; the argument says why, for the user. */
  readonly closed: ISignal<Carrier, string>;
}

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

/**
 * Output is written once per animation frame; a hidden tab gets no frames,
 * so past this much pending text it is written at once.
 */
const MAX_PENDING_CHARS = 1 << 20;

const PTY_SIZE_MAX = 1000;

export class SessionTerminal extends Widget {
  constructor(options: SessionTerminal.IOptions) {
    super();
    this.addClass('uexec-terminal');
    this.node.dataset.sessionId = String(options.sessionId);
    this._carrier = options.carrier;
    this._carrier.received.connect(this._onMessage, this);
    this._carrier.closed.connect(this._onClosed, this);

    this._term = new Terminal({ scrollback: 10000, fontSize: 13 });
    this._term.loadAddon(this._fit);
    this._term.onData(data => {
      if (this._stream.live && !this._closed) {
        this._carrier.send({ type: 'input', data });
      }
    });
    this._resizeObserver = new ResizeObserver(() => this._scheduleFit());
    // Several views may show one session; the one being typed into gives the
    // PTY its size, even if another view resized it since.
    this.node.addEventListener('focusin', () => this._reclaimSize());
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._resizeObserver.disconnect();
    window.clearTimeout(this._fitTimer);
    window.clearTimeout(this._reattachTimer);
    cancelAnimationFrame(this._frame);
    this._carrier.received.disconnect(this._onMessage, this);
    this._carrier.closed.disconnect(this._onClosed, this);
    this._term.dispose();
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    // xterm measures its font on open, which needs the node in the document;
    // later re-attachments (a tab moved in the dock) keep the same session.
    if (!this._opened) {
      this._opened = true;
      this._term.options.fontFamily = codeFont(this.node);
      this._term.open(this.node);
      this._resizeObserver.observe(this.node);
      this._attach();
    }
    this._scheduleFit();
  }

  protected onActivateRequest(msg: Message): void {
    super.onActivateRequest(msg);
    this._term.focus();
  }

  private _attach(): void {
    const requestId = nextRequestId();
    this._stream.begin(requestId);
    this._carrier.send({ type: 'attach', request_id: requestId });
  }

  private _onMessage(_: Carrier, msg: KernelMessage): void {
    const action = this._stream.handle(msg);
    if (action) {
      this._apply(action);
    }
  }

  private _apply(action: StreamAction): void {
    switch (action.kind) {
      case 'write':
        this._write(action.text);
        break;
      case 'attached':
        this._write(action.text);
        // The PTY may have the size another view gave it: send ours.
        this._sentSize = '';
        this._scheduleFit();
        break;
      case 'reattach':
        // Full reset (RIS) through the write queue: `Terminal.reset()` would
        // run before output xterm has queued but not yet parsed.
        this._pending = [];
        this._pendingChars = 0;
        this._write('\x1bc');
        window.clearTimeout(this._reattachTimer);
        this._reattachTimer = window.setTimeout(() => this._attach(), REATTACH_DELAY_MS);
        break;
    }
  }

  private _onClosed(_: Carrier, reason: string): void {
    if (this._closed) {
      return;
    }
    this._closed = true;
    this._write(`\r\n\x1b[2m[${reason}]\x1b[22m\r\n`);
  }

  private _write(text: string): void {
    if (!text) {
      return;
    }
    if (!this._frame) {
      // Leading edge: after a quiet frame, write at once (a keystroke's echo
      // must not wait a frame); the rest of this frame's output is batched.
      this._term.write(text);
      this._frame = requestAnimationFrame(() => this._flush());
      return;
    }
    this._pending.push(text);
    this._pendingChars += text.length;
    if (this._pendingChars > MAX_PENDING_CHARS) {
      this._flush();
    } else if (!this._frame) {
      this._frame = requestAnimationFrame(() => this._flush());
    }
  }

  private _flush(): void {
    cancelAnimationFrame(this._frame);
    this._frame = 0;
    if (this._pending.length) {
      this._term.write(this._pending.join(''));
      this._pending = [];
      this._pendingChars = 0;
    }
  }

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
    if (!this._opened || clientWidth === 0 || clientHeight === 0) {
      this._hidden = true;
      return;
    }
    if (this._hidden) {
      // Shown again: another view may have resized the PTY meanwhile.
      this._hidden = false;
      this._sentSize = '';
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
  private readonly _resizeObserver: ResizeObserver;
  private _opened = false;
  private _closed = false;
  private _pending: string[] = [];
  private _pendingChars = 0;
  private _frame = 0;
  private _fitTimer = 0;
  private _reattachTimer = 0;
  private _sentSize = '';
  private _hidden = false;
}

function clamp(n: number): number {
  return Math.min(PTY_SIZE_MAX, Math.max(1, n));
}

/** JupyterLab's code font, so the terminal matches the notebook's cells. */
function codeFont(node: HTMLElement): string {
  return getComputedStyle(node).getPropertyValue('--jp-code-font-family').trim() || 'monospace';
}
