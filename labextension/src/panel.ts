/**
 * The "uexec sessions" side panel: the sessions of the current notebook's
 * kernel, with buttons to open one in a terminal tab or kill it.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel } from '@jupyterlab/services';
import type { Message } from '@lumino/messaging';
import { Signal, type ISignal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { SessionsConnection } from './connection';
import { commandLine, keptLabel, sessionLabel, sessionState } from './format';
import { sessionsIcon } from './icons';
import { PROTOCOL_VERSION, type SessionInfo } from './protocol';
import type { TerminalTabs } from './tabs';

export namespace SessionsPanel {
  export interface IOptions {
    tracker: INotebookTracker;
    tabs: TerminalTabs;
  }
}

/** Kernel states in which a comm can be opened and answered. */
const REACHABLE: ReadonlySet<Kernel.Status> = new Set(['idle', 'busy']);

export class SessionsPanel extends Widget {
  constructor(options: SessionsPanel.IOptions) {
    super();
    this._tracker = options.tracker;
    this._tabs = options.tabs;
    this.id = 'uexec-sessions-panel';
    this.addClass('uexec-sessions-panel');
    this.title.icon = sessionsIcon;
    this.title.caption = 'uexec sessions';
    this.title.label = 'uexec';

    const header = this.node.appendChild(document.createElement('div'));
    header.className = 'uexec-sessions-header';
    const heading = header.appendChild(document.createElement('h2'));
    heading.textContent = 'uexec sessions';
    const refresh = header.appendChild(document.createElement('button'));
    refresh.className = 'uexec-refresh jp-mod-styled';
    refresh.textContent = 'Refresh';
    this._notebookName = this.node.appendChild(document.createElement('div'));
    this._notebookName.className = 'uexec-sessions-notebook';
    this._status = this.node.appendChild(document.createElement('div'));
    this._status.className = 'uexec-sessions-status';
    this._error = this.node.appendChild(document.createElement('div'));
    this._error.className = 'uexec-sessions-error';
    this._list = this.node.appendChild(document.createElement('ul'));
    this._list.className = 'uexec-sessions-list';

    this._tracker.currentChanged.connect(this._onNotebookChanged, this);
    this._onNotebookChanged();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._disconnect();
    super.dispose();
  }

  /** The current notebook's connection, once it has listed its sessions. */
  get listed(): SessionsConnection | null {
    return this._connection?.state === 'ready' && this._connection.listed ? this._connection : null;
  }

  /** The connection changed state or listed its sessions again. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Clicks on the Refresh, Open and Kill buttons (one listener for all). */
  handleEvent(event: Event): void {
    const button = (event.target as HTMLElement).closest('button');
    if (!button) {
      return;
    }
    this._showError('');
    if (button.classList.contains('uexec-refresh')) {
      this._refresh();
      return;
    }
    const row = button.closest<HTMLElement>('.uexec-session-row');
    const info = this._connection?.sessions.find(
      s => String(s.session_id) === row?.dataset.sessionId
    );
    if (!info) {
      return;
    }
    if (button.classList.contains('uexec-open')) {
      this._open(info);
    } else if (button.classList.contains('uexec-kill')) {
      void this._kill(info);
    }
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this.node.addEventListener('click', this);
  }

  protected onBeforeDetach(msg: Message): void {
    this.node.removeEventListener('click', this);
    super.onBeforeDetach(msg);
  }

