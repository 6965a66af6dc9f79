/**
 * One comm on the `unified_exec` target of a kernel: the session list for
 * the Sessions panel, and per-session carriers for the terminal tabs. The
 * panel and the tabs share one connection per kernel connection. No DOM.
 */

import type { Kernel } from '@jupyterlab/services';
import type { JSONObject } from '@lumino/coreutils';
import type { IDisposable } from '@lumino/disposable';
import { Signal, type ISignal } from '@lumino/signaling';

import { CarrierBase } from './carrier';
import { DISCONNECTED_NOTICE, ENDED_WITH_THE_KERNEL } from './format';
import {
  asKernelMessage,
  COMM_TARGET,
  nextRequestId,
  PROTOCOL_VERSION,
  type FrontEndMessage,
  type KernelMessage,
  type RequestId,
  type SessionInfo
} from './protocol';

export type ConnectionState =
  /** The comm is open, `hello` has not arrived yet. */
  | 'connecting'
  | 'ready'
  /** The kernel closed the comm before `hello`: no `unified_exec` target. */
  | 'unsupported'
  /** `hello` named a protocol version this front end does not speak. */
  | 'incompatible'
  /** The kernel restarted, died, or closed the comm. */
  | 'closed';

/** Open connections by kernel connection, so a tab and the panel share one comm. */
const pool = new WeakMap<Kernel.IKernelConnection, SessionsConnection>();

export class SessionsConnection implements IDisposable {
  /**
   * The open connection to `kernel`, or a new one; the caller holds a use
   * of it until `release()`. One that closed (a restart) is not handed out.
   */
  static acquire(kernel: Kernel.IKernelConnection): SessionsConnection {
    let connection = pool.get(kernel);
    if (!connection || connection.isDisposed || !connection.isOpen) {
      connection = new SessionsConnection(kernel);
      pool.set(kernel, connection);
    }
    connection._users++;
    return connection;
  }

  private constructor(private readonly _kernel: Kernel.IKernelConnection) {
    _kernel.statusChanged.connect(this._onKernelStatus, this);
    this._comm = _kernel.createComm(COMM_TARGET);
    this._comm.onMsg = msg => this._onMessage(msg.content.data);
    this._comm.onClose = () => {
      this._close(this._state === 'connecting' ? 'unsupported' : 'closed', 'the comm closed');
    };
    this._comm.open({});
  }

  get state(): ConnectionState {
    return this._state;
  }

  /** Connecting or ready: the comm still answers. */
  get isOpen(): boolean {
    return this._state === 'connecting' || this._state === 'ready';
  }

  get kernel(): Kernel.IKernelConnection {
    return this._kernel;
  }

  /** The kernel's protocol version, once `hello` has said it. */
  get protocolVersion(): number | null {
    return this._protocolVersion;
  }

  get sessions(): readonly SessionInfo[] {
    return this._sessions;
  }

  /** The kernel has answered a `list`: `sessions` is what it holds. */
  get listed(): boolean {
    return this._listed;
  }

  /** The state or the session list changed. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The comm was closed for good: nobody uses this connection any more. */
  get disposed(): ISignal<this, void> {
    return this._disposed;
  }

