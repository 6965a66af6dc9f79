/**
 * The live view's direct channel (issue 18, /work/tools/DIRECT_SPEC.md,
 * docs/protocol.md "Direct channel"): one websocket per view, relayed by our
 * server extension to a Unix socket of the kernel, so a keystroke is no
 * kernel message (no `busy`/`idle` around it) and output comes as bytes.
 * `DirectFirstCarrier` uses it while it works and the widget's or the comm's
 * carrier otherwise, silently. No DOM and no Lumino, so the live view's
 * bundle stays small and this is tested under plain node.
 */

import { CarrierBase, type Carrier } from './carrier';
import { DISCONNECTED, DISCONNECTED_NOTICE, ENDED_WITH_THE_KERNEL } from './format';
import {
  asKernelMessage,
  PROTOCOL_VERSION,
  type DataMessage,
  type FrontEndMessage,
  type KernelMessage
} from './protocol';

/**
 * An open attempt that has not heard `hello` by then uses the fallback. Only
 * a socket that opens and then says nothing waits this long (a server
 * without our extension refuses the upgrade at once); a loaded machine's
 * kernel took over 2 s to say it, and its views fell back for good.
 */
export const HELLO_TIMEOUT_MS = 10_000;

/** Waits before each reconnect after a drop; then the view falls back. */
export const RECONNECT_DELAYS_MS: readonly number[] = [250, 500, 1000];

/**
 * How long a kept session's channel keeps trying (the last delay above
 * between tries): it comes back with the next kernel, and a restart takes
 * seconds, not the 1.75 s above.
 */
export const KEPT_RECONNECT_MS = 30_000;

/**
 * The wait before reconnect `attempt` (0 first) after `waited` ms of
 * waiting since the drop, or null: give up.
 */
export function reconnectDelay(attempt: number, kept: boolean, waited: number): number | null {
  if (!kept) {
    return attempt < RECONNECT_DELAYS_MS.length ? RECONNECT_DELAYS_MS[attempt] : null;
  }
  if (waited >= KEPT_RECONNECT_MS) {
    return null;
  }
  return RECONNECT_DELAYS_MS[Math.min(attempt, RECONNECT_DELAYS_MS.length - 1)];
}

/** The relay's close code when the kernel closed its socket: it shut down or restarted (server/relay.py). */
export const CLOSE_KERNEL_GONE = 1001;
/** The relay's close code for a kernel that runs elsewhere (a gateway's): no direct channel, ever, here. */
export const CLOSE_REMOTE_KERNEL = 4421;
/** What a carrier closes with then: its users go to the kernel's messages without asking again. */
export const REMOTE_KERNEL = 'the kernel runs elsewhere: no direct channel';

/** The line a kept session's view shows where it goes on after a kernel restart. */
export const KEPT_NOTICE = '── kernel restarted; this session was kept ──';

/** Written but unacknowledged bytes that make the view acknowledge at once. */
export const ACK_BYTES = 64 * 1024;

/**
 * How long a drained view waits before it acknowledges a tail under
 * `ACK_BYTES`: typing sends one ack per pause, not one per echo through
 * the page, the server and the kernel while the next echo is on its way.
 * The kernel's window is four times `ACK_BYTES`, so a late tail never
 * stalls it.
 */
export const ACK_IDLE_MS = 100;

/** Kind bytes of binary websocket messages: output (`B`) and keystrokes (`I`). */
export const KIND_OUTPUT = 0x42;
export const KIND_INPUT = 0x49;

/** kind + session_id u32 + offset u64 + skipped u64. */
const OUTPUT_HEADER = 1 + 4 + 8 + 8;
const INPUT_HEADER = 1 + 4;
const U32 = 2 ** 32;

/** What the page's config says about where the server is (`PageConfig`'s options). */
export interface ServerLocation {
  /** The server's base URL (`baseUrl`), absolute or relative to `pageUrl`. */
  baseUrl?: string;
  /** The websocket base (`wsUrl`) when the page names one. */
  wsUrl?: string;
  token?: string;
  /** The page's own URL: what relative URLs resolve against. */
  pageUrl: string;
}

