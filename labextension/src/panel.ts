/**
 * The "uexec sessions" side panel: the sessions of the current notebook's
 * kernel, with buttons to open one in a terminal tab or kill it.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget } from '@jupyterlab/apputils';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';
import type { Message } from '@lumino/messaging';
import { SplitPanel, Widget } from '@lumino/widgets';

import { SessionsConnection } from './connection';
import { commandLine, stateLabel } from './format';
import { PROTOCOL_VERSION, type SessionInfo } from './protocol';
import { SessionTerminal } from './terminal';

export const sessionsIcon = new LabIcon({
  name: 'unified-exec-kernel:sessions',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<path class="jp-icon3" fill="#616161" d="M3 4h18a1 1 0 0 1 1 1v14a1 1 0 0 1-1 1H3a1 1 0 0 1-1-1V5a1 1 0 0 1 1-1zm1 2v12h16V6zm2 2.5L7.4 7l4.5 4.5-4.5 4.5L6 14.6l3.1-3.1zM12 15h6v2h-6z"/>' +
    '</svg>'
});

export namespace SessionsPanel {
  export interface IOptions {
    tracker: INotebookTracker;
    shell: JupyterFrontEnd.IShell;
  }
}

/** Kernel states in which a comm can be opened and answered. */
const REACHABLE: ReadonlySet<Kernel.Status> = new Set(['idle', 'busy']);

let tabCount = 0;

export class SessionsPanel extends Widget {
  constructor(options: SessionsPanel.IOptions) {
    super();
    this._tracker = options.tracker;
    this._shell = options.shell;
    this.id = 'uexec-sessions-panel';
    this.addClass('uexec-sessions-panel');
    this.title.icon = sessionsIcon;
    this.title.caption = 'uexec sessions';

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
    this._table = this.node.appendChild(document.createElement('table'));
    this._table.className = 'uexec-sessions-table';
    const head = this._table.createTHead().insertRow();
    for (const name of ['id', 'command', 'state', '']) {
      head.appendChild(document.createElement('th')).textContent = name;
    }
    this._rows = this._table.createTBody();

    this._tracker.currentChanged.connect(this._onNotebookChanged, this);
    this._onNotebookChanged();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._connection?.release();
    super.dispose();
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
      this._connection?.kill(info.session_id);
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
    this._connection = new SessionsConnection(kernel);
    this._connection.changed.connect(this._render, this);
    this._connection.failed.connect(this._onFailed, this);
  }

  private _disconnect(): void {
    this._connection?.changed.disconnect(this._render, this);
    this._connection?.failed.disconnect(this._onFailed, this);
    this._connection?.release();
    this._connection = null;
    this._kernel = null;
    // Tabs already open keep their old connection; new ones use the next.
    this._tabs = new Map();
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
    const connection = this._connection;
    if (!connection) {
      return;
    }
    const id = info.session_id;
    const existing = this._tabs.get(id);
    if (existing) {
      this._shell.activateById(existing.id);
      return;
    }
    const carrier = connection.carrier(id);
    const tab = new MainAreaWidget({ content: new SessionTerminal({ carrier, sessionId: id }) });
    tab.id = `uexec-terminal-${++tabCount}`;
    tab.title.label = `uexec ${id}: ${commandLine(info.command)}`;
    tab.title.icon = sessionsIcon;
    tab.title.closable = true;
    tab.disposed.connect(() => {
      carrier.dispose();
      if (this._tabs.get(id) === tab) {
        this._tabs.delete(id);
      }
    });
    this._tabs.set(id, tab);
    this._shell.add(tab, 'main');
    if (tab.isAttached) {
      this._shell.activateById(tab.id);
      return;
    }
    // Notebook 7's main area holds only its notebook and ignores the add;
    // its bottom panel takes the terminal instead.
    this._shell.add(tab, 'down');
    this._shell.activateById(tab.id);
    makeRoomBelow(tab);
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
    this._status.textContent = this._statusText();
    this._table.hidden = sessions.length === 0;
    updateRows(this._rows, sessions);
  }

  // The title changes on every focus change: touching only the name keeps
  // the buttons in place, or a click in progress would lose its target.
  private _renderName(): void {
    this._notebookName.textContent = this._notebook?.title.label ?? '';
  }

  private _statusText(): string {
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
        return this._connection.sessions.length ? '' : 'No sessions yet.';
    }
  }

  private readonly _tracker: INotebookTracker;
  private readonly _shell: JupyterFrontEnd.IShell;
  private readonly _notebookName: HTMLElement;
  private readonly _status: HTMLElement;
  private readonly _error: HTMLElement;
  private readonly _table: HTMLTableElement;
  private readonly _rows: HTMLTableSectionElement;
  private _notebook: NotebookPanel | null = null;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _connection: SessionsConnection | null = null;
  private _tabs = new Map<number, MainAreaWidget<SessionTerminal>>();
}

/**
 * Bring the rows in line with `sessions`, reusing the row of each session:
 * a row replaced between mousedown and mouseup would swallow the click.
 */
function updateRows(body: HTMLTableSectionElement, sessions: readonly SessionInfo[]): void {
  const old = new Map(Array.from(body.rows, row => [row.dataset.sessionId, row]));
  sessions.forEach((info, index) => {
    const key = String(info.session_id);
    const row = old.get(key) ?? createRow(key);
    old.delete(key);
    fillRow(row, info);
    if (body.rows[index] !== row) {
      body.insertBefore(row, body.rows[index] ?? null);
    }
  });
  old.forEach(row => row.remove());
}

function createRow(sessionId: string): HTMLTableRowElement {
  const row = document.createElement('tr');
  row.className = 'uexec-session-row';
  row.dataset.sessionId = sessionId;
  for (const name of ['id', 'command', 'state', 'actions']) {
    row.insertCell().className = `uexec-session-${name}`;
  }
  const actions = row.cells[3];
  for (const name of ['open', 'kill']) {
    actions.appendChild(document.createElement('button')).className = `uexec-${name} jp-mod-styled`;
  }
  return row;
}

function fillRow(row: HTMLTableRowElement, info: SessionInfo): void {
  const [id, command, state, actions] = Array.from(row.cells);
  const [open, kill] = Array.from(actions.children) as HTMLButtonElement[];
  id.textContent = String(info.session_id);
  command.textContent = command.title = commandLine(info.command);
  state.textContent = stateLabel(info.alive, info.exit_code);
  open.textContent = 'Open';
  open.title = 'Show this session in a terminal tab';
  // An exited session stays listed until closed; `kill` closes it.
  kill.textContent = info.alive ? 'Kill' : 'Remove';
  kill.title = info.alive ? 'Kill every process of this session' : 'Forget this exited session';
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
