import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { Kernel } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';

import { kernelBack } from '../src/restart';

/** The part of a kernel connection `kernelBack` reads, moved by hand as JupyterLab's would move. */
class FakeKernel {
  status: Kernel.Status = 'restarting';
  connectionStatus: Kernel.ConnectionStatus = 'connected';
  isDisposed = false;
  readonly statusChanged = new Signal<this, Kernel.Status>(this);
  readonly connectionStatusChanged = new Signal<this, Kernel.ConnectionStatus>(this);
  readonly disposed = new Signal<this, void>(this);

  setStatus(status: Kernel.Status): void {
    this.status = status;
    this.statusChanged.emit(status);
  }

  setConnection(status: Kernel.ConnectionStatus): void {
    this.connectionStatus = status;
    this.connectionStatusChanged.emit(status);
    if (status !== 'connected') {
      this.setStatus('unknown'); // as JupyterLab does while its websocket is down
    }
  }
}

function watch(kernel: FakeKernel, ms = 60_000): { result: boolean | null; done: Promise<boolean> } {
  const seen: { result: boolean | null; done: Promise<boolean> } = { result: null, done: Promise.resolve(false) };
  seen.done = kernelBack(kernel as unknown as Kernel.IKernelConnection, ms).then(result => (seen.result = result));
  return seen;
}

/** Lets a resolved promise's callbacks run. */
const settled = (): Promise<void> => new Promise(resolve => setImmediate(resolve));

test('the old kernel answering during the restart is not the kernel coming back', async () => {
  // Restart Kernel: `restarting` at once, then the old kernel's last statuses over the old
  // websocket (seen 3 to 120 ms after it under load), then the reconnect to the next kernel.
  const kernel = new FakeKernel();
  const seen = watch(kernel);
  kernel.setStatus('busy');
  kernel.setStatus('idle');
  await settled();
  assert.equal(seen.result, null);
  kernel.setConnection('connecting');
  await settled();
  assert.equal(seen.result, null);
  kernel.setConnection('connected');
  assert.equal(await seen.done, true);
});

test('a kernel that dies while restarting is not back', async () => {
  const kernel = new FakeKernel();
  const seen = watch(kernel);
  kernel.setConnection('connecting');
  kernel.setStatus('dead');
  assert.equal(await seen.done, false);
});

test('a restart that never reconnects gives up after its time', async () => {
  const kernel = new FakeKernel();
  const seen = watch(kernel, 20);
  kernel.setStatus('idle');
  assert.equal(await seen.done, false);
});
