/**
 * Terminal tabs: one session in JupyterLab's main area (in Notebook 7, its
 * bottom panel). They are tracked by kernel and session id, so the layout
 * restorer brings them back after a page reload and they attach again.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import type { INotebookTracker } from '@jupyterlab/notebook';
import type { Kernel } from '@jupyterlab/services';
import type { ReadonlyJSONObject, ReadonlyPartialJSONObject } from '@lumino/coreutils';
import type { Message } from '@lumino/messaging';
import { SplitPanel, Widget } from '@lumino/widgets';

import { CarrierBase } from './carrier';
import { SessionsConnection, type SessionCarrier } from './connection';
import { DirectCarrier, DirectFirstCarrier, directUrl, KEPT_NOTICE } from './direct';
import type { FrontEndMessage } from './protocol';
import { sessionsIcon } from './icons';
import { kernelBack } from './restart';
import { SessionTerminal } from './terminal';

/** What a tab is, as saved in the workspace and passed to the open command. */
export interface TabArgs extends ReadonlyJSONObject {
  kernelId: string;
  sessionId: number;
  /** The session's command line, for the tab's title. */
  command: string;
}

export function isTabArgs(args: ReadonlyPartialJSONObject): args is TabArgs {
  return (
    typeof args.kernelId === 'string' &&
    Number.isInteger(args.sessionId) &&
    typeof args.command === 'string'
  );
}

/** How long a restored tab waits for the notebooks to find its kernel among them. */
const NOTEBOOKS_READY_MS = 30_000;

/** How long a kept session's tab waits for its restarting kernel to answer again. */
const RESTART_WAIT_MS = 60_000;

/**
 * A tab's carrier: the session over the direct channel, else the comm's
 * carrier for it, once the tab knows its kernel. A restored tab exists
 * before that; what it sends waits. A kept session's tab outlives a kernel
 * restart: once the kernel answers again it opens a new comm (and direct
 * channel) to it and the terminal attaches there, saying so in one line;
 * what is typed meanwhile waits.
 */
class TabCarrier extends CarrierBase {
  bind(comm: SessionCarrier): void {
    const kernel = comm.connection.kernel;
    const { wsUrl, token } = kernel.serverSettings;
    const url = directUrl(kernel.id, { wsUrl, token, pageUrl: location.href });
    const carrier = new DirectFirstCarrier(new DirectCarrier({ url, sessionId: comm.sessionId }), comm);
    this._connection = comm.connection;
    this._carrier = carrier;
    this._sessionId = comm.sessionId;
    carrier.listen({
      received: msg => {
        if (msg.type === 'attached') {
          this._kept = msg.kept === true;
        }
        this.deliver(msg);
      },
      closed: reason => this._onClosed(carrier, reason),
      restarted: notice => this.restart(notice)
    });
    for (const msg of this._queue.splice(0)) {
      carrier.send(msg);
    }
    if (this._rejoined) {
      this._rejoined = false;
      this.restart(KEPT_NOTICE);
    }
  }

  fail(reason: string): void {
    this._queue = [];
    this.close(reason);
  }

  send(msg: FrontEndMessage): void {
    if (this._carrier) {
      this._carrier.send(msg);
    } else if (!this.isClosed) {
      this._queue.push(msg);
    }
  }

  written(end: number, drained: boolean): void {
    this._carrier?.written(end, drained);
  }

  get connection(): SessionsConnection | null {
    return this._connection;
  }

  dispose(): void {
    this._disposed = true;
    this._carrier?.dispose();
    this._queue = [];
  }

  /** The comm closed: a kept session waits out its kernel's restart, anything else ends here. */
  private _onClosed(carrier: DirectFirstCarrier, reason: string): void {
    const kernel = this._connection?.kernel;
    if (carrier !== this._carrier || this._disposed) {
      return;
    }
    // The connection closes its carriers as the kernel's status turns to restarting.
    if (this._kept && kernel && !kernel.isDisposed && RESTARTING.has(kernel.status)) {
      this._carrier = null;
      carrier.dispose(); // the old comm and channel: the next kernel has others
      void this._rejoin(kernel);
      return;
    }
    this.close(reason);
  }

  private async _rejoin(kernel: Kernel.IKernelConnection): Promise<void> {
    const back = await kernelBack(kernel, RESTART_WAIT_MS);
    if (this._disposed) {
      return;
    }
    if (!back) {
      this.fail('the kernel did not come back; open this session again from the Sessions panel once it runs');
      return;
    }
    const connection = SessionsConnection.acquire(kernel);
    this._rejoined = true;
    this.bind(connection.carrier(this._sessionId));
    connection.release(); // the carrier holds its own use
  }

  private _carrier: DirectFirstCarrier | null = null;
  private _connection: SessionsConnection | null = null;
  private _queue: FrontEndMessage[] = [];
  private _sessionId = 0;
  private _kept = false;
  private _rejoined = false;
  private _disposed = false;
}

const RESTARTING: ReadonlySet<Kernel.Status> = new Set(['restarting', 'autorestarting']);

/** The tab's content: the shared terminal, told by Lumino when it shows or gets focus. */
export class TerminalContent extends Widget {
  constructor(
    readonly args: TabArgs,
    readonly carrier: TabCarrier
  ) {
    const terminal = new SessionTerminal({ carrier, sessionId: args.sessionId });
    super({ node: terminal.node });
    this._terminal = terminal;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._terminal.dispose();
    this.carrier.dispose();
    super.dispose();
  }

