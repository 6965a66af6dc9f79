/**
 * Which session a live view's output shows, as the output itself says it
 * (`application/vnd.uexec.session+json`, live/widget.py), so a page can
 * find the session when the view's widget model is gone: ipywidgets'
 * models live in the kernel, and after Restart Kernel a reloaded page (or
 * a collaborator's, or the notebook opened later) has none for the view,
 * though a kept session runs on in the new kernel. Pure: node tests it.
 */

import type { SessionInfo } from './protocol';

export const SESSION_MIME = 'application/vnd.uexec.session+json';
export const WIDGET_VIEW_MIME = 'application/vnd.jupyter.widget-view+json';

/** What the output says of its session. */
export interface SessionRef {
  session_id: number;
  /** The kernel that ran it ('' when the kernel did not know its id): session ids start at 0 in each kernel. */
  kernel_id: string;
  /** Its start (Unix time): a later session of the same id in a restarted kernel is another program. */
  started: number;
  /** Its command line, as the view's header says it. */
  title: string;
}

/** The output's session, or null where the data is not ours (an older kernel's output has none). */
export function sessionRef(data: unknown): SessionRef | null {
  if (typeof data !== 'object' || data === null) {
    return null;
  }
  const { session_id, kernel_id, started, title } = data as Record<string, unknown>;
  if (!Number.isInteger(session_id) || (session_id as number) < 0) {
    return null;
  }
  return {
    session_id: session_id as number,
    kernel_id: typeof kernel_id === 'string' ? kernel_id : '',
    started: typeof started === 'number' && Number.isFinite(started) ? started : 0,
    title: typeof title === 'string' ? title : ''
  };
}

/**
 * The session `ref` names among a kernel's `sessions`, or null: the same
 * id, started at the same time (a kept session keeps both across restarts).
 */
export function findSession(ref: SessionRef, sessions: readonly SessionInfo[]): SessionInfo | null {
  return (
    sessions.find(
      info => info.session_id === ref.session_id && (ref.started === 0 || Math.abs(info.started - ref.started) < 1e-3)
    ) ?? null
  );
}

/**
 * The widget model a view's output shows, if the kernel has no comm of that
 * id open (`comms`: a `comm_info_reply`'s): the view's model is gone.
 */
export function modelGone(data: Readonly<Record<string, unknown>>, comms: Readonly<Record<string, unknown>>): boolean {
  const view = data[WIDGET_VIEW_MIME];
  const id = typeof view === 'object' && view !== null ? (view as { model_id?: unknown }).model_id : undefined;
  return typeof id === 'string' && id !== '' && !(id in comms);
}

/** The line under a gone session's saved screen: which session, and that what shows is its last screen. */
export function endedCaption(ref: SessionRef, state: string): string {
  const title = ref.title ? ` (${ref.title})` : '';
  return `[live terminal: session ${ref.session_id}${title}, ${state}; this is its last screen]`;
}

/** Why a view's session is gone, in the words views use (format.ts's), or the kernel's absence. */
export const NO_KERNEL = 'not running: the notebook has no kernel';
export const ENDED = 'ended';