/** `{ws base}uexec/kernels/{id}/channel`, with the token when the page has one. */
export function directUrl(kernelId: string, where: ServerLocation): string {
  const base = new URL(where.wsUrl || where.baseUrl || '/', where.pageUrl);
  base.protocol = base.protocol === 'https:' || base.protocol === 'wss:' ? 'wss:' : 'ws:';
  if (!base.pathname.endsWith('/')) {
    base.pathname += '/';
  }
  base.search = '';
  base.hash = '';
  const url = new URL(`uexec/kernels/${encodeURIComponent(kernelId)}/channel`, base);
  if (where.token) {
    url.searchParams.set('token', where.token);
  }
  return url.href;
}

const encoder = new TextEncoder();

/** An `I` message: the keys for one session, as UTF-8. */
export function encodeInput(sessionId: number, keys: string): Uint8Array {
  // UTF-8 takes at most 3 bytes per UTF-16 unit.
  const frame = new Uint8Array(INPUT_HEADER + keys.length * 3);
  frame[0] = KIND_INPUT;
  new DataView(frame.buffer).setUint32(1, sessionId);
  const { written } = encoder.encodeInto(keys, frame.subarray(INPUT_HEADER));
  return frame.subarray(0, INPUT_HEADER + written);
}

/**
 * A `B` message as the `data` event it stands for, its text left as UTF-8
 * bytes (xterm.js takes them as they are); null for anything else.
 */
export function decodeOutput(message: ArrayBuffer): DataMessage | null {
  if (message.byteLength < OUTPUT_HEADER) {
    return null;
  }
  const view = new DataView(message);
  if (view.getUint8(0) !== KIND_OUTPUT) {
    return null;
  }
  const offset = view.getUint32(5) * U32 + view.getUint32(9);
  const skipped = view.getUint32(13) * U32 + view.getUint32(17);
  const data = new Uint8Array(message, OUTPUT_HEADER);
  return {
    type: 'data',
    // Each view has a connection of its own: every replay on it is its own.
    request_id: null,
    session_id: view.getUint32(1),
    offset,
    end: offset + data.byteLength,
    skipped,
    data
  };
}

/** The part of the browser's `WebSocket` this uses: a test hands in a fake. */
export interface SocketLike {
  binaryType: string;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason?: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  send(data: string | ArrayBufferView | ArrayBuffer): void;
  close(code?: number, reason?: string): void;
}

export type SocketFactory = (url: string) => SocketLike;

const browserSocket: SocketFactory = url => new WebSocket(url) as unknown as SocketLike;

export namespace DirectCarrier {
  export interface IOptions {
    url: string;
    sessionId: number;
    /** Defaults to the browser's WebSocket. */
    socket?: SocketFactory;
  }
}

type DirectState =
  /** The first attempt, before `hello`. */
  | 'connecting'
  | 'open'
  /** An established channel dropped: trying again. */
  | 'reconnecting'
  | 'closed';

/**
 * One session over the direct channel. It delivers each connection's
 * `hello` (how its user learns the channel is up, again after a
 * reconnect), and closes when the first attempt fails or reconnecting
 * after a drop does: its user then falls back. A kept session's channel
 * (its `attached` says so) reconnects for up to `KEPT_RECONNECT_MS`, so
 * it reaches the kernel that takes the session back after a restart.
 */
export class DirectCarrier extends CarrierBase {
  constructor(options: DirectCarrier.IOptions) {
    super();
    this._url = options.url;
    this._sessionId = options.sessionId;
    this._socketFactory = options.socket ?? browserSocket;
    this._connect();
  }

  /** `hello` has arrived on the current connection: sends go out. */
  get isOpen(): boolean {
    return this._state === 'open';
  }

  /**
   * The connection that just said `hello` follows one the kernel closed
   * (close code 1001: it shut down or restarted), not a network drop: a
   * kept session is on the next kernel now.
   */
  get afterKernelWent(): boolean {
    return this._afterKernelWent;
  }

  /**
   * The kernel closed the channel (it shut down or restarted) and the
   * session is not kept: it ended with the kernel, and this closed saying so.
   */
  get endedWithKernel(): boolean {
    return this._endedWithKernel;
  }

  /** Reconnecting failed (or the first attempt did): nothing more comes. */
  get isClosed(): boolean {
    return this._state === 'closed';
  }

  send(msg: FrontEndMessage): void {
    if (this._state !== 'open' || !this._socket) {
      return;
    }
    if (msg.type === 'input' && msg.request_id === undefined) {
      this._socket.send(encodeInput(this._sessionId, msg.data));
    } else {
      this._socket.send(JSON.stringify({ ...msg, session_id: this._sessionId }));
    }
  }

