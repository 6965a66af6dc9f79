/** The words a person reads about a session, in the terminal and the panel. */

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

export function skipNotice(bytes: number): string {
  return `[… ${formatBytes(bytes)} skipped …]`;
}

/** The engine reports a process killed by a signal as minus its number. */
export function exitNotice(exitCode: number | null): string {
  if (exitCode === null) {
    return '[exited]';
  }
  return exitCode < 0 ? `[killed by signal ${-exitCode}]` : `[exited with code ${exitCode}]`;
}

/** `running`, `exited (0)`, `exited (-9)`, or `exited` when the code is unknown. */
export function stateLabel(alive: boolean, exitCode: number | null): string {
  if (alive) {
    return 'running';
  }
  return exitCode === null ? 'exited' : `exited (${exitCode})`;
}

export function commandLine(argv: readonly string[]): string {
  return argv.join(' ');
}
