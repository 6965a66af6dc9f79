/**
 * The plugins: the ipywidgets module behind Python's `TerminalWidget`, and
 * the "uexec sessions" side panel. Both only use optional services, so the
 * extension loads in Notebook 7 and without `@jupyter-widgets/base`.
 */

import {
  ILayoutRestorer,
  type JupyterFrontEnd,
  type JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';

import { MODULE_NAME, MODULE_VERSION } from './version';

const widgetsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'unified-exec-kernel:widgets',
  description: 'Live terminal views for TerminalWidget.',
  autoStart: true,
  activate: async (app: JupyterFrontEnd): Promise<void> => {
    // `@jupyter-widgets/base` is shared from the widget manager, never
    // bundled: when the manager is not installed, this import fails, and so
    // must only this plugin. Its registry token is only reachable through it.
    let base: typeof import('@jupyter-widgets/base');
    try {
      base = await import('@jupyter-widgets/base');
    } catch {
      console.info(`${MODULE_NAME}: no Jupyter widget manager; TerminalWidget is unavailable`);
      return;
    }
    const registry = await app.resolveOptionalService(base.IJupyterWidgetRegistry);
    registry?.registerWidget({
      name: MODULE_NAME,
      version: MODULE_VERSION,
      exports: () => import('./widget')
    });
  }
};

const panelPlugin: JupyterFrontEndPlugin<void> = {
  id: 'unified-exec-kernel:sessions',
  description: 'A side panel listing the uexec sessions of the current notebook kernel.',
  autoStart: true,
  optional: [INotebookTracker, ILayoutRestorer],
  activate: async (
    app: JupyterFrontEnd,
    tracker: INotebookTracker | null,
    restorer: ILayoutRestorer | null
  ): Promise<void> => {
    if (!tracker) {
      return;
    }
    // Loaded on demand like the widget, so xterm.js is not in the start-up path.
    const { SessionsPanel } = await import('./panel');
    const panel = new SessionsPanel({ tracker, shell: app.shell });
    app.shell.add(panel, 'right', { rank: 1000 });
    restorer?.add(panel, panel.id);
  }
};

export default [widgetsPlugin, panelPlugin];