  /**
   * The view has written the session's output up to `end` into its
   * terminal; `drained`: nothing more waits there. Acknowledges per the
   * flow control rule, so the kernel sends on.
   */
  written(end: number, drained: boolean): void {
    if (this._state !== 'open' || !this._socket || end <= this._acked) {
      return;
    }
    this._written = end;
    if (end - this._acked >= ACK_BYTES) {
      this._ack();
    } else if (drained && this._ackTimer === undefined) {
      this._ackTimer = setTimeout(() => this._ack(), ACK_IDLE_MS);
    }
  }

  /** Acknowledges everything written, if the connection that sent it is still open. */
  private _ack(): void {
    clearTimeout(this._ackTimer);
    this._ackTimer = undefined;
    if (this._state === 'open' && this._socket && this._written > this._acked) {
      this._acked = this._written;
      this._socket.send(JSON.stringify({ type: 'ack', session_id: this._sessionId, end: this._written }));
    }
  }

  dispose(): void {
    this._stop('disposed');
  }

  private _connect(): void {
    let socket: SocketLike;
    try {
      socket = this._socketFactory(this._url);
    } catch {
      // A URL the browser will not open (a page config it cannot use).
      this._attemptFailed();
      return;
    }
    this._socket = socket;
    this._acked = this._written = 0;
    socket.binaryType = 'arraybuffer';
    socket.onmessage = event => this._onMessage(event.data);
    socket.onclose = event => this._onDrop(socket, event.code);
    socket.onerror = () => undefined; // a close follows
    this._helloTimer = setTimeout(() => this._onDrop(socket), HELLO_TIMEOUT_MS);
  }

  private _onMessage(payload: unknown): void {
    if (payload instanceof ArrayBuffer) {
      const msg = decodeOutput(payload);
      if (msg && this._state === 'open') {
        this.deliver(msg);
      }
      return;
    }
    if (typeof payload !== 'string') {
      return;
    }
    let msg: KernelMessage | null;
    try {
      msg = asKernelMessage(JSON.parse(payload));
    } catch {
      return;
    }
    if (!msg) {
      return;
    }
    if (msg.type === 'hello') {
      clearTimeout(this._helloTimer);
      if (msg.protocol_version !== PROTOCOL_VERSION) {
        this._stop(`the direct channel speaks uexec protocol v${msg.protocol_version}`);
        return;
      }
      this._state = 'open';
      this._attempt = 0;
      this._waited = 0;
      this._afterKernelWent = this._kernelWent;
      this._kernelWent = false;
    } else if (msg.type === 'attached' && msg.session_id === this._sessionId) {
      this._kept = msg.kept === true;
    }
    if (this._state === 'open') {
      this.deliver(msg);
    }
  }

  /** The socket closed (with `code`), failed, or never said `hello`. */
  private _onDrop(socket: SocketLike, code?: number): void {
    if (socket !== this._socket) {
      return;
    }
    if (code === CLOSE_REMOTE_KERNEL) {
      this._stop(REMOTE_KERNEL);
      return;
    }
    if (this._state === 'open' && code === CLOSE_KERNEL_GONE) {
      this._kernelWent = true;
      if (!this._kept) {
        // Sessions end with their kernel (a kept one goes on with the next): nothing to reconnect to.
        this._endedWithKernel = true;
        this._stop(ENDED_WITH_THE_KERNEL);
        return;
      }
    }
    this._forget(socket);
    this._attemptFailed();
  }

  private _attemptFailed(): void {
    if (this._state === 'connecting') {
      this._stop('no direct channel');
      return;
    }
    this._state = 'reconnecting';
    const delay = reconnectDelay(this._attempt++, this._kept, this._waited);
    if (delay === null) {
      this._stop('the direct channel was lost');
      return;
    }
    this._waited += delay;
    this._retryTimer = setTimeout(() => this._connect(), delay);
  }

  private _forget(socket: SocketLike): void {
    clearTimeout(this._helloTimer);
    clearTimeout(this._ackTimer);
    this._ackTimer = undefined;
    socket.onmessage = socket.onclose = socket.onerror = null;
    this._socket = null;
    try {
      socket.close();
    } catch {
      // Closing a socket that never opened may throw in some browsers.
    }
  }

