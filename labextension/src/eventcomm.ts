/**
 * The `unified_exec` comm on a kernel connection of our own that handles no
 * comms: how the notifier (notify.ts) hears a kernel's news where no direct
 * channel reaches it (a gateway's kernel: only its messages cross,
 * jupyter_client#487). A connection that handled comms would close every
 * comm the kernel opens for a target it does not know, a widget's too; this
 * one opens, reads and closes its own comm by its id and ignores the rest.
 * The messages are the protocol's, as on the direct channel: the notifier
 * reads both carriers alike.
 */

import { KernelMessage, type Kernel } from '@jupyterlab/services';
import type { JSONObject } from '@lumino/coreutils';
import { UUID } from '@lumino/coreutils';

import { CarrierBase } from './carrier';
import { ENDED_WITH_THE_KERNEL } from './format';
import { asKernelMessage, COMM_TARGET, type FrontEndMessage } from './protocol';

/** The kernel closed the comm before `hello`: it has no `unified_exec` target. */
export const NO_TARGET = 'the kernel has no unified_exec comm target';

/** States in which the kernel has dropped every comm. */
const GONE: ReadonlySet<Kernel.Status> = new Set(['restarting', 'autorestarting', 'dead']);

export class EventComm extends CarrierBase {
  /** `kernel` handles no comms (`handleComms: false`) and is this carrier's: disposed with it. */
  constructor(private readonly _kernel: Kernel.IKernelConnection) {
    super();
    _kernel.iopubMessage.connect(this._onIopub, this);
    _kernel.statusChanged.connect(this._onStatus, this);
    _kernel.disposed.connect(this._onDisposed, this);
    this._shell('comm_open', { comm_id: this._commId, target_name: COMM_TARGET, data: {} });
  }

  /** The kernel has said `hello` on this comm. */
  get heard(): boolean {
    return this._heard;
  }

  send(msg: FrontEndMessage): void {
    if (!this.isClosed) {
      this._shell('comm_msg', { comm_id: this._commId, data: msg as unknown as JSONObject });
    }
  }

  dispose(): void {
    if (!this.isClosed) {
      this._shell('comm_close', { comm_id: this._commId, data: {} });
    }
    this._end('closed by the page');
  }

  private _onIopub(_: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    const content = msg.content as { comm_id?: string; data?: unknown };
    if (content.comm_id !== this._commId) {
      return;
    }
    if (msg.header.msg_type === 'comm_close') {
      this._end(this._heard ? 'the kernel closed the comm' : NO_TARGET);
      return;
    }
    const data = msg.header.msg_type === 'comm_msg' ? asKernelMessage(content.data) : null;
    if (data) {
      this._heard ||= data.type === 'hello';
      this.deliver(data);
    }
  }

  private _onStatus(_: Kernel.IKernelConnection, status: Kernel.Status): void {
    // A kernel that answered and then says `starting` is the next process (a restart this
    // connection was not told of as one): it knows nothing of this comm.
    if (GONE.has(status) || (status === 'starting' && this._heard)) {
      this._end(ENDED_WITH_THE_KERNEL);
    }
  }

  private _onDisposed(): void {
    this._end('the kernel connection closed');
  }

  private _shell(msgType: 'comm_open' | 'comm_msg' | 'comm_close', content: JSONObject): void {
    if (this._kernel.isDisposed || this._kernel.status === 'dead') {
      return;
    }
    try {
      const msg = KernelMessage.createMessage<KernelMessage.ICommOpenMsg<'shell'>>({
        msgType: msgType as 'comm_open', // the three share their shape: comm_id, data (and a target to open)
        channel: 'shell',
        session: this._kernel.clientId,
        username: this._kernel.username,
        content: content as KernelMessage.ICommOpenMsg['content']
      });
      this._kernel.sendShellMessage(msg, false, true);
    } catch (error) {
      this._end(`cannot reach the kernel: ${String(error)}`);
    }
  }

  private _end(reason: string): void {
    if (this._stopped) {
      return;
    }
    this._stopped = true;
    this._kernel.iopubMessage.disconnect(this._onIopub, this);
    this._kernel.statusChanged.disconnect(this._onStatus, this);
    this._kernel.disposed.disconnect(this._onDisposed, this);
    this.close(reason);
    this._kernel.dispose();
  }

  private readonly _commId = UUID.uuid4();
  private _heard = false;
  private _stopped = false;
}
