/**
 * The live view: the front end of Python's `TerminalWidget`, as an
 * anywidget module. anywidget's own front end loads it in JupyterLab,
 * Notebook 7, Voilà, VS Code, Colab or marimo, so no extension of ours is
 * needed; the bundle (xterm.js included) ships inside the Python package.
 * The carrier is the direct channel where the page's server has our
 * extension (direct.ts), else the widget's custom messages, which keep
 * flowing after the cell that displayed it has finished.
 */

import { CarrierBase } from './carrier';
import { DirectCarrier, DirectFirstCarrier, directUrl, type FallbackCarrier } from './direct';
import { DISCONNECTED_NOTICE, viewState } from './format';
import { asKernelMessage, type EndReason, type FrontEndMessage } from './protocol';
import { renderPlayer } from './player';
import { caption, SNAPSHOT_EVENT, type SnapshotRequest } from './snapshot';
import { SessionTerminal } from './terminal';

/** The traits `TerminalWidget` syncs. */
interface Traits {
  session_id: number;
  title: string;
  alive: boolean;
  exit_code: number | null;
  closed: boolean;
  /** The kernel's id, for the direct channel; empty (or absent, from an older kernel) when unknown. */
  kernel_id?: string;
  /** The last screen the kernel drew (live/loaded.py), kept current while the session prints. */
  screen_html?: string;
  /** Which export renders the widget: `default` (a live terminal) or `player` (a replay). */
  view?: string;
}

type Callback = (...args: any[]) => void;

/**
 * What anywidget hands a module (its `AnyModel`), reduced to what we use;
 * `on` also reaches the widget manager's own events (`comm_live_update`).
 */
export interface WidgetModel {
  get<K extends keyof Traits>(name: K): Traits[K];
  on(name: string, callback: Callback): void;
  off(name?: string | null, callback?: Callback | null): void;
  send(content: unknown, callbacks?: unknown, buffers?: unknown[]): void;
}

/** A view's carrier: every view of the widget receives every message. */
class WidgetCarrier extends CarrierBase {
  constructor(private readonly _model: WidgetModel) {
    super();
    _model.on('msg:custom', this._onCustom);
    // A kernel restart only marks the comm dead (ipywidgets' managers set
    // `comm_live` to false and never back); `close()` in Python closes it.
    _model.on('comm_live_update', this._onGone);
    _model.on('comm:close', this._onClosed);
  }

  /** `close()` in Python closed the widget: its views end, kept session or not. */
  get closedByOwner(): boolean {
    return this._closedByOwner;
  }

  // `session_id` is left out: on this carrier it is the widget's.
  send(msg: FrontEndMessage): void {
    if (!this.isClosed) {
      this._model.send(msg);
    }
  }

  dispose(): void {
    this._model.off('msg:custom', this._onCustom);
    this._model.off('comm_live_update', this._onGone);
    this._model.off('comm:close', this._onClosed);
  }

  private readonly _onCustom = (content: unknown): void => {
    const msg = asKernelMessage(content);
    if (msg) {
      this.deliver(msg);
    }
  };

  private readonly _onGone = (): void => {
    this.close(DISCONNECTED_NOTICE);
  };

  private readonly _onClosed = (): void => {
    this._closedByOwner = !this.isClosed;
    this._onGone();
  };

  private _closedByOwner = false;
}

/**
 * The direct channel's URL, from the page's `jupyter-config-data` (Lab,
 * Notebook 7, Voilà); null where there is none (VS Code, Colab) or the
 * kernel's id is unknown: those use the widget's messages.
 */
function pageDirectUrl(kernelId: string | undefined): string | null {
  const config = document.getElementById('jupyter-config-data')?.textContent;
  if (!kernelId || !config) {
    return null;
  }
  try {
    const { baseUrl, wsUrl, token } = JSON.parse(config) as Record<string, unknown>;
    return directUrl(kernelId, {
      baseUrl: typeof baseUrl === 'string' ? baseUrl : undefined,
      wsUrl: typeof wsUrl === 'string' ? wsUrl : undefined,
      token: typeof token === 'string' ? token : undefined,
      pageUrl: location.href
    });
  } catch {
    return null;
  }
}

const TRAIT_EVENTS = ['change:title', 'change:alive', 'change:exit_code', 'change:closed'];

/** How to open a kept session again where its view cannot go on after a restart. */
function reopenHint(sessionId: number): string {
  return (
    'kept sessions outlive a restart: open this one again with ' +
    `%%uexec --live -s ${sessionId} or from the Sessions panel`
  );
}

/**
 * A view's parts, kept so that a later view of the same session can adopt
 * them: JupyterLab renders an output again on every display update (the
 * kernel refreshes the saved snapshot when a cell finishes) and drops the
 * old view's node without disposing it. The new view takes the old one's
 * terminal as it is (screen, scrollback, focus) instead of a blank one
 * replaying the session; the old view's cleanup then does nothing.
 */
interface Shown {
  root: HTMLElement;
  owner: object;
  hadFocus: boolean;
  dispose: () => void;
  terminal: SessionTerminal;
}

const shownBySession = new Map<number, Set<Shown>>();

function render({ model, el }: { model: WidgetModel; el: HTMLElement }): () => void {
  return renderView(model, el);
}

/**
 * A live view of `model`'s session in `el`; its cleanup is returned.
 * `fallback`: what carries it where the direct channel does not, the
 * widget's messages unless given (a view whose widget model is gone after
 * a kernel restart is carried by the kernel's comm: reattach.ts).
 */
