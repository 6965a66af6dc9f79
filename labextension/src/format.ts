/**
 * The words a person reads about a session, in the terminal, the live
 * view's header and the panel. The kernel's text views say the same
 * (`running`, `exited with code N`), so a session reads alike everywhere.
 */

import type { EndReason } from './protocol';

/** `1234567` -> `1.2 MB` (SI units, as the kernel counts bytes). */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) {
    return `${bytes} byte${bytes === 1 ? '' : 's'}`;
  }
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 999.95 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** What a view of a pipes session (an agent's `tty: false`) says once: it only watches. */
export const READ_ONLY_NOTICE = 'read-only: this session runs on pipes, without a terminal (an agent started it with tty=false); it takes no keys';

export function skipNotice(bytes: number): string {
  return `[… ${formatBytes(bytes)} skipped …]`;
}

/**
 * `running`, `exited with code 3`, `killed by signal 9` (the engine reports
 * a signal as minus its number), `closed` when the user closed the session
 * (its hangup is no crash), `ended with the kernel` when its kernel shut
 * down or restarted (`reason`, from the kernel's `exited`), or `exited`
 * when the status was lost.
 */
export function sessionState(alive: boolean, exitCode: number | null, closed = false, reason?: EndReason): string {
  if (alive) {
    return 'running';
  }
  if (reason === 'kernel') {
    return ENDED_WITH_THE_KERNEL;
  }
  if (closed) {
    return 'closed';
  }
  if (exitCode === null) {
    return 'exited';
  }
  return exitCode < 0 ? `killed by signal ${-exitCode}` : `exited with code ${exitCode}`;
}

/** The line a terminal shows when its program ends. */
export function exitNotice(exitCode: number | null, closed = false, reason?: EndReason): string {
  return `[${sessionState(false, exitCode, closed, reason)}]`;
}

/**
 * What every view says of a session its kernel took with it (shut down,
 * restarted, died): from the kernel's `exited` (`reason` "kernel") or,
 * when the view's connection went first, from that. One wording, so two
 * views of one session never disagree.
 */
export const ENDED_WITH_THE_KERNEL = 'ended with the kernel';

/** What a kept session's view says of the kernel it lost (the session lives on). */
export const DISCONNECTED = 'disconnected from the kernel';

/** The reason a carrier closes with when its kernel goes: the terminal's line says it. */
export const DISCONNECTED_NOTICE = ENDED_WITH_THE_KERNEL;

/**
 * A view's state once its carrier may be gone: after a kernel restart the
 * last word heard was "running", which is no longer true: sessions end with
 * their kernel (a kept one lives on: only this view lost it).
 */
export function viewState(
  alive: boolean,
  exitCode: number | null,
  connected: boolean,
  closed = false,
  kept = false,
  reason?: EndReason
): string {
  if (alive && !connected) {
    return kept ? 'disconnected' : ENDED_WITH_THE_KERNEL;
  }
  return sessionState(alive, exitCode, closed, reason);
}

/**
 * The argv as a shell line that runs it again, quoted as Python's
 * `shlex.join` quotes it (the live view's title comes from there).
 */
export function commandLine(argv: readonly string[]): string {
  // One element is a command line as written (an agent's `cmd`), as core/models.py's command_line shows it.
  return argv.length === 1 ? argv[0] : argv.map(shellQuote).join(' ');
}

function shellQuote(arg: string): string {
  if (arg === '') {
    return "''";
  }
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'"'"'`)}'`;
}

/** "build (session 3)" for a named session, "session 3" otherwise: the name is what cells say. */
export function sessionLabel(info: { session_id: number; name?: string | null }): string {
  return info.name ? `${info.name} (session ${info.session_id})` : `session ${info.session_id}`;
}

/**
 * "kept", "kept, 2 restarts": a kept session says so, and how many kernel
 * restarts it has lived through, as `%uexec_sessions` does; "" otherwise.
 */
export function keptLabel(info: { kept?: boolean; restarts?: number; note?: string }): string {
  if (!info.kept) {
    return info.note ?? ''; // e.g. 'no longer kept: its keeper died' (docs/architecture.md, the failure matrix)
  }
  const restarts = info.restarts ?? 0;
  return restarts ? `kept, ${restarts} restart${restarts === 1 ? '' : 's'}` : 'kept';
}
