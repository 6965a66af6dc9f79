import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { Kernel, KernelMessage } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';

import { EventComm, NO_TARGET } from '../src/eventcomm';
import { ENDED_WITH_THE_KERNEL } from '../src/format';

/** The part of a kernel connection (one that handles no comms) the comm uses, and what it was sent. */
class Connection {
  readonly iopubMessage = new Signal<this, KernelMessage.IIOPubMessage>(this);
  readonly statusChanged = new Signal<this, Kernel.Status>(this);
  readonly disposed = new Signal<this, void>(this);
  readonly clientId = 'page';
  readonly username = 'someone';
  status: Kernel.Status = 'idle';
  isDisposed = false;
  sent: { type: string; content: any }[] = [];

  sendShellMessage(msg: KernelMessage.IShellMessage): void {
    this.sent.push({ type: msg.header.msg_type, content: msg.content });
  }

  dispose(): void {
    this.isDisposed = true;
    this.disposed.emit();
  }

  /** The kernel publishes a comm message on iopub, as every connection to it sees it. */
  publish(type: 'comm_msg' | 'comm_close', commId: string, data: unknown = {}): void {
    this.iopubMessage.emit({ header: { msg_type: type }, content: { comm_id: commId, data } } as any);
  }

  setStatus(status: Kernel.Status): void {
    this.status = status;
    this.statusChanged.emit(status);
  }
}

function open(): { kernel: Connection; comm: EventComm; id: string; log: string[] } {
  const kernel = new Connection();
  const comm = new EventComm(kernel as unknown as Kernel.IKernelConnection);
  const log: string[] = [];
  comm.listen({ received: msg => log.push(msg.type), closed: reason => log.push(`closed: ${reason}`) });
  assert.equal(kernel.sent.length, 1);
  assert.equal(kernel.sent[0].type, 'comm_open');
  assert.equal(kernel.sent[0].content.target_name, 'unified_exec');
  return { kernel, comm, id: kernel.sent[0].content.comm_id, log };
}

const HELLO = { type: 'hello', protocol_version: 2, session_ids: [] };
const EVENT = { type: 'session_event', event: 'exited', session_id: 3, name: null, command: ['sleep'], exit_code: 0, seconds: 12, line: null, by: null };

test('it hears the protocol on its own comm only', () => {
  const { kernel, comm, id, log } = open();
  kernel.publish('comm_msg', 'a widget of the notebook', EVENT);
  kernel.publish('comm_msg', id, HELLO);
  kernel.publish('comm_msg', id, EVENT);
  kernel.publish('comm_msg', id, { type: 'not ours' });
  assert.deepEqual(log, ['hello', 'session_event']);
  assert.equal(comm.heard, true);
});

test('a kernel without the target closes the comm before hello: that says so, and the connection goes', () => {
  const { kernel, id, log } = open();
  kernel.publish('comm_close', id);
  assert.deepEqual(log, [`closed: ${NO_TARGET}`]);
  assert.equal(kernel.isDisposed, true);
});

test('a kernel that starts again after it answered is the next one: the comm ended with the last', () => {
  const { kernel, id, log } = open();
  kernel.setStatus('starting'); // still the first kernel's start: the open waits in its queue
  kernel.publish('comm_msg', id, HELLO);
  kernel.setStatus('busy');
  kernel.setStatus('starting');
  assert.deepEqual(log, ['hello', `closed: ${ENDED_WITH_THE_KERNEL}`]);
  assert.equal(kernel.isDisposed, true);
});

test('a restart or a death the connection is told of ends it too', () => {
  for (const status of ['restarting', 'autorestarting', 'dead'] as Kernel.Status[]) {
    const { kernel, log } = open();
    kernel.setStatus(status);
    assert.deepEqual(log, [`closed: ${ENDED_WITH_THE_KERNEL}`], status);
  }
});

test('disposing closes the comm in the kernel, then the connection, and hears nothing more', () => {
  const { kernel, comm, id, log } = open();
  comm.dispose();
  assert.deepEqual(kernel.sent.map(m => [m.type, m.content.comm_id]), [['comm_open', id], ['comm_close', id]]);
  assert.equal(kernel.isDisposed, true);
  kernel.publish('comm_msg', id, EVENT);
  assert.deepEqual(log, ['closed: closed by the page']);
  comm.send({ type: 'list' });
  assert.equal(kernel.sent.length, 2);
});
