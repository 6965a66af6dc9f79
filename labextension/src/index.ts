/**
 * The JupyterLab plugin: the "uexec sessions" side panel, its commands, and
 * terminal tabs the layout restorer brings back. What only JupyterLab (and
 * Notebook 7) can have; the live view is an anywidget module of the Python
 * package (src/widget.ts, bundled apart) and needs no extension.
 */

import {
  ILayoutRestorer,
  type JupyterFrontEnd,
  type JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Dialog, ICommandPalette, InputDialog, showDialog } from '@jupyterlab/apputils';
import type { DocumentRegistry } from '@jupyterlab/docregistry';
import { INotebookTracker, type INotebookModel, type NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { commandLine, sessionState } from './format';
import { sessionsIcon } from './icons';
import type { SessionInfo } from './protocol';
import { addReattachingRenderer } from './reattach';
import { keepSavedScreensCurrent } from './saving';

export namespace CommandIDs {
  export const showSessions = 'uexec:show-sessions';
  export const openSession = 'uexec:open-session';
}

/** How long "Open session in a terminal tab" waits for the kernel to list its sessions. */
const LIST_TIMEOUT_MS = 10_000;

/** The terminal tabs, once the panel plugin made them: notifications ask whether one shows a session. */
let openTabs: import('./tabs').TerminalTabs | null = null;

const panelPlugin: JupyterFrontEndPlugin<void> = {
  id: 'unified-exec-kernel:sessions',
  description: 'A side panel listing the uexec sessions of the current notebook kernel.',
  autoStart: true,
  optional: [INotebookTracker, ILayoutRestorer, ICommandPalette],
  activate: async (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ): Promise<void> => {
    if (!notebooks) {
      return;
    }
    // Loaded on demand, so xterm.js is not in the start-up path.
    const [{ SessionsPanel }, { TerminalTabs, isTabArgs }] = await Promise.all([
      import('./panel'),
      import('./tabs')
    ]);
    const tabs = new TerminalTabs(app, notebooks);
    openTabs = tabs;
    const panel = new SessionsPanel({ tracker: notebooks, tabs });

    app.commands.addCommand(CommandIDs.showSessions, {
      label: 'Show uexec sessions',
      caption: 'The uexec sessions of the current notebook kernel',
      icon: sessionsIcon,
      execute: () => app.shell.activateById(panel.id)
    });

    app.commands.addCommand(CommandIDs.openSession, {
      label: 'Open session in a terminal tab',
      caption: 'Show a uexec session of the current notebook kernel in a terminal tab',
      icon: sessionsIcon,
      isEnabled: args => isTabArgs(args) || notebooks.currentWidget !== null,
      execute: async (args: ReadonlyPartialJSONObject) => {
        if (isTabArgs(args)) {
          return tabs.open(args);
        }
        // From the palette: the current notebook's sessions, through the panel.
        app.shell.activateById(panel.id);
        const connection = await whenListed(panel, LIST_TIMEOUT_MS);
        if (!connection) {
          await showDialog({
            title: 'No uexec sessions to open',
            body: panel.statusText || 'The kernel did not list its sessions.',
            buttons: [Dialog.okButton()]
          });
          return null;
        }
        const info = await pickSession(connection.sessions);
        return info ? tabs.show(connection, info.session_id, commandLine(info.command)) : null;
      }
    });

    palette?.addItem({ command: CommandIDs.showSessions, category: 'uexec' });
    palette?.addItem({ command: CommandIDs.openSession, category: 'uexec' });

    app.shell.add(panel, 'right', { rank: 1000 });
    if (restorer) {
      restorer.add(panel, panel.id);
      void restorer.restore(tabs.tracker, {
        command: CommandIDs.openSession,
        args: tab => tab.content.args,
        name: tab => `${tab.content.args.kernelId}:${tab.content.args.sessionId}`
      });
    }
  }
};

/** The panel's connection once it has listed sessions, or null after `timeoutMs`. */
function whenListed(
  panel: import('./panel').SessionsPanel,
  timeoutMs: number
): Promise<import('./connection').SessionsConnection | null> {
  return new Promise(resolve => {
    const done = (): void => {
      const connection = panel.listed;
      if (connection || timedOut) {
        clearTimeout(timer);
        panel.changed.disconnect(done);
        resolve(connection && connection.sessions.length ? connection : null);
      }
    };
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      done();
    }, timeoutMs);
    panel.changed.connect(done);
    done();
  });
}

