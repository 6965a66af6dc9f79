/**
 * What `TerminalWidget` carries as its anywidget module: a loader of a few
 * KB. anywidget keeps a widget's `_esm` in its state, and a notebook saved
 * with widget state (JupyterLab's option; nbclient, so `nbconvert --execute`,
 * by default) stored one ~350 KB copy of xterm.js per live view. The loader
 * asks the kernel for the real module (widget.ts, bundled) over the widget's
 * own messages, once per page, and hands each view to it. Until it arrives,
 * and for good where no kernel answers (an HTML export, a page restored
 * without its kernel), the view shows the terminal's last screen that the
 * kernel keeps in `screen_html`.
 *
 * Bundled alone and kept small: it imports only buffers.ts and requests.ts.
 */

import { asBytes } from './buffers';
import { SharedRequests } from './requests';

interface Model {
  get(name: string): unknown;
  on(name: string, callback: (...args: any[]) => void): void;
  off(name?: string | null, callback?: ((...args: any[]) => void) | null): void;
  send(content: unknown, callbacks?: unknown, buffers?: unknown[]): void;
}

interface ViewContext {
  model: Model;
  el: HTMLElement;
  [other: string]: unknown;
}

type Cleanup = () => void;

interface View {
  render(context: ViewContext): Cleanup | Promise<Cleanup> | void;
}

/** The views the module exports: `default` (a live terminal), `player` (a replay). */
type TerminalModule = Record<string, View | undefined> & { default: View };

const STYLE_ID = 'uexec-terminal-styles';
/** The page's requests for the module, by the hash the kernel gave it (one page may hold several loaders). */
const KEY = '__uexecTerminalModuleRequests';

function requests(): SharedRequests<TerminalModule> {
  const scope = globalThis as unknown as Record<string, SharedRequests<TerminalModule>>;
  return (scope[KEY] ??= new SharedRequests<TerminalModule>());
}

/** The module: asked of the kernel through this widget too until one answers; never settles while none does. */
function load(model: Model): Promise<TerminalModule> {
  return requests().request(String(model.get('frontend_hash') ?? ''), settle => {
    const answer = (content: any, buffers: unknown[] = []): void => {
      if (content?.type === 'module' && buffers.length >= 2) {
        settle(importModule(buffers[0], buffers[1]));
      } else if (content?.type === 'module' || content?.type === 'error') {
        settle(Promise.reject(new Error(String(content.message ?? 'no module'))));
      }
    };
    model.on('msg:custom', answer);
    try {
      model.send({ type: 'module' });
    } catch (error) {
      settle(Promise.reject(error as Error));
    }
    return () => model.off('msg:custom', answer);
  });
}

function importModule(script: unknown, styles: unknown): Promise<TerminalModule> {
  if (!document.getElementById(STYLE_ID)) {
    const style = document.head.appendChild(document.createElement('style'));
    style.id = STYLE_ID;
    style.textContent = new TextDecoder().decode(asBytes(styles));
  }
  const url = URL.createObjectURL(new Blob([asBytes(script) as BlobPart], { type: 'text/javascript' }));
  return import(/* webpackIgnore: true */ /* @vite-ignore */ url).finally(() => URL.revokeObjectURL(url));
}

function showLastScreen(model: Model, el: HTMLElement, note: string): void {
  const screen = el.appendChild(document.createElement('div'));
  screen.className = 'uexec-last-screen';
  // The kernel's own rendering of its session (screen/html.py): escaped text in styled spans.
  screen.innerHTML = String(model.get('screen_html') ?? '');
  if (note) {
    const caption = screen.appendChild(document.createElement('div'));
    caption.textContent = note;
  }
}

async function render(context: ViewContext): Promise<Cleanup> {
  const { model, el } = context;
  showLastScreen(model, el, '');
  let module: TerminalModule;
  try {
    module = await load(model);
  } catch (error) {
    el.replaceChildren();
    showLastScreen(model, el, `[the live view could not load: ${(error as Error).message}]`);
    return () => el.replaceChildren();
  }
  el.replaceChildren();
  const view = module[String(model.get('view') ?? 'default')] ?? module.default;
  const cleanup = await view.render(context);
  return () => {
    if (typeof cleanup === 'function') {
      cleanup();
    }
  };
}

export default { render };