  private _stop(reason: string): void {
    if (this._state === 'closed') {
      return;
    }
    this._state = 'closed';
    clearTimeout(this._retryTimer);
    if (this._socket) {
      this._forget(this._socket);
    }
    this.close(reason);
  }

  private readonly _url: string;
  private readonly _sessionId: number;
  private readonly _socketFactory: SocketFactory;
  private _socket: SocketLike | null = null;
  private _state: DirectState = 'connecting';
  private _attempt = 0;
  /** What the reconnect delays since the last drop add up to. */
  private _waited = 0;
  /** The session outlives a kernel restart: reconnect long enough to reach the next kernel. */
  private _kept = false;
  /** The kernel closed the last open connection; `afterKernelWent` at the next `hello`. */
  private _kernelWent = false;
  private _afterKernelWent = false;
  private _endedWithKernel = false;
  private _acked = 0;
  /** The end of what the view has written on this connection; acknowledged up to `_acked`. */
  private _written = 0;
  private _ackTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  private _helloTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  private _retryTimer: ReturnType<typeof setTimeout> | undefined = undefined;
}

/**
 * A carrier that can be let go of (the widget's, the comm's).
 * `closedByOwner`: it closed because its owner closed it (the widget's
 * `close()` in Python), not because its kernel went.
 */
export type FallbackCarrier = Carrier & { dispose?(): void; readonly closedByOwner?: boolean };

/** How sure the choice is: waiting for the direct channel, or made. */
type Choice = 'deciding' | 'direct' | 'fallback';

export namespace DirectFirstCarrier {
  export interface IOptions {
    /**
     * A kept session's view outlives its fallback (the widget's messages
     * die with their kernel; the direct channel reaches the next one, which
     * takes the session back). Where it cannot go on (no direct channel, or
     * the next kernel never answers), it closes saying `reopen(sessionId)`:
     * how to open the session again. Without this the fallback closing
     * closes the view, kept or not (a terminal tab opens a new comm itself).
     */
    kept?: { reopen: (sessionId: number) => string };
  }
}

/**
 * The direct channel while it works, the fallback otherwise. Until the
 * direct channel says `hello` (or fails) what the view sends waits here;
 * while it reconnects, keys wait too. When it is lost for good the view
 * is told to attach again (`restarted`), now over the fallback; its gap
 * rule drops what it has already shown. The fallback closing (a kernel
 * restart, the widget closed) closes this too, unless the session is kept
 * and the options say so (`IOptions.kept`): then the view waits on the
 * direct channel for the next kernel and attaches there, saying so in one
 * line (`KEPT_NOTICE`).
 */
export class DirectFirstCarrier extends CarrierBase {
  constructor(
    direct: DirectCarrier | null,
    fallback: FallbackCarrier,
    options: DirectFirstCarrier.IOptions = {}
  ) {
    super();
    this._direct = direct;
    this._fallback = fallback;
    this._reopen = options.kept?.reopen ?? null;
    this._stopFallback = fallback.listen({
      received: msg => {
        this._note(msg);
        if (this._choice === 'fallback') {
          this.deliver(msg);
        }
      },
      closed: reason => this._onFallbackClosed(reason)
    });
    if (direct) {
      this._stopDirect = direct.listen({
        received: msg => this._fromDirect(msg),
        closed: reason => this._onDirectLost(reason)
      });
    } else {
      this._choice = 'fallback';
    }
  }

  /** Which carrier is in use (`deciding` while the direct channel is tried). */
  get choice(): Choice {
    return this._choice;
  }

  /** The fallback closed (its kernel went) and this went on over the direct channel alone. */
  get outlivedFallback(): boolean {
    return this._fallbackLost;
  }

  send(msg: FrontEndMessage): void {
    if (this.isClosed) {
      return;
    }
    if (this._choice === 'fallback') {
      this._sendByFallback(msg);
    } else if (this._direct?.isOpen) {
      this._direct.send(msg);
    } else if (this._queue.length < QUEUE_MAX) {
      this._queue.push(msg);
    }
  }

  written(end: number, drained: boolean): void {
    if (this._choice === 'direct') {
      this._direct?.written(end, drained);
    }
  }

  dispose(): void {
    this._queue = [];
    this._stopDirect();
    this._stopFallback();
    this._direct?.dispose();
    this._fallback.dispose?.();
  }

