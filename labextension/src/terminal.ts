/**
 * One session in xterm.js, on a plain DOM node: the same code runs in the
 * live view (an anywidget module, in any front end) and in JupyterLab's
 * terminal tabs (wrapped in a Lumino widget by tabs.ts). It opens itself
 * once its node is in the page with a size, because xterm measures its
 * font on open.
 */

import { FitAddon } from '@xterm/addon-fit';
import { WebglAddon } from '@xterm/addon-webgl';
import { Terminal, type IBufferCell, type IBufferLine } from '@xterm/xterm';

import type { Carrier } from './carrier';
import { OutputPacer } from './pacer';
import { drawWithWebgl, moveTextareaInFrames } from './renderer';
import { nextRequestId, type KernelMessage } from './protocol';
import { screenHtml, screenText, TEXT_MAX_CHARS, type Colour, type ScreenCell } from './snapshot';
import { SharedSize } from './sizing';
import { SessionStream, type StreamAction } from './stream';

export namespace SessionTerminal {
  export interface IOptions {
    carrier: Carrier;
    /** Shown as `data-session-id`; the carrier is what selects the session. */
    sessionId: number;
    /** Told when the program's output is stopped by XOFF or started again (a header may say so too). */
    pausedChanged?: (paused: boolean) => void;
    /**
     * Where a notice goes while a full-screen program (the alternate
     * screen) has the rows, the view's header ('' takes it away); without
     * it, a note over the rows says it, as the paused note does.
     */
    noticeChanged?: (notice: string) => void;
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
    this._pausedChanged = options.pausedChanged;
    this._pausedNote = document.createElement('div');
    this._pausedNote.className = 'uexec-terminal-paused';
    this._pausedNote.textContent = 'output paused (Ctrl+S) · Ctrl+Q resumes';
    this._pausedNote.hidden = true;
    this.node.appendChild(this._pausedNote);
    this._noticeChanged = options.noticeChanged;
    this._note = document.createElement('div');
    this._note.className = 'uexec-terminal-note';
    this._note.hidden = true;
    this.node.appendChild(this._note);
    this._sizeNote.className = 'uexec-terminal-size';
    this._sizeNote.hidden = true;
    this.node.appendChild(this._sizeNote);
    this._term = new Terminal({ scrollback: 10000, fontSize: 13 });
    // Its rows may be drawn on a canvas (renderer.ts): tests and benchmarks
    // read what it shows from xterm's buffer, as they read JupyterLab's terminal.
    Object.defineProperty(this.node, 'uexecXterm', { value: this._term });
    this._term.loadAddon(this._fit);
    // Keys belong to the terminal (docs/magics.md, "Keys"): no application
    // shortcut fires from inside it, even where the application sees keys
    // before xterm does (Notebook 7 listens in the capture phase). Three are
    // left to the page, as JupyterLab's own terminal leaves two: the save
    // key where the page saves, Ctrl+C over a selection (copy) and Ctrl+V
    // (paste).
    this.node.setAttribute(SUPPRESS_SHORTCUTS, '');
    giveKeysToTerminals();
    this._term.attachCustomKeyEventHandler(event => !leftToThePage(event, this._term, this.node));
    // xterm answers queries (device attributes, colours, modes) through
    // `onData` while it parses them. History's queries were asked by
    // programs long gone (a replayed `vi`): their answers would be typed
    // into the shell. A person's keys, clicks and pastes always go through.
    this._term.onData(data => {
      if (this._answering || duringUserInput()) {
        this._type(data);
      }
    });
    // Output reaches xterm through the pacer, a frame's budget at a time,
    // so a flood leaves the page its frames (pacer.ts).
    this._pacer = new OutputPacer({
      sink: { write: (data, parsed, quiet) => this._toTerminal(data, parsed, quiet === true) },
      written: (end, drained) => this._carrier.written?.(end, drained),
      frame: callback => requestAnimationFrame(callback),
      later: (callback, ms) => window.setTimeout(callback, ms),
      now: () => performance.now(),
      hidden: () => document.hidden || !this._inView
    });
    document.addEventListener('visibilitychange', this._onVisibilityChange);
    // A view out of sight (scrolled away, its notebook in a background tab,
    // a collapsed output) paints nothing, and xterm pauses its renderer: the
    // pacer then asks for no frames either. Each frame it asked for was one
    // a visible view's next echo could just miss: a Sessions tab on the same
    // session waited a whole frame more for 11 of 40 keys in a trace.
    this._inViewObserver = new IntersectionObserver(entries => {
      this._inView = entries[entries.length - 1].isIntersecting;
      this._pacer.visibilityChanged();
    });
    this._inViewObserver.observe(this.node);
    this._stopListening = this._carrier.listen({
      received: msg => this._onMessage(msg),
      closed: reason => this._onClosed(reason),
      restarted: notice => this._resume(notice)
    });
    // Fires once the node is laid out in the page, and on every size change.
    this._resizeObserver = new ResizeObserver(() => this._onResize());
    this._resizeObserver.observe(this.node);
    // Several views may show one session; the one used last (typed or
    // clicked into) gives the PTY its size (sizing.ts, protocol/sizes.py).
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

