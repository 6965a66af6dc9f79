/**
 * When a restarting kernel is back, as a kernel connection tells it. No DOM
 * and no Lumino widgets, so it is tested under plain node.
 */

import type { Kernel } from '@jupyterlab/services';

/** Kernel states in which no kernel answers yet, or none will. */
const NOT_BACK: ReadonlySet<Kernel.Status> = new Set(['restarting', 'autorestarting', 'terminating', 'dead']);

/**
 * True once the restarting `kernel` is back: its connection has been made
 * again since the restart began (a restart ends with that reconnect, to
 * the next kernel); false if it dies, goes, or `ms` pass first. The old
 * kernel's last statuses still arrive before that reconnect: under load
 * its `busy` came 45 ms after `restarting`, a kept session's tab took it
 * for the next kernel and opened its direct channel to the old one, which
 * closed it as it went, and the tab said `ended with the kernel`.
 */
export function kernelBack(kernel: Kernel.IKernelConnection, ms: number): Promise<boolean> {
  return new Promise(resolve => {
    let reconnected = false;
    const onConnection = (_: unknown, status: Kernel.ConnectionStatus): void => {
      reconnected ||= status !== 'connected';
      check();
    };
    const check = (): void => {
      if (kernel.isDisposed || kernel.status === 'dead') {
        finish(false);
      } else if (reconnected && kernel.connectionStatus === 'connected' && !NOT_BACK.has(kernel.status)) {
        finish(true);
      }
    };
    const finish = (result: boolean): void => {
      clearTimeout(timer);
      kernel.statusChanged.disconnect(check);
      kernel.connectionStatusChanged.disconnect(onConnection);
      kernel.disposed.disconnect(check);
      resolve(result);
    };
    const timer = setTimeout(() => finish(false), ms);
    kernel.statusChanged.connect(check);
    kernel.connectionStatusChanged.connect(onConnection);
    kernel.disposed.connect(check);
    check();
  });
}