  private _fromDirect(msg: KernelMessage): void {
    this._note(msg);
    if (msg.type !== 'hello') {
      if (this._choice === 'direct') {
        this.deliver(msg);
      }
      return;
    }
    if (this._choice === 'deciding') {
      this._choice = 'direct';
      this._flush(false);
    } else if (this._choice === 'direct') {
      // Reconnected: a new connection has no attachment until the view asks.
      this._flush(true);
      // The kernel closed the channel (no network drop) and one with its id answers:
      // it restarted, and took the kept session back.
      const restarted = this._reopen !== null && this._kept && this._direct?.afterKernelWent;
      this.restart(restarted ? KEPT_NOTICE : undefined);
    }
  }

  /** What the session is, from the answers to the view's `attach`. */
  private _note(msg: KernelMessage): void {
    if (msg.type === 'attached') {
      this._kept = msg.kept === true;
      this._sessionId = msg.session_id;
    }
  }

  private _onFallbackClosed(reason: string): void {
    if (this.isClosed) {
      return;
    }
    const kept = this._reopen !== null && this._kept && this._fallback.closedByOwner !== true;
    if (kept && this._choice === 'direct' && this._direct && !this._direct.isClosed) {
      this._fallbackLost = true;
      this._stopFallback();
      if (!(this._direct.isOpen && this._direct.afterKernelWent)) {
        // Not on the next kernel yet (a quick one may be there before the widget's comm is seen to die).
        this.interrupt(`${reason}; reconnecting`);
      }
      return;
    }
    // A kept session did not end with the kernel: say only what this view lost.
    const lost = reason === DISCONNECTED_NOTICE ? DISCONNECTED : reason;
    this._close(kept ? `${lost}; ${this._reopenHint()}` : reason);
  }

  private _reopenHint(): string {
    return this._reopen && this._sessionId !== null ? this._reopen(this._sessionId) : '';
  }

  private _onDirectLost(reason: string): void {
    if (this.isClosed) {
      return;
    }
    if (this._fallbackLost) {
      // No kernel took the session back in time (or the kernel is gone for good).
      this._close(`the kernel did not come back; ${this._reopenHint()}`);
      return;
    }
    if (this._choice === 'fallback') {
      return;
    }
    if (this._direct?.endedWithKernel) {
      // The kernel went and took the session: the fallback's messages would reach no one.
      this._close(reason);
      return;
    }
    const established = this._choice === 'direct';
    this._choice = 'fallback';
    console.debug(`uexec: ${reason}; using the kernel's messages instead`);
    this._flush(established);
    if (established) {
      this.restart();
    }
  }

  /**
   * A fallback whose comm went with its kernel connection cannot carry
   * anything more: ipywidgets' `send` throws `Cannot send` on a comm of a
   * disposed connection (a page that connected to the kernel again, as a
   * collaborator's did, right after its direct channel was found missing).
   * Thrown from a websocket's or a key's handler, that was an uncaught error
   * in the page; now the view closes, saying it is disconnected.
   */
  private _sendByFallback(msg: FrontEndMessage): void {
    try {
      this._fallback.send(msg);
    } catch (error) {
      console.debug(`uexec: the kernel's messages cannot carry this view: ${String(error)}`);
      this._onFallbackClosed(DISCONNECTED);
    }
  }

  /** Send what waited to the carrier now chosen; an attach is left to `restarted`. */
  private _flush(dropAttach: boolean): void {
    for (const msg of this._queue.splice(0)) {
      if (!(dropAttach && msg.type === 'attach')) {
        this.send(msg);
      }
    }
  }

  private _close(reason: string): void {
    this._queue = [];
    this.close(reason);
    this._stopDirect();
    this._direct?.dispose();
  }

  private readonly _direct: DirectCarrier | null;
  private readonly _fallback: FallbackCarrier;
  private readonly _reopen: ((sessionId: number) => string) | null;
  private readonly _stopFallback: () => void;
  private _kept = false;
  private _sessionId: number | null = null;
  private _fallbackLost = false;
  private _stopDirect: () => void = () => undefined;
  private _choice: Choice = 'deciding';
  private _queue: FrontEndMessage[] = [];
}

/** Keys typed while the channel reconnects wait; past this, they are dropped. */
const QUEUE_MAX = 1000;