  /**
   * What the terminal shows now, for a saved notebook (snapshot.ts): its
   * screen as HTML and the main buffer's lines as text; null before it
   * opened (it has shown nothing yet). A read of xterm's buffer: nothing
   * on the page changes.
   */
  snapshot(): { screen: string; text: string } | null {
    if (!this._opened || this._disposed) {
      return null;
    }
    const active = this._term.buffer.active;
    const cell = active.getNullCell();
    const rows: ScreenCell[][] = [];
    for (let y = active.baseY; y < active.baseY + this._term.rows; y++) {
      rows.push(screenCells(active.getLine(y), this._term.cols, cell));
    }
    // The newest lines, as many as the text keeps (a full scrollback read whole took ~15 ms).
    const normal = this._term.buffer.normal;
    const lines: { text: string; wrapped: boolean }[] = [];
    for (let y = normal.length - 1, chars = 0; y >= 0 && chars <= TEXT_MAX_CHARS; y--) {
      const line = normal.getLine(y);
      // Untrimmed where the next line continues it: its trailing spaces are text.
      const text = line?.translateToString(!normal.getLine(y + 1)?.isWrapped) ?? '';
      lines.push({ text, wrapped: line?.isWrapped === true });
      chars += text.length + 1;
    }
    return { screen: screenHtml(rows), text: screenText(lines.reverse()) };
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._resizeObserver.disconnect();
    this._inViewObserver.disconnect();
    this._stopNoticeWatch?.dispose();
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
      moveTextareaInFrames(this._term);
      drawWithWebgl(this._term, () => new WebglAddon(), undefined, renderer => {
        this.node.dataset.renderer = renderer;
      });
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
    if (this._closed || this._stream.readOnly) {
      return; // a pipes session takes no keys (its view said so once)
    }
    if (this._stream.live) {
      if (!this._size.ownSize) {
        this._size.used(); // the kernel gives the PTY this view's size before these keys
        this._drawAtSize();
      }
      this._carrier.send({ type: 'input', data, view: this._viewId });
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
    if (notice && this._term.buffer.active.type === 'alternate') {
      // A full-screen program owns every row: a line written there would
      // overwrite one of them until it redraws. Said beside the rows instead.
      this._sayAside(notice.replace(/^─+ | ─+$/g, ''));
      notice = undefined;
    }
    const requestId = nextRequestId();
    this._stream.resume(requestId, notice);
    this._carrier.send({ type: 'attach', request_id: requestId });
  }

  /** A notice beside the rows (the header, else a note over them) while the alternate screen lasts. */
  private _sayAside(notice: string): void {
    if (this._noticeChanged) {
      this._noticeChanged(notice);
    } else {
      this._note.textContent = notice;
      this._note.hidden = false;
    }
    this._stopNoticeWatch?.dispose();
    this._stopNoticeWatch = this._term.buffer.onBufferChange(buffer => {
      if (buffer.type === 'normal') {
        this._stopNoticeWatch?.dispose();
        this._stopNoticeWatch = undefined;
        this._noticeChanged?.('');
        this._note.hidden = true;
      }
    });
  }

  private _onMessage(msg: KernelMessage): void {
    if (msg.type === 'size' || (msg.type === 'attached' && this._stream.attaching)) {
      this._size.heard({ rows: clamp(msg.rows), cols: clamp(msg.cols) });
      if (msg.type === 'size') {
        this._drawAtSize();
      }
    }
    const action = this._stream.handle(msg);
    if (action) {
      this._apply(action);
    }
    this._showPaused(this._stream.paused && !this._closed);
    if (msg.type === 'data' && this._carrier.written && (!action || action.kind !== 'write')) {
      // Dropped, not written: the kernel need not hold the window for it.
      this._carrier.written(Math.max(msg.end, this._stream.end), this._pacer.drained);
    }
  }

  private _apply(action: StreamAction): void {
    switch (action.kind) {
      case 'write':
        this._write(action.text, action.history === true);
        if (action.bytes) {
          this._writeOutput(action.bytes, action.history === true, action.resized?.[0]?.start);
        }
        for (const piece of action.resized ?? []) {
          // History written after a resize: parsed at that size, which xterm
          // takes in order with the writes (the resize waits for what comes
          // before it), reflowing what it shows as the live view did.
          this._pacer.whenParsed(() => {
            if (!this._disposed) {
              this._term.resize(clamp(piece.cols), clamp(piece.rows));
            }
          });
          if (typeof piece.data === 'string') {
            this._write(piece.data, true);
          } else {
            this._writeOutput(piece.data, true, piece.end);
          }
        }
        if (action.history && this._replayAtPtySize && !this._stream.replaying) {
          this._scheduleFit(); // the replay's last piece: fit once it is parsed
        }
        break;
      case 'resumed':
        this._write(action.text);
        // The PTY may have another size by now: send ours.
        this._sentSize = '';
        this._scheduleFit();
        break;
      case 'attached':
        // A pipes session's program writes `\n` alone (no terminal turns it into `\r\n`):
        // each line still starts at the left.
        this._term.options.convertEol = this._stream.readOnly;
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

  /** Never silent: a terminal whose output is stopped says so, beside its rows, until it starts. */
  private _showPaused(paused: boolean): void {
    if (paused === !this._pausedNote.hidden) {
      return;
    }
    this._pausedNote.hidden = !paused;
    this.node.classList.toggle('uexec-mod-paused', paused);
    this._pausedChanged?.(paused);
  }

  private _onClosed(reason: string): void {
    if (this._closed) {
      return;
    }
    this._closed = true;
    this._showPaused(false);
    if (!this._stream.ended) {
      // Said once: a view that heard how the session ended (the kernel's `exited`) has said it.
      this._write(`\r\n\x1b[2m[${reason}]\x1b[22m\r\n`);
    }
  }

  /**
   * Text (notices, the kernel's text output) in order with the bytes before
   * it; `history`: replayed output, whose queries get no answer.
   */
  private _write(text: string, history = false): void {
    if (!this._disposed) {
      this._pacer.writeText(text, history);
    }
  }

  /**
   * The pacer's writes to xterm. A quiet piece (history) is parsed with
   * answers muted: xterm parses each write whole and in order, so the empty
   * write's callback runs just before the piece is parsed and the piece's
   * own callback just after; live output parsed after it is answered.
   */
  private _toTerminal(data: string | Uint8Array, parsed: () => void, quiet: boolean): void {
    if (!quiet) {
      this._term.write(data, parsed);
      return;
    }
    this._term.write('', () => {
      this._answering = false;
    });
    this._term.write(data, () => {
      this._answering = true;
      parsed();
    });
  }

  /**
   * Output as UTF-8 bytes (the direct channel's; xterm decodes them, a
   * character cut between two writes included). The pacer tells the
   * carrier what xterm has parsed: its flow control acknowledges what is
   * on screen, so a flood never queues up in the page.
   */
  private _writeOutput(bytes: Uint8Array, history = false, end = this._stream.end): void {
    if (!this._disposed) {
      this._pacer.writeBytes(bytes, end, history);
    }
  }

  private readonly _onVisibilityChange = (): void => {
    this._pacer.visibilityChanged();
  };

  private _reclaimSize(): void {
    this._sentSize = '';
    this._claim = true;
    this._scheduleFit();
  }

  /** xterm at the size the program draws for (the PTY's, which another view may have given it), and the note. */
  private _drawAtSize(): void {
    const size = this._size.drawn;
    if (!this._opened || this._disposed || !size || this._replayAtPtySize) {
      return;
    }
    if (size.rows !== this._term.rows || size.cols !== this._term.cols) {
      this._term.resize(size.cols, size.rows);
    }
    const note = this._size.note;
    if (this._sizeNote.textContent !== note) {
      this._sizeNote.textContent = note;
    }
    this._sizeNote.hidden = note === '';
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
      if (this._stream.replaying) {
        return; // more of the replay is on its way: its last piece schedules the fit
      }
      // xterm parses writes later than `resize` applies: fit once the
      // replay queued so far (in the pacer, then in xterm) has been parsed
      // at the PTY's size.
      this._replayAtPtySize = false;
      this._pacer.whenParsed(() => this._fitAndResize());
      return;
    }
    const fits = this._fit.proposeDimensions();
    if (!fits || !Number.isFinite(fits.rows) || !Number.isFinite(fits.cols)) {
      return;
    }
    const rows = clamp(fits.rows);
    const cols = clamp(fits.cols);
    const size = `${rows}x${cols}`;
    const claim = this._claim;
    this._claim = false;
    if (claim) {
      this._size.used();
    }
    this._size.fits({ rows, cols });
    this._drawAtSize();
    if (this._stream.live && !this._closed && size !== this._sentSize) {
      this._sentSize = size;
      this._carrier.send({ type: 'resize', rows, cols, view: this._viewId, ...(claim ? { claim: true } : {}) });
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
  private readonly _inViewObserver: IntersectionObserver;
  /** The view intersects the viewport (the observer's last word; until then, assumed so). */
  private _inView = true;
  private _replayAtPtySize = false;
  private readonly _pausedNote: HTMLDivElement;
  private readonly _sizeNote = document.createElement('div');
  private readonly _size = new SharedSize();
  /** Names this view to the kernel, which keeps each view's size (a comm or widget carries several). */
  private readonly _viewId = `view-${nextRequestId()}`;
  /** The next resize claims the PTY (focus moved in). */
  private _claim = false;
  private readonly _pausedChanged?: (paused: boolean) => void;
  private readonly _note: HTMLDivElement;
  private readonly _noticeChanged?: (notice: string) => void;
  private _stopNoticeWatch?: { dispose(): void };
  /** Off while xterm parses history: its answers to queries are dropped. */
  private _answering = true;
}

/**
 * A person's input is being dispatched now: a key, a click (mouse
 * reporting), a paste, a focus change. xterm sends those through `onData`
 * from within the event; it parses output in its own tasks and frames,
 * never inside such an event, so this tells a person's data from answers.
 */
function duringUserInput(): boolean {
  const event = window.event;
  return event instanceof UIEvent || (typeof ClipboardEvent !== 'undefined' && event instanceof ClipboardEvent);
}

/**
 * Lumino's command registry (JupyterLab's, Notebook 7's) runs no shortcut for
 * a keydown from inside an element with this attribute.
 */
const SUPPRESS_SHORTCUTS = 'data-lm-suppress-shortcuts';

let givingKeys = false;

/**
 * Before any other listener sees a keydown (the window's capture phase),
 * mark the terminal it comes from: the application's shortcuts skip it,
 * except the save key where the page has a save (`inJupyterApp`). Once per
 * page, for every terminal in it.
 */
function giveKeysToTerminals(): void {
  if (givingKeys) {
    return;
  }
  givingKeys = true;
  window.addEventListener(
    'keydown',
    event => {
      const node = event.target instanceof Element ? event.target.closest('.uexec-terminal') : null;
      if (node instanceof HTMLElement) {
        node.toggleAttribute(SUPPRESS_SHORTCUTS, !(isSaveKey(event) && inJupyterApp(node)));
      }
    },
    true
  );
}

/**
 * A key xterm leaves to the page: the save key where the page saves, and,
 * as in JupyterLab's terminal (@jupyterlab/terminal, widget.ts), Ctrl+C
 * over a selection (the browser copies it) and Ctrl+V (the browser pastes,
 * and xterm sends the pasted text on). On a Mac, Cmd+C and Cmd+V are
 * the browser's anyway.
 */
function leftToThePage(event: KeyboardEvent, term: Terminal, node: HTMLElement): boolean {
  if (isSaveKey(event)) {
    return inJupyterApp(node);
  }
  const ctrlOnly = event.ctrlKey && !event.altKey && !event.shiftKey && !event.metaKey;
  return ctrlOnly && ((event.code === 'KeyC' && term.hasSelection()) || event.code === 'KeyV');
}

/** Ctrl+S, or Cmd+S on a Mac: the save shortcut of JupyterLab and Notebook 7. */
function isSaveKey(event: KeyboardEvent): boolean {
  return (event.ctrlKey || event.metaKey) && !event.altKey && !event.shiftKey && event.code === 'KeyS';
}

/**
 * The view is in a JupyterLab or Notebook 7 main-area widget (a notebook, a
 * console, our terminal tab), where Ctrl+S is the application's save. Not by
 * the shell's class: Voila's page has a `.jp-LabShell` too, and no save.
 */
function inJupyterApp(node: HTMLElement): boolean {
  return node.closest('.jp-MainAreaWidget') !== null;
}

/** A row of xterm's buffer as snapshot.ts's cells (one reused `cell` reads them). */
function screenCells(line: IBufferLine | undefined, cols: number, cell: IBufferCell): ScreenCell[] {
  const cells: ScreenCell[] = [];
  for (let x = 0; line && x < cols && line.getCell(x, cell); x++) {
    cells.push({
      chars: cell.getChars(),
      width: cell.getWidth(),
      fg: colourOf(cell.isFgDefault(), cell.isFgRGB(), cell.getFgColor()),
      bg: colourOf(cell.isBgDefault(), cell.isBgRGB(), cell.getBgColor()),
      bold: cell.isBold() !== 0,
      italic: cell.isItalic() !== 0,
      underline: cell.isUnderline() !== 0,
      strikethrough: cell.isStrikethrough() !== 0,
      inverse: cell.isInverse() !== 0,
      invisible: cell.isInvisible() !== 0
    });
  }
  return cells;
}

function colourOf(isDefault: boolean, isRgb: boolean, value: number): Colour {
  if (isDefault) {
    return 'default';
  }
  return isRgb ? '#' + value.toString(16).padStart(6, '0') : value;
}

function clamp(n: number): number {
  return Math.min(PTY_SIZE_MAX, Math.max(1, n));
}

/** JupyterLab's code font where there is one, so the terminal matches the cells. */
function codeFont(node: HTMLElement): string {
  return getComputedStyle(node).getPropertyValue('--jp-code-font-family').trim() || 'monospace';
}
