/**
 * How a view draws its rows: with WebGL where the page has a GPU to run it,
 * as JupyterLab's own terminal does, else with xterm's DOM renderer; and in
 * which frame xterm moves its textarea (`moveTextareaInFrames`).
 *
 * The DOM renderer rewrites a row's spans for each echo, so the echo's
 * frame recalculates style and lays out the view, and in a notebook page
 * that costs more than in a terminal's page. WebGL draws on a canvas and
 * lays out nothing.
 *
 * Not without a GPU: a software WebGL (SwiftShader, llvmpipe) draws each
 * frame on the CPU, and a flood (`seq 1 2000000`) then took 3.2 s at 54
 * fps where the DOM renderer took 1.7-1.8 s at 59-60 (`bench_live.py
 * keys_echo`, `flood_terminal`, on 2 cores without a GPU). A browser that
 * knows refuses a context asked for with `failIfMajorPerformanceCaveat`;
 * the renderer's name tells the rest.
 *
 * A page keeps a limited number of WebGL contexts (16 in Chromium) and
 * takes the oldest one away when a new one is made; a lost context (that,
 * a GPU reset, a driver that refuses) hands the view back to the DOM
 * renderer, which xterm restores when the addon is disposed.
 */

import type { ITerminalAddon, IEvent } from '@xterm/xterm';

/** What of xterm's WebglAddon this module uses; a fake stands in for it in tests. */
export interface IWebglRenderer extends ITerminalAddon {
  readonly onContextLoss: IEvent<void>;
}

/** What of xterm's Terminal this module uses. */
export interface IAddonHost {
  loadAddon(addon: ITerminalAddon): void;
}

export type Renderer = 'webgl' | 'dom';

/**
 * Draw `term` with WebGL if `available()`, through `create()`'s addon; else,
 * or when it fails to start, with the DOM renderer. `changed(renderer)` is
 * told which draws, now and after a lost context.
 */
export function drawWithWebgl(
  term: IAddonHost,
  create: () => IWebglRenderer,
  available: () => boolean = webglAvailable,
  changed: (renderer: Renderer) => void = () => undefined
): void {
  if (!available()) {
    changed('dom');
    return;
  }
  let addon: IWebglRenderer;
  try {
    addon = create();
    term.loadAddon(addon);
  } catch {
    changed('dom'); // no context after all (a blocklisted GPU): xterm kept its DOM renderer
    return;
  }
  addon.onContextLoss(() => {
    addon.dispose();
    changed('dom');
  });
  changed('webgl');
}

/** The page can make a WebGL2 context (the addon needs version 2) that a GPU runs. */
export function webglAvailable(): boolean {
  if (_available === undefined) {
    try {
      const context = document.createElement('canvas').getContext('webgl2', { failIfMajorPerformanceCaveat: true });
      _available = context !== null && !isSoftwareRenderer(rendererName(context));
      // Give the probe's context back at once: the page's budget of contexts is small.
      context?.getExtension('WEBGL_lose_context')?.loseContext();
    } catch {
      _available = false;
    }
  }
  return _available;
}

/**
 * A WebGL implementation that draws on the CPU: Chromium's SwiftShader,
 * Mesa's llvmpipe and softpipe, Windows' Basic Render Driver. Chromium
 * grants `failIfMajorPerformanceCaveat` contexts on SwiftShader, so the
 * name is what tells.
 */
export function isSoftwareRenderer(name: string): boolean {
  return /swiftshader|llvmpipe|softpipe|software|basic render driver/i.test(name);
}

function rendererName(context: WebGL2RenderingContext): string {
  const info = context.getExtension('WEBGL_debug_renderer_info');
  return String(context.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : context.RENDERER) ?? '');
}

let _available: boolean | undefined;

/** What of xterm's Terminal `moveTextareaInFrames` uses; its core's method is private to xterm: looked up, never assumed. */
interface ITextareaHost {
  readonly element?: { readonly isConnected: boolean };
  _core?: { _syncTextArea?: () => void };
}

/**
 * Have xterm move its hidden textarea (where an IME writes, kept under the
 * cursor) in the next frame instead of as it parses. Parsing an echo moved
 * it at once, in the output's task; at the frame's start the page then laid
 * out to hit-test the element under a resting mouse, and laid out again
 * after the DOM renderer drew the rows: two passes per echo, where
 * JupyterLab's terminal, drawing on a canvas, needs one. In the frame, the
 * textarea moves with the rows, and one pass lays out both. Beside a
 * CPU-bound process that first pass took 0.7-0.9 ms of a 9 ms echo (a
 * Chromium trace). Several moves before a frame make one; a terminal
 * disposed (its element gone from the page) meanwhile is not touched. An
 * xterm without the method keeps its own timing.
 */
export function moveTextareaInFrames(term: object, frame: (callback: () => void) => void = requestAnimationFrame): void {
  const host = term as ITextareaHost;
  const core = host._core;
  const sync = core?._syncTextArea;
  if (core === undefined || typeof sync !== 'function') {
    return;
  }
  let due = false;
  core._syncTextArea = () => {
    if (due) {
      return;
    }
    due = true;
    frame(() => {
      due = false;
      if (host.element?.isConnected) {
        sync.call(core);
      }
    });
  };
}
