/**
 * The words of a notification about a session (notify.ts): what happened,
 * in one line, as the views word a session's state. Pure, so node tests it.
 */

import { commandLine, sessionState } from './format';
import type { SessionEventMessage } from './protocol';

/** "8 s", "4 min 05 s", "2 h 03 min": as precise as a person needs. */
export function duration(seconds: number): string {
  const whole = Math.max(0, Math.round(seconds));
  if (whole < 60) {
    return `${whole} s`;
  }
  const two = (n: number): string => String(n).padStart(2, '0');
  if (whole < 3600) {
    return `${Math.floor(whole / 60)} min ${two(whole % 60)} s`;
  }
  const minutes = Math.floor(whole / 60);
  return `${Math.floor(minutes / 60)} h ${two(minutes % 60)} min`;
}

/** "session 'train'" for a named session (what cells say), else "session 3 (python train.py)". */
export function whichSession(event: Pick<SessionEventMessage, 'session_id' | 'name' | 'command'>): string {
  if (event.name) {
    return `session '${event.name}'`;
  }
  const command = commandLine(event.command);
  return command ? `session ${event.session_id} (${command})` : `session ${event.session_id}`;
}

/**
 * `session 'train' exited with code 1 after 2 h 03 min`; `session 'dev' printed "ready" (--until)`;
 * `session 'train' ended: its kernel was culled as idle after 10 min 00 s`.
 */
export function noticeText(event: SessionEventMessage): string {
  const who = whichSession(event);
  if (event.event === 'culled') {
    return `${who} ended: its kernel was culled as idle after ${duration(event.idle_seconds ?? 0)}`;
  }
  if (event.event === 'matched') {
    return `${who} printed "${event.line ?? ''}" (${event.by === 'watch' ? 'watch' : '--until'})`;
  }
  return `${who} ${sessionState(false, event.exit_code)} after ${duration(event.seconds)}`;
}

/** How the notification looks: an end that failed stays until read. */
export function noticeKind(event: SessionEventMessage): 'success' | 'error' | 'info' {
  if (event.event === 'matched') {
    return 'info';
  }
  if (event.event === 'culled') {
    return 'error';
  }
  return event.exit_code === 0 ? 'success' : 'error';
}
