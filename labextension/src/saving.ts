/**
 * A saved notebook keeps each open live view's screen as it was at the save.
 *
 * A live view's output carries the terminal's last screen as `text/html` and
 * `text/plain` for pages that cannot run it (GitHub, nbviewer, `nbconvert
 * --to html`, a notebook opened without widget state). The kernel writes
 * them when the cell ends and when the session ends only: an update of the
 * display would make the page render the view again, and keys typed in that
 * instant would go to the notebook. So just before a notebook is serialized
 * (the context's `saveState` says 'started' synchronously, before it calls
 * the model's `toJSON`: @jupyterlab/docregistry's context.ts), each view
 * hands over what its terminal shows (snapshot.ts), and it is written into
 * the notebook's shared model, which is what JupyterLab 4 serializes.
 *
 * Written into the output's map in the shared model (`youtputs[i].data`), not
 * through the output area's model: a change there (or of the output list)
 * renders the output again (a new view: focus gone, keys to the notebook,
 * a flicker). A change inside one output's map is no change of the list, so
 * the cell's model (and with it the page) ignores it, and `toJSON` reads it.
 * The output area keeps the kernel's copy, which only pages without the view
 * show; the next update from the kernel replaces both.
 *
 * Each shared output finds its drawn output by the widget model it shows,
 * never by its index: a page that did not run the cell (a collaborator's)
 * draws the outputs in another order. JupyterLab's code cell model turns
 * a change of the shared list into removes and appends ("inserting an
 * output always results in appending it", @jupyterlab/cells' model.ts), so
 * the kernel's update of a view's output at its cell's end, a `set` in the
 * page that ran it, moves that output to the end in every other page.
 */

import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { isLiveViewData, SNAPSHOT_EVENT, withSnapshot, type Snapshot, type SnapshotRequest } from './snapshot';

/** What the extension uses of a cell's shared model: @jupyter/ydoc's `YCodeCell` (its outputs are Y.Maps). */
interface SharedCell {
  youtputs?: { length: number; get(index: number): unknown };
  transact(change: () => void, undoable?: boolean): void;
}

interface OutputMap {
  get(key: string): unknown;
  set(key: string, value: unknown): void;
}

/** What the extension uses of a code cell's widget: its output area's model and what it draws, in the same order. */
interface CellWidget {
  model: { type: string; sharedModel: unknown };
  outputArea?: {
    model: { length: number; get(index: number): { data: unknown } };
    widgets: readonly { node: HTMLElement }[];
  };
}

const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';

/** The widget model a live view's output shows (its identity in every page), or null. */
export function widgetModelId(data: unknown): string | null {
  if (typeof data !== 'object' || data === null) {
    return null;
  }
  const view = (data as Record<string, unknown>)[WIDGET_VIEW];
  const id = typeof view === 'object' && view !== null ? (view as { model_id?: unknown }).model_id : undefined;
  return typeof id === 'string' && id !== '' ? id : null;
}

/**
 * For each shared output (by index), the index of the drawn output that
 * shows the same widget model, or -1: pairs by identity, whatever the order
 * either list has. Outputs without a model id pair with nothing.
 */
export function pairByModel(shared: readonly unknown[], drawn: readonly unknown[]): number[] {
  const where = new Map<string, number[]>();
  drawn.forEach((data, index) => {
    const id = widgetModelId(data);
    if (id !== null) {
      where.set(id, [...(where.get(id) ?? []), index]);
    }
  });
  // One model shown twice in a cell: the first shared output takes the first drawn one.
  return shared.map(data => {
    const id = widgetModelId(data);
    return (id === null ? undefined : where.get(id)?.shift()) ?? -1;
  });
}

/** Every notebook the tracker knows, now and later, writes its views' screens before each save. */
export function keepSavedScreensCurrent(tracker: INotebookTracker): void {
  const watch = (panel: NotebookPanel): void => {
    panel.context.saveState.connect((_context, state) => {
      if (state === 'started') {
        writeScreens(panel);
      }
    });
  };
  tracker.forEach(watch);
  tracker.widgetAdded.connect((_tracker, panel) => watch(panel));
}

/** Each open live view's screen into its output in the notebook's shared model. */
export function writeScreens(panel: NotebookPanel): number {
  let written = 0;
  for (const cell of panel.content.widgets as readonly CellWidget[]) {
    if (cell.model.type !== 'code' || !cell.outputArea) {
      continue;
    }
    const shared = cell.model.sharedModel as SharedCell;
    const outputs = shared.youtputs;
    if (!outputs || typeof outputs.get !== 'function') {
      continue; // not the shared model this was written for: the kernel's copy stays
    }
    const { model: drawnModel, widgets: shown } = cell.outputArea;
    const sharedData = Array.from({ length: outputs.length }, (_, index) => {
      const output = outputs.get(index) as OutputMap | undefined;
      return output && typeof output.get === 'function' ? output.get('data') : undefined;
    });
    const drawnData = Array.from({ length: Math.min(drawnModel.length, shown.length) }, (_, index) => drawnModel.get(index).data);
    const pairs = pairByModel(sharedData, drawnData);
    sharedData.forEach((data, index) => {
      if (!isLiveViewData(data) || pairs[index] < 0) {
        return;
      }
      const snapshot = askView(shown[pairs[index]].node);
      if (snapshot) {
        const output = outputs.get(index) as OutputMap;
        shared.transact(() => output.set('data', withSnapshot(data, snapshot)), false);
        written++;
      }
    });
  }
  return written;
}

/** The screen the live view in `node` shows (null: none there, or it did not answer). */
function askView(node: HTMLElement): Snapshot | null {
  const terminal = node.querySelector('.uexec-widget .uexec-terminal');
  if (!terminal) {
    return null;
  }
  const request: SnapshotRequest = {};
  terminal.dispatchEvent(new CustomEvent(SNAPSHOT_EVENT, { detail: request }));
  return request.answer ?? null;
}
