/**
 * What reattach.ts shows where a live view's widget model is gone: the
 * session, found again in the kernel's list (by id and start) and drawn by
 * the live view's own code (widget.ts) over the kernel's comm and the
 * direct channel, as a terminal tab is carried; or, when the kernel has no
 * such session any more, the screen the notebook saved of it, saying it
 * ended. Loaded on demand: it brings xterm.js.
 */

import type { Kernel } from '@jupyterlab/services';

import { SessionsConnection } from './connection';
import { ENDED, endedCaption, findSession, type SessionRef } from './sessionref';
import { renderView, type WidgetModel } from './widget';

/** How long the view waits for the kernel to list its sessions before it shows the saved screen. */
export const LIST_TIMEOUT_MS = 30_000;

export interface ShowOptions {
  node: HTMLElement;
  /** The notebook's kernel, which ran the session; null: none to ask. */
  kernel: Kernel.IKernelConnection | null;
  ref: SessionRef;
  /** Why the session is gone where `kernel` is null. */
  gone: string;
  /** The output's `text/html`: the saved screen and its caption (screen/html.py, snapshot.ts). */
  saved: unknown;
}

/** The session live in `node`, or its saved screen; returns the cleanup. */
export async function showSession(options: ShowOptions): Promise<() => void> {
  const { node, kernel, ref } = options;
  if (!kernel) {
    return showSaved(node, options.saved, endedCaption(ref, options.gone));
  }
  const connection = SessionsConnection.acquire(kernel);
  const listed = await whenListed(connection, LIST_TIMEOUT_MS);
  const info = listed ? findSession(ref, connection.sessions) : null;
  if (!info) {
    connection.release();
    const state = listed ? ENDED : `not found: ${connection.isOpen ? 'the kernel did not list its sessions' : 'the kernel went'}`;
    return showSaved(node, options.saved, endedCaption(ref, state));
  }
  const carrier = connection.carrier(info.session_id);
  connection.release(); // the carrier holds its own use
  const traits: Record<string, unknown> = {
    session_id: info.session_id,
    title: ref.title,
    alive: info.alive,
    exit_code: info.exit_code,
    closed: false,
    kernel_id: kernel.id,
    screen_html: savedScreen(options.saved)?.screen ?? ''
  };
  const model: WidgetModel = {
    get: name => traits[name] as never,
    // The traits of a model that is gone never change: what the view hears over its carrier speaks.
    on: () => undefined,
    off: () => undefined,
    send: () => undefined
  };
  return renderView(model, node, carrier);
}

/** True once `connection` has listed its kernel's sessions; false if it closes or `ms` pass first. */
function whenListed(connection: SessionsConnection, ms: number): Promise<boolean> {
  return new Promise(resolve => {
    const check = (): void => {
      if (connection.listed || !connection.isOpen) {
        finish(connection.listed);
      }
    };
    const finish = (listed: boolean): void => {
      clearTimeout(timer);
      connection.changed.disconnect(check);
      resolve(listed);
    };
    const timer = setTimeout(() => finish(false), ms);
    connection.changed.connect(check);
    check();
  });
}

/** The saved screen (its `<pre>`, from the trusted output this renderer was chosen for) without its caption. */
function savedScreen(saved: unknown): { screen: string } | null {
  const html = Array.isArray(saved) ? saved.join('') : typeof saved === 'string' ? saved : null;
  if (html === null) {
    return null;
  }
  const holder = document.createElement('div');
  holder.innerHTML = html;
  holder.querySelectorAll('.uexec-screen-caption').forEach(caption => caption.remove());
  return { screen: holder.innerHTML };
}

function showSaved(node: HTMLElement, saved: unknown, caption: string): () => void {
  const screen = node.appendChild(document.createElement('div'));
  screen.className = 'uexec-last-screen uexec-session-ended';
  screen.innerHTML = savedScreen(saved)?.screen ?? '';
  const line = screen.appendChild(document.createElement('div'));
  line.className = 'uexec-screen-caption';
  line.textContent = caption;
  return () => screen.remove();
}
