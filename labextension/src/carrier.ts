/**
 * How a terminal talks to one session, whatever carries the messages: the
 * kernel comm (terminal tabs), a widget's custom messages (the live view),
 * or the direct channel (direct.ts) in front of either. No DOM and no Lumino, so the live view's bundle stays small and this is
 * tested under plain node.
 */

import type { FrontEndMessage, KernelMessage } from './protocol';

export interface CarrierListener {
  /** A message for this session (or an answer without one, such as `error`). */
  received(msg: KernelMessage): void;
  /** Nothing more will arrive; `reason` is for the user. */
  closed(reason: string): void;
  /**
   * The carrier reaches the kernel over a new connection, which knows
   * nothing of this view: attach again. What the view has shown stays; the
   * gap rule drops what the replay repeats. `notice`: a line to show the
   * user where the view goes on (a kept session's view after a kernel
   * restart says so once).
   */
  restarted?(notice?: string): void;
  /**
   * The connection went and the carrier is trying to reach the kernel again
   * (a kept session's view while its kernel restarts); `restarted` or
   * `closed` follows. `reason` is for the user.
   */
  interrupted?(reason: string): void;
}

export interface Carrier {
  /** The carrier fills in `session_id` where it needs one. */
  send(msg: FrontEndMessage): void;
  /** Deliver to `listener` until the returned function is called. */
  listen(listener: CarrierListener): () => void;
  /**
   * The view has written the session's output up to offset `end` into its
   * terminal (`drained`: nothing more is queued there). Only a carrier with
   * flow control (the direct channel) needs to hear it.
   */
  written?(end: number, drained: boolean): void;
}

/**
 * The fan-out every carrier needs. It remembers that it closed: a view
 * created after the kernel went (a tab restored late) still hears why.
 */
export abstract class CarrierBase implements Carrier {
  abstract send(msg: FrontEndMessage): void;

  get isClosed(): boolean {
    return this._closedReason !== null;
  }

  listen(listener: CarrierListener): () => void {
    this._listeners.add(listener);
    if (this._closedReason !== null) {
      listener.closed(this._closedReason);
    }
    return () => {
      this._listeners.delete(listener);
    };
  }

  protected deliver(msg: KernelMessage): void {
    for (const listener of [...this._listeners]) {
      listener.received(msg);
    }
  }

  protected restart(notice?: string): void {
    if (this._closedReason !== null) {
      return;
    }
    for (const listener of [...this._listeners]) {
      listener.restarted?.(notice);
    }
  }

  protected interrupt(reason: string): void {
    if (this._closedReason !== null) {
      return;
    }
    for (const listener of [...this._listeners]) {
      listener.interrupted?.(reason);
    }
  }

  protected close(reason: string): void {
    if (this._closedReason !== null) {
      return;
    }
    this._closedReason = reason;
    for (const listener of [...this._listeners]) {
      listener.closed(reason);
    }
  }

  private readonly _listeners = new Set<CarrierListener>();
  private _closedReason: string | null = null;
}