  // A kernel gets a comm only once someone looks at the panel: a kernel
  // without the target logs an error for every comm_open it refuses.
  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._sync();
  }

  private _onNotebookChanged(): void {
    const notebook = this._tracker.currentWidget;
    if (notebook === this._notebook) {
      return;
    }
    this._notebook?.sessionContext.statusChanged.disconnect(this._sync, this);
    this._notebook?.title.changed.disconnect(this._renderName, this);
    this._notebook = notebook;
    // Status changes cover kernel changes, restarts and the kernel coming up.
    notebook?.sessionContext.statusChanged.connect(this._sync, this);
    notebook?.title.changed.connect(this._renderName, this);
    this._sync();
  }

  /** Keep the connection on the current notebook's live kernel. */
  private _sync(): void {
    const kernel = this._notebook?.sessionContext.session?.kernel ?? null;
    const current = this._connection;
    if (current && (this._kernel !== kernel || current.state === 'closed')) {
      this._disconnect();
    }
    if (!this._connection && kernel && REACHABLE.has(kernel.status) && this.isVisible) {
      this._connect(kernel);
    }
    if (this._connection !== current || this._kernel === null) {
      this._render();
    }
  }

  private _connect(kernel: Kernel.IKernelConnection): void {
    this._kernel = kernel;
    this._connection = SessionsConnection.acquire(kernel);
    this._connection.changed.connect(this._render, this);
    this._connection.failed.connect(this._onFailed, this);
  }

  // Tabs already open keep their connection; new ones use the next.
  private _disconnect(): void {
    this._connection?.changed.disconnect(this._render, this);
    this._connection?.failed.disconnect(this._onFailed, this);
    this._connection?.release();
    this._connection = null;
    this._kernel = null;
  }

  private _refresh(): void {
    if (this._connection?.state === 'ready') {
      this._connection.refresh();
    } else {
      // The target may exist now (`%load_ext` after the panel looked).
      this._disconnect();
      this._sync();
    }
  }

  private _open(info: SessionInfo): void {
    if (this._connection) {
      this._tabs.show(this._connection, info.session_id, commandLine(info.command));
    }
  }

  /** Killing a running session ends its processes: ask first, as JupyterLab does. */
  private async _kill(info: SessionInfo): Promise<void> {
    const connection = this._connection;
    if (!connection) {
      return;
    }
    if (info.alive) {
      const answer = await showDialog({
        title: `Kill session ${info.session_id}?`,
        body: `Every process of “${commandLine(info.command)}” will be ended.`,
        buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Kill' })]
      });
      if (!answer.button.accept) {
        return;
      }
    }
    connection.kill(info.session_id);
  }

  private _onFailed(_: SessionsConnection, text: string): void {
    this._showError(text);
  }

  private _showError(text: string): void {
    this._error.textContent = text;
  }

  private _render(): void {
    this._renderName();
    const connection = this._connection;
    const sessions = connection?.state === 'ready' ? connection.sessions : [];
    setText(this._status, this.statusText);
    setHidden(this._list, sessions.length === 0);
    updateRows(this._list, sessions);
    this._changed.emit();
  }

  // The title changes on every focus change: touching only the name keeps
  // the buttons in place, or a click in progress would lose its target.
  private _renderName(): void {
    setText(this._notebookName, this._notebook?.title.label ?? '');
  }

  /** Why no sessions show, or '' when they do. */
  get statusText(): string {
    if (!this._notebook) {
      return 'Open a notebook to see its uexec sessions.';
    }
    if (!this._notebook.sessionContext.session?.kernel) {
      return 'This notebook has no kernel.';
    }
    switch (this._connection?.state) {
      case undefined:
        return 'Waiting for the kernel…';
      case 'connecting':
        return 'Connecting to the kernel…';
      case 'unsupported':
        return 'This kernel has no uexec sessions.';
      case 'incompatible':
        return (
          `This kernel speaks uexec protocol v${this._connection.protocolVersion}; ` +
          `this extension speaks v${PROTOCOL_VERSION}.`
        );
      case 'closed':
        return 'Disconnected from the kernel.';
      case 'ready':
        return this._connection.sessions.length ? '' : 'No sessions.';
    }
  }

  private readonly _tracker: INotebookTracker;
  private readonly _tabs: TerminalTabs;
  private readonly _notebookName: HTMLElement;
  private readonly _status: HTMLElement;
  private readonly _error: HTMLElement;
  private readonly _list: HTMLUListElement;
  private readonly _changed = new Signal<this, void>(this);
  private _notebook: NotebookPanel | null = null;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _connection: SessionsConnection | null = null;
}

