/**
 * The ipywidgets face: `TerminalWidget` in Python, a live terminal view in
 * the notebook. The carrier is the widget's own custom messages, which keep
 * flowing after the cell that displayed it has finished.
 */

import {
  DOMWidgetModel,
  DOMWidgetView,
  type WidgetModel
} from '@jupyter-widgets/base';
import type { JSONObject } from '@lumino/coreutils';
import type { Message } from '@lumino/messaging';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { stateLabel } from './format';
import { asKernelMessage, type FrontEndMessage, type KernelMessage } from './protocol';
import { SessionTerminal, type Carrier } from './terminal';
import { MODULE_NAME, MODULE_VERSION } from './version';

export class TerminalModel extends DOMWidgetModel {
  defaults(): ReturnType<DOMWidgetModel['defaults']> {
    return {
      ...super.defaults(),
      _model_name: 'TerminalModel',
      _view_name: 'TerminalView',
      _model_module: MODULE_NAME,
      _view_module: MODULE_NAME,
      _model_module_version: MODULE_VERSION,
      _view_module_version: MODULE_VERSION,
      session_id: 0,
      title: '',
      alive: true,
      exit_code: null
    };
  }
}

/** A view's carrier: the widget's custom messages, which all its views receive. */
class WidgetCarrier implements Carrier {
  constructor(private readonly _model: WidgetModel) {
    _model.on('msg:custom', this._onCustom, this);
    // A kernel restart only marks the comm dead; `close()` in Python closes it.
    _model.on(
      'comm_live_update',
      () => {
        if (!_model.comm_live) {
          this._onClose();
        }
      },
      this
    );
    _model.on('comm:close', this._onClose, this);
  }

  get received(): Signal<Carrier, KernelMessage> {
    return this._received;
  }

  get closed(): Signal<Carrier, string> {
    return this._closed;
  }

  // `session_id` is left out: on this carrier it is the widget's.
  send(msg: FrontEndMessage): void {
    this._model.send(msg as unknown as JSONObject, {});
  }

  dispose(): void {
    this._model.off(null, null, this);
    Signal.clearData(this);
  }

  private _onCustom(content: unknown): void {
    const msg = asKernelMessage(content);
    if (msg) {
      this._received.emit(msg);
    }
  }

  private _onClose(): void {
    this._closed.emit('disconnected from the kernel');
  }

  private readonly _received = new Signal<Carrier, KernelMessage>(this);
  private readonly _closed = new Signal<Carrier, string>(this);
}

export class TerminalView extends DOMWidgetView {
  render(): void {
    this.el.classList.add('uexec-widget');
    const header = document.createElement('div');
    header.className = 'uexec-widget-header';
    this._title = header.appendChild(document.createElement('span'));
    this._title.className = 'uexec-widget-title';
    this._state = header.appendChild(document.createElement('span'));
    this._state.className = 'uexec-widget-state';
    this.el.appendChild(header);
    this.listenTo(this.model, 'change:title change:alive change:exit_code', this._update);
    this._update();

    this._carrier = new WidgetCarrier(this.model);
    this._terminal = new SessionTerminal({
      carrier: this._carrier,
      sessionId: this.model.get('session_id')
    });
  }

  /**
   * The view's own Lumino widget is told when it enters the document; only
   * then can xterm measure its font, so the terminal is attached there.
   */
  processLuminoMessage(msg: Message): void {
    super.processLuminoMessage(msg);
    if (msg.type === 'after-attach' && !this._terminal.isAttached) {
      Widget.attach(this._terminal, this.el);
    } else if (msg.type === 'before-detach' && this._terminal.isAttached) {
      Widget.detach(this._terminal);
    }
  }

  remove(): this {
    this._terminal.dispose();
    this._carrier.dispose();
    return super.remove();
  }

  private _update(): void {
    const title: string = this.model.get('title');
    this._title.textContent = title || `uexec ${this.model.get('session_id')}`;
    this._state.textContent = stateLabel(this.model.get('alive'), this.model.get('exit_code'));
  }

  private _title!: HTMLElement;
  private _state!: HTMLElement;
  private _carrier!: WidgetCarrier;
  private _terminal!: SessionTerminal;
}