export function renderView(model: WidgetModel, el: HTMLElement, fallback?: FallbackCarrier): () => void {
  const sessionId = model.get('session_id');
  const owner = {};
  const shown = [...(shownBySession.get(sessionId) ?? [])].find(view => !view.root.isConnected);
  if (shown) {
    el.classList.add('uexec-widget');
    el.append(...shown.root.childNodes);
    shown.root = el;
    shown.owner = owner;
    shown.terminal.refit();
    if (shown.hadFocus) {
      shown.terminal.focus();
    }
  }
  const view = shown ?? build(model, el, owner, fallback ?? new WidgetCarrier(model));
  return () => {
    if (view.owner === owner) {
      view.dispose();
    }
  };
}

function build(model: WidgetModel, el: HTMLElement, owner: object, fallback: FallbackCarrier): Shown {
  el.classList.add('uexec-widget');
  const header = el.appendChild(document.createElement('div'));
  header.className = 'uexec-widget-header';
  const title = header.appendChild(document.createElement('span'));
  title.className = 'uexec-widget-title';
  const state = header.appendChild(document.createElement('span'));
  state.className = 'uexec-widget-state';

  const sessionId = model.get('session_id');
  const url = pageDirectUrl(model.get('kernel_id'));
  const carrier = new DirectFirstCarrier(
    url ? new DirectCarrier({ url, sessionId }) : null,
    fallback,
    { kept: { reopen: reopenHint } }
  );
  // What the view heard over its carrier (`attached`, `exited`) is what it
  // says: the traits may be a step behind it, and after a kernel restart
  // they are the old kernel's, frozen. Until it hears, the traits speak.
  const heard = {
    told: false,
    alive: model.get('alive'),
    exitCode: model.get('exit_code'),
    closed: false,
    kept: false,
    reason: undefined as EndReason | undefined
  };
  let waiting = false;
  let paused = false;
  /** What the terminal says beside a full-screen program's rows (a kept session's restart). */
  let notice = '';
  /** The session's state as the view knows it, in the words every view uses (format.ts). */
  const words = (): string => {
    const told = heard.told || carrier.outlivedFallback;
    return viewState(
      told ? heard.alive : model.get('alive'),
      told ? heard.exitCode : model.get('exit_code'),
      !carrier.isClosed,
      told ? heard.closed : model.get('closed') === true,
      heard.kept,
      heard.reason
    );
  };
  const update = (): void => {
    title.textContent = model.get('title') || `uexec ${model.get('session_id')}`;
    title.title = title.textContent;
    const shown = words();
    state.textContent = waiting
      ? 'reconnecting'
      : paused && shown === 'running'
        ? 'running · output paused (Ctrl+Q resumes)'
        : notice && shown === 'running'
          ? `running · ${notice}`
          : shown;
  };
  const stopListening = carrier.listen({
    received: msg => {
      if (msg.type === 'attached') {
        Object.assign(heard, { told: true, alive: msg.alive, exitCode: msg.exit_code, kept: msg.kept === true });
      } else if (msg.type === 'exited') {
        Object.assign(heard, {
          told: true,
          alive: false,
          exitCode: msg.exit_code,
          closed: msg.closed === true,
          reason: msg.reason
        });
      } else {
        return;
      }
      update();
    },
    closed: () => {
      waiting = false;
      update();
    },
    interrupted: () => {
      waiting = true;
      update();
    },
    restarted: () => {
      waiting = false;
      update();
    }
  });
  // One event per call: not every host's model takes a space-separated list.
  for (const name of TRAIT_EVENTS) {
    model.on(name, update);
  }
  update();

  const terminal = new SessionTerminal({
    carrier,
    sessionId,
    pausedChanged: now => {
      paused = now;
      update();
    },
    noticeChanged: now => {
      notice = now;
      update();
    }
  });
  el.appendChild(terminal.node);
  // Before a save, the lab extension asks for what the view shows (saving.ts):
  // the terminal's screen, else (not opened yet) the kernel's last drawing.
  const answerSnapshot = (event: Event): void => {
    const request = (event as CustomEvent<SnapshotRequest | undefined>).detail;
    if (!request) {
      return;
    }
    const shown = terminal.snapshot();
    request.answer = {
      screen: shown?.screen ?? String(model.get('screen_html') ?? ''),
      text: shown?.text ?? null,
      caption: caption(sessionId, model.get('title'), words())
    };
  };
  terminal.node.addEventListener(SNAPSHOT_EVENT, answerSnapshot);
  const views = shownBySession.get(sessionId) ?? new Set<Shown>();
  shownBySession.set(sessionId, views);
  const view: Shown = {
    root: el,
    owner,
    hadFocus: false,
    terminal,
    dispose: () => {
      views.delete(view);
      if (views.size === 0) {
        shownBySession.delete(sessionId);
      }
      for (const name of TRAIT_EVENTS) {
        model.off(name, update);
      }
      stopListening();
      terminal.node.removeEventListener(SNAPSHOT_EVENT, answerSnapshot);
      terminal.dispose();
      carrier.dispose();
      view.root.replaceChildren();
    }
  };
  views.add(view);
  // A node taken out of the page loses focus without a reliable `focusout`:
  // what counts is whether it still had focus when it was dropped.
  terminal.node.addEventListener('focusin', () => {
    view.hadFocus = true;
  });
  terminal.node.addEventListener('focusout', () => {
    queueMicrotask(() => {
      if (terminal.node.isConnected) {
        view.hadFocus = false;
      }
    });
  });
  return view;
}

/** The replay of a recording (`ReplayWidget`), with the same xterm.js. */
export const player = { render: renderPlayer };

/**
 * What anywidget renders where the widget carries this module itself as its
 * `_esm` (behind a gateway: no loader picks the export), so it picks the view
 * the widget names; the loader picks the named export itself.
 */
export default {
  render(context: { model: WidgetModel; el: HTMLElement }): () => void {
    return context.model.get('view') === 'player' ? renderPlayer(context) : render(context);
  }
};
