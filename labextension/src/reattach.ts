/**
 * A live view whose widget model is gone comes back by its session.
 *
 * ipywidgets' models live in the kernel: after Restart Kernel, a reloaded
 * page (the notebook opened later, a collaborator's page) has no model for
 * a saved live view, and ipywidgets says `Error displaying widget: model
 * not found`, though a kept session runs on in the new kernel. A live
 * view's output also says which session it shows (sessionref.ts); in a
 * notebook of JupyterLab or Notebook 7 that mime type ranks before the
 * widget's, so this renderer draws the output. It draws the widget's own
 * view (the notebook's widget renderer, as before) and asks the kernel
 * whether the view's model is there (`comm_info_request`, the question
 * ipywidgets' manager asks to restore its models). Where it is not, the
 * session is attached again over the kernel's comm and direct channel, as
 * a terminal tab is (reattached.ts); a session that is gone shows its saved
 * last screen and says it ended. Elsewhere (Voilà, VS Code, nbviewer) the
 * mime type is unknown and the output renders as before.
 *
 * No xterm.js here: the view is loaded on demand.
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { Kernel } from '@jupyterlab/services';
import { Panel } from '@lumino/widgets';

import { ENDED_WITH_THE_KERNEL } from './format';
import { modelGone, NO_KERNEL, SESSION_MIME, sessionRef, WIDGET_VIEW_MIME, type SessionRef } from './sessionref';

/** Before ipywidgets' renderer (rank -10): the output's mime types are ranked by this. */
export const RANK = -20;

/** What the renderer uses of a notebook: its rendermime (with the widget renderer) and its kernel. */
export interface NotebookHost {
  rendermime: RendermimeLike;
  sessionContext: {
    ready: Promise<void>;
    session?: { kernel?: Kernel.IKernelConnection | null } | null;
    isDisposed: boolean;
  };
}

interface RendermimeLike {
  getFactory(mimeType: string): IRenderMime.IRendererFactory | undefined;
  createRenderer(mimeType: string): IRenderMime.IRenderer;
  addFactory(factory: IRenderMime.IRendererFactory, rank?: number): void;
}

/** Our mime type, drawn by `ReattachingRenderer`, in this notebook's rendermime. */
export function addReattachingRenderer(host: NotebookHost): void {
  host.rendermime.addFactory(
    { safe: false, mimeTypes: [SESSION_MIME], createRenderer: () => new ReattachingRenderer(host) },
    RANK
  );
}

export class ReattachingRenderer extends Panel implements IRenderMime.IRenderer {
  constructor(private readonly _host: NotebookHost) {
    super();
    this.addClass('uexec-reattach');
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._model = model;
    if (this._widgetView) {
      // An update of the display (the kernel's, at its cell's end): the widget's renderer renders it again, as before.
      return this._widgetView.renderModel(model);
    }
    if (!this._deciding) {
      this._deciding = true;
      void this._decide();
    }
  }

  dispose(): void {
    this._cleanup?.();
    this._cleanup = null;
    super.dispose();
  }

  private async _decide(): Promise<void> {
    const ref = sessionRef(this._model?.data[SESSION_MIME]);
    const context = this._host.sessionContext;
    await context.ready.catch(() => undefined);
    // ipywidgets binds this notebook's widget renderer to its manager on the
    // same resolution of `ready`; a task later it has.
    await new Promise(resolve => setTimeout(resolve, 0));
    if (this.isDisposed) {
      return;
    }
    const kernel = context.isDisposed ? null : context.session?.kernel ?? null;
    if (!ref) {
      this._showWidgetView();
      return;
    }
    if (!kernel) {
      return this._takeOver(null, ref, NO_KERNEL);
    }
    if (ref.kernel_id && kernel.id !== ref.kernel_id) {
      // Session ids start at 0 in each kernel: this kernel's session of that id is another program.
      return this._takeOver(null, ref, ENDED_WITH_THE_KERNEL);
    }
    this._showWidgetView();
    let comms: Record<string, unknown>;
    try {
      const reply = await kernel.requestCommInfo({ target_name: 'jupyter.widget' });
      if (reply.content.status !== 'ok') {
        return;
      }
      comms = reply.content.comms;
    } catch {
      return; // the kernel went meanwhile (a restart): the widget's view says what it knows
    }
    if (!this.isDisposed && this._model && modelGone(this._model.data, comms)) {
      return this._takeOver(kernel, ref, '');
    }
  }

  private _showWidgetView(): void {
    let view: IRenderMime.IRenderer;
    try {
      view = this._host.rendermime.createRenderer(WIDGET_VIEW_MIME);
    } catch {
      return; // no widget renderer in this page (ipywidgets' extension is off)
    }
    this._widgetView = view;
    this.addWidget(view);
    if (this._model) {
      void view.renderModel(this._model);
    }
  }

  /** The session again over the kernel's comm (`kernel`), or, without one (`gone` says why), its last screen. */
  private async _takeOver(kernel: Kernel.IKernelConnection | null, ref: SessionRef, gone: string): Promise<void> {
    const view = this._widgetView;
    this._widgetView = null;
    view?.dispose();
    const { showSession } = await import('./reattached');
    if (this.isDisposed || !this._model) {
      return;
    }
    this._cleanup = await showSession({ node: this.node, kernel, ref, gone, saved: this._model.data['text/html'] });
    if (this.isDisposed) {
      this._cleanup();
    }
  }

  private _model: IRenderMime.IMimeModel | null = null;
  private _widgetView: IRenderMime.IRenderer | null = null;
  private _deciding = false;
  private _cleanup: (() => void) | null = null;
}