/**
 * Bring the rows in line with `sessions`, reusing the row of each session:
 * a row replaced between mousedown and mouseup would swallow the click.
 */
function updateRows(list: HTMLUListElement, sessions: readonly SessionInfo[]): void {
  const rows = (): HTMLElement[] => Array.from(list.children) as HTMLElement[];
  const old = new Map(rows().map(row => [row.dataset.sessionId, row]));
  sessions.forEach((info, index) => {
    const key = String(info.session_id);
    const row = old.get(key) ?? createRow(key);
    old.delete(key);
    fillRow(row, info);
    if (rows()[index] !== row) {
      list.insertBefore(row, rows()[index] ?? null);
    }
  });
  old.forEach(row => row.remove());
}

/**
 * One session per row, as JupyterLab's Running Sessions panel lays out its
 * items: the command takes the room there is (ending in an ellipsis, whole
 * in its tooltip), id and state below it, the buttons side by side.
 */
function createRow(sessionId: string): HTMLLIElement {
  const row = document.createElement('li');
  row.className = 'uexec-session-row';
  row.dataset.sessionId = sessionId;
  const main = row.appendChild(document.createElement('div'));
  main.className = 'uexec-session-main';
  const command = main.appendChild(document.createElement('div'));
  command.className = 'uexec-session-command';
  const detail = main.appendChild(document.createElement('div'));
  detail.className = 'uexec-session-detail';
  detail.appendChild(document.createElement('span')).className = 'uexec-session-id';
  detail.appendChild(document.createTextNode(' · '));
  detail.appendChild(document.createElement('span')).className = 'uexec-session-state';
  main.appendChild(document.createElement('div')).className = 'uexec-session-detail uexec-session-kept';
  const actions = row.appendChild(document.createElement('div'));
  actions.className = 'uexec-session-actions';
  for (const name of ['open', 'kill']) {
    actions.appendChild(document.createElement('button')).className = `uexec-${name} jp-mod-styled`;
  }
  return row;
}

function fillRow(row: HTMLElement, info: SessionInfo): void {
  const part = (name: string): HTMLElement => row.querySelector(`.uexec-${name}`) as HTMLElement;
  const command = commandLine(info.command);
  setText(part('session-command'), command);
  const label = sessionLabel(info);
  setText(part('session-id'), label);
  const state = sessionState(info.alive, info.exit_code);
  setText(part('session-state'), state);
  // A line of its own: the panel is narrow, and the id and state line ends in an ellipsis.
  const kept = keptLabel(info);
  setText(part('session-kept'), kept);
  setHidden(part('session-kept'), !kept);
  setTitle(row, `${command}\n${label}, pid ${info.pid}: ${state}${kept ? ` (${kept})` : ''}`);
  const open = part('open');
  setText(open, 'Open');
  setTitle(open, 'Show this session in a terminal tab');
  // An exited session stays listed until closed; `kill` closes it.
  const kill = part('kill');
  setText(kill, info.alive ? 'Kill' : 'Remove');
  setTitle(kill, info.alive ? 'Kill every process of this session' : 'Forget this exited session');
}

// The panel renders on every kernel status change, which is twice per
// message to the kernel (busy, idle), keystrokes in a live view included:
// writing only what changed keeps those renders from touching the page,
// so they cost the browser no layout and no extra frame.
function setText(node: HTMLElement, text: string): void {
  if (node.textContent !== text) {
    node.textContent = text;
  }
}

function setTitle(node: HTMLElement, title: string): void {
  if (node.title !== title) {
    node.title = title;
  }
}

function setHidden(node: HTMLElement, hidden: boolean): void {
  if (node.hidden !== hidden) {
    node.hidden = hidden;
  }
}