/** One session: that one; several: the user picks. */
async function pickSession(sessions: readonly SessionInfo[]): Promise<SessionInfo | null> {
  if (sessions.length === 1) {
    return sessions[0];
  }
  const label = (info: SessionInfo): string =>
    `${info.session_id}: ${commandLine(info.command)} (${sessionState(info.alive, info.exit_code)})`;
  const items = sessions.map(label);
  const answer = await InputDialog.getItem({
    title: 'Open session in a terminal tab',
    items,
    okLabel: 'Open'
  });
  const index = answer.button.accept && answer.value !== null ? items.indexOf(answer.value) : -1;
  return index >= 0 ? sessions[index] : null;
}

/**
 * A notebook saved while a live view's program prints keeps the screen shown
 * at the save, not the one of its cell's end (saving.ts). Small, and no
 * xterm.js: the views answer for themselves.
 */
const savedScreensPlugin: JupyterFrontEndPlugin<void> = {
  id: 'unified-exec-kernel:saved-screens',
  description: "Writes each open live view's screen into the notebook just before it is saved.",
  autoStart: true,
  // Optional: Voila loads lab extensions too, and has no notebooks to save.
  optional: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, notebooks: INotebookTracker | null): void => {
    if (notebooks) {
      keepSavedScreensCurrent(notebooks);
    }
  }
};

/**
 * A session that ends (or prints the line a `--until` or `watch` waited
 * for) while no view of it is in sight is told in the notification center
 * (notify.ts); the settings turn it off.
 */
const notificationsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'unified-exec-kernel:notifications',
  description: 'Tells in the notification center when a uexec session ends, or prints an awaited line, out of sight.',
  autoStart: true,
  optional: [INotebookTracker, ISettingRegistry],
  activate: async (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker | null,
    settings: ISettingRegistry | null
  ): Promise<void> => {
    const { SessionNotifier, DEFAULT_SETTINGS } = await import('./notify');
    const notifier = new SessionNotifier(app, notebooks, () => openTabs);
    if (!settings) {
      notifier.settings = { ...DEFAULT_SETTINGS };
      return;
    }
    try {
      const loaded = await settings.load(notificationsPlugin.id);
      const read = (): void => {
        const composite = loaded.composite as Partial<typeof DEFAULT_SETTINGS>;
        notifier.settings = { ...DEFAULT_SETTINGS, ...composite };
      };
      read();
      loaded.changed.connect(read);
    } catch (error) {
      console.warn(`uexec: notification settings could not be read (${error}); using the defaults`);
      notifier.settings = { ...DEFAULT_SETTINGS };
    }
  }
};

/**
 * A live view whose widget model is gone (Restart Kernel, then a reload)
 * comes back by its session, or shows its saved screen and says it ended
 * (reattach.ts). Each notebook's own rendermime gets the renderer, where
 * ipywidgets puts its own: it needs the notebook's kernel.
 */
const reattachPlugin: JupyterFrontEndPlugin<void> = {
  id: 'unified-exec-kernel:reattach',
  description: 'Shows a live view whose widget model is gone by its session: attached again, or its saved last screen.',
  autoStart: true,
  activate: (app: JupyterFrontEnd): void => {
    app.docRegistry.addWidgetExtension('Notebook', {
      createNew: (panel: NotebookPanel, context: DocumentRegistry.IContext<INotebookModel>) => {
        addReattachingRenderer({ rendermime: panel.content.rendermime, sessionContext: context.sessionContext });
      }
    });
  }
};

export default [panelPlugin, savedScreensPlugin, notificationsPlugin, reattachPlugin];