  /** A request the panel made failed; the text is for the user. */
  get failed(): ISignal<this, string> {
    return this._failed;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Ask for the list again; asks made while one is answered become one. */
  refresh(): void {
    if (this._listRequest !== null) {
      this._listAgain = true;
      return;
    }
    this._listRequest = this._sendOwn({ type: 'list' });
  }

  kill(sessionId: number): void {
    this._sendOwn({ type: 'kill', session_id: sessionId });
  }

  /**
   * A carrier for one session; it holds a use of this connection until it
   * is disposed. The kernel keeps one attachment per session and comm, so
   * the last carrier of a session to go sends `detach`.
   */
  carrier(sessionId: number): SessionCarrier {
    const carrier = new SessionCarrier(this, sessionId);
    this._users++;
    if (!this.isOpen) {
      carrier._close(DISCONNECTED_NOTICE);
    }
    let group = this._carriers.get(sessionId);
    if (!group) {
      group = new Set();
      this._carriers.set(sessionId, group);
    }
    group.add(carrier);
    return carrier;
  }

  /** One use ended (the panel moved on, a tab closed); the last one closes the comm. */
  release(): void {
    this._users--;
    if (this._users <= 0) {
      this.dispose();
    }
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._close('closed', 'the Sessions panel closed its connection');
    if (this._commUsable()) {
      this._comm.close();
    }
    if (pool.get(this._kernel) === this) {
      pool.delete(this._kernel);
    }
    this._disposed.emit();
    Signal.clearData(this);
  }

  /** @internal Used by SessionCarrier. */
  _send(msg: FrontEndMessage): void {
    if (this._commUsable()) {
      this._comm.send(msg as unknown as JSONObject);
    }
  }

  /** @internal Used by SessionCarrier. */
  _drop(carrier: SessionCarrier): void {
    const group = this._carriers.get(carrier.sessionId);
    if (group?.delete(carrier) && group.size === 0) {
      this._carriers.delete(carrier.sessionId);
      this._send({ type: 'detach', session_id: carrier.sessionId });
    }
    this.release();
  }

  private _sendOwn(msg: FrontEndMessage): RequestId {
    const requestId = nextRequestId();
    this._ownRequests.add(requestId);
    this._send({ ...msg, request_id: requestId });
    return requestId;
  }

  private _listAnswered(): void {
    this._listRequest = null;
    if (this._listAgain) {
      this._listAgain = false;
      this.refresh();
    }
  }

  private _onMessage(payload: unknown): void {
    const msg = asKernelMessage(payload);
    if (!msg) {
      return;
    }
    switch (msg.type) {
      case 'hello':
        this._onHello(msg.protocol_version);
        return;
      case 'sessions':
        this._forget(msg.request_id);
        this._sessions = [...msg.sessions].sort((a, b) => a.session_id - b.session_id);
        this._listed = true;
        this._changed.emit();
        this._listAnswered();
        return;
      case 'sessions_changed':
        this.refresh();
        return;
      case 'error':
        if (msg.request_id !== null && msg.request_id === this._listRequest) {
          this._listAnswered();
        }
        if (this._forget(msg.request_id)) {
          this._failed.emit(`${msg.error}: ${msg.message}`);
        }
        // A failed attach or input says so in its own session's terminals.
        if (msg.session_id !== undefined) {
          this._carriers.get(msg.session_id)?.forEach(c => c._receive(msg));
        } else {
          this._carriers.forEach(group => group.forEach(c => c._receive(msg)));
        }
        return;
      case 'ok':
        this._forget(msg.request_id);
        return;
      case 'output':
        // Only `exec` produces these, and the panel never sends `exec`.
        return;
      default:
        if (msg.session_id !== null) {
          this._carriers.get(msg.session_id)?.forEach(c => c._receive(msg));
        }
    }
  }

  private _onHello(version: number): void {
    this._protocolVersion = version;
    if (version !== PROTOCOL_VERSION) {
      this._close('incompatible', `the kernel speaks uexec protocol v${version}`);
      return;
    }
    this._state = 'ready';
    this._changed.emit();
    this.refresh();
  }

  /** A restart disposes comms, a shutdown the kernel: both then throw on use. */
  private _commUsable(): boolean {
    return !this._comm.isDisposed && !this._kernel.isDisposed;
  }

  /** Forget an answered request; true when it was one of ours. */
  private _forget(requestId: RequestId | null | undefined): boolean {
    return requestId != null && this._ownRequests.delete(requestId);
  }

  private _onKernelStatus(_: Kernel.IKernelConnection, status: Kernel.Status): void {
    // A restart drops every comm without a comm_close reaching us.
    // Its sessions' views say what every view says of them (format.ts), whichever way the kernel went.
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      this._close('closed', ENDED_WITH_THE_KERNEL);
    }
  }

  private _close(state: ConnectionState, reason: string): void {
    if (!this.isOpen) {
      return;
    }
    this._state = state;
    this._kernel.statusChanged.disconnect(this._onKernelStatus, this);
    this._carriers.forEach(group => group.forEach(c => c._close(reason)));
    this._changed.emit();
  }

  private readonly _comm: Kernel.IComm;
  private readonly _carriers = new Map<number, Set<SessionCarrier>>();
  private readonly _ownRequests = new Set<RequestId>();
  private readonly _changed = new Signal<this, void>(this);
  private readonly _failed = new Signal<this, string>(this);
  private readonly _disposed = new Signal<this, void>(this);
  private _state: ConnectionState = 'connecting';
  private _protocolVersion: number | null = null;
  private _sessions: SessionInfo[] = [];
  private _listed = false;
  private _listRequest: RequestId | null = null;
  private _listAgain = false;
  private _users = 0;
  private _isDisposed = false;
}

/** The comm, seen by one terminal: filtered to one session, `session_id` added. */
export class SessionCarrier extends CarrierBase implements IDisposable {
  constructor(
    private readonly _connection: SessionsConnection,
    readonly sessionId: number
  ) {
    super();
  }

  get connection(): SessionsConnection {
    return this._connection;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  send(msg: FrontEndMessage): void {
    this._connection._send({ ...msg, session_id: this.sessionId } as FrontEndMessage);
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._connection._drop(this);
  }

  /** @internal */
  _receive(msg: KernelMessage): void {
    this.deliver(msg);
  }

  /** @internal */
  _close(reason: string): void {
    this.close(reason);
  }

  private _isDisposed = false;
}