  protected onActivateRequest(msg: Message): void {
    super.onActivateRequest(msg);
    this._terminal.focus();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._terminal.refit();
  }

  private readonly _terminal: SessionTerminal;
}

export type TerminalTab = MainAreaWidget<TerminalContent>;

let tabCount = 0;

export class TerminalTabs {
  readonly tracker = new WidgetTracker<TerminalTab>({ namespace: 'uexec-terminal' });

  constructor(
    private readonly _app: JupyterFrontEnd,
    private readonly _notebooks: INotebookTracker | null
  ) {}

  /**
   * Show a session of `connection`'s kernel: the tab already showing it if
   * it is still live, else a new one. The panel's Open button.
   */
  show(connection: SessionsConnection, sessionId: number, command: string): TerminalTab {
    const args: TabArgs = { kernelId: connection.kernel.id, sessionId, command };
    const existing = this.tracker.find(
      tab => tab.content.carrier.connection === connection && tab.content.args.sessionId === sessionId
    );
    if (existing && !existing.content.carrier.isClosed) {
      this._app.shell.activateById(existing.id);
      return existing;
    }
    const tab = this._add(args);
    tab.content.carrier.bind(connection.carrier(sessionId));
    return tab;
  }

  /**
   * Show a session named by kernel id: how the layout restorer brings a tab
   * back. The tab is there at once; it attaches when its kernel is found.
   */
  open(args: TabArgs): TerminalTab {
    const existing = this.tracker.find(
      tab =>
        tab.content.args.kernelId === args.kernelId &&
        tab.content.args.sessionId === args.sessionId &&
        !tab.content.carrier.isClosed
    );
    if (existing) {
      this._app.shell.activateById(existing.id);
      return existing;
    }
    const tab = this._add(args);
    void this._connect(tab.content.carrier, args);
    return tab;
  }

  private _add(args: TabArgs): TerminalTab {
    const carrier = new TabCarrier();
    const tab: TerminalTab = new MainAreaWidget({ content: new TerminalContent(args, carrier) });
    tab.id = `uexec-terminal-${++tabCount}`;
    tab.title.label = `uexec ${args.sessionId}: ${args.command}`;
    tab.title.caption = `${tab.title.label}\nkernel ${args.kernelId}`;
    tab.title.icon = sessionsIcon;
    tab.title.closable = true;
    void this.tracker.add(tab);
    const shell = this._app.shell;
    shell.add(tab, 'main');
    if (!tab.isAttached) {
      // Notebook 7's main area holds only its notebook and ignores the add;
      // its bottom panel takes the terminal instead.
      shell.add(tab, 'down');
      makeRoomBelow(tab);
    }
    shell.activateById(tab.id);
    return tab;
  }

  private async _connect(carrier: TabCarrier, args: TabArgs): Promise<void> {
    let kernel: Kernel.IKernelConnection | null;
    try {
      kernel = await this._findKernel(args.kernelId);
    } catch (error) {
      carrier.fail(`cannot reach kernel ${args.kernelId}: ${error}`);
      return;
    }
    if (!kernel) {
      carrier.fail(`kernel ${args.kernelId} is gone`);
      return;
    }
    const connection = SessionsConnection.acquire(kernel);
    if (this._owned.get(args.kernelId) === kernel) {
      // Our own kernel connection lives as long as the comm on it.
      connection.disposed.connect(this._onOwnedDone, this);
    }
    carrier.bind(connection.carrier(args.sessionId));
    connection.release(); // the carrier holds its own use
  }

  private _onOwnedDone(connection: SessionsConnection): void {
    const kernel = connection.kernel;
    if (this._owned.get(kernel.id) === kernel) {
      this._owned.delete(kernel.id);
    }
    kernel.dispose();
  }

  /**
   * The kernel by id: a notebook's connection to it where one exists (it
   * follows restarts), else one of our own, closed with its last comm.
   */
  private async _findKernel(kernelId: string): Promise<Kernel.IKernelConnection | null> {
    await this._app.restored;
    if (this._notebooks) {
      const ready: Promise<unknown>[] = [];
      this._notebooks.forEach(panel => ready.push(panel.sessionContext.ready.catch(() => null)));
      await Promise.race([Promise.all(ready), delay(NOTEBOOKS_READY_MS)]);
      const notebook = this._notebooks.find(
        panel => panel.sessionContext.session?.kernel?.id === kernelId
      );
      const kernel = notebook?.sessionContext.session?.kernel;
      if (kernel) {
        return kernel;
      }
    }
    const owned = this._owned.get(kernelId);
    if (owned && !owned.isDisposed) {
      return owned;
    }
    const kernels = this._app.serviceManager.kernels;
    const model = await kernels.findById(kernelId);
    if (!model) {
      return null;
    }
    const kernel = kernels.connectTo({ model });
    this._owned.set(kernelId, kernel);
    return kernel;
  }

  /** Kernel connections opened for restored tabs whose notebook is not open. */
  private readonly _owned = new Map<string, Kernel.IKernelConnection>();
}

function delay(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/**
 * Notebook 7 shows its bottom panel at the height of its tab bar: give the
 * terminal a usable share of the page (the user can still drag the handle).
 */
function makeRoomBelow(widget: Widget): void {
  for (let parent = widget.parent; parent; parent = parent.parent) {
    if (parent instanceof SplitPanel && parent.orientation === 'vertical') {
      const sizes = parent.relativeSizes();
      if (sizes.length === 2 && sizes[1] < 0.25) {
        parent.setRelativeSizes([0.6, 0.4]);
      }
      return;
    }
  }
}
