/**
 * A live view's screen as a saved notebook keeps it: the `text/html` and
 * `text/plain` of its output, which GitHub, nbviewer, `nbconvert --to html`
 * and a notebook opened without widget state show. The kernel writes them
 * when the cell ends and when the session ends (screen/html.py); the lab
 * extension writes them again from the view's terminal just before each save
 * (saving.ts), so a notebook saved while a program prints keeps what was on
 * screen then. Pure: no DOM, no xterm (terminal.ts reads its cells into
 * `ScreenCell`s), so both bundles share it and node tests it.
 */

/** The DOM event the extension sends a live view's terminal node before a save; the view fills in `answer`. */
export const SNAPSHOT_EVENT = 'uexec-snapshot';

/** What a view answers: its screen (a `<pre>`), its output as text (null if it has none to give), its caption. */
export interface Snapshot {
  screen: string;
  text: string | null;
  caption: string;
}

/** The event's `detail`. */
export interface SnapshotRequest {
  answer?: Snapshot;
}

/** A colour as xterm keeps it: the theme's default, a palette index (0-255), or `#rrggbb`. */
export type Colour = 'default' | number | string;

/** One cell of the screen; `chars` is empty for the second half of a wide character. */
export interface ScreenCell {
  chars: string;
  width: number;
  fg: Colour;
  bg: Colour;
  bold?: boolean;
  italic?: boolean;
  underline?: boolean;
  strikethrough?: boolean;
  inverse?: boolean;
  invisible?: boolean;
}

// xterm.js's default theme, which the live view paints with and screen/html.py writes too.
export const BACKGROUND = '#000000';
export const FOREGROUND = '#ffffff';
const ANSI = [
  '#2e3436', '#cc0000', '#4e9a06', '#c4a000', '#3465a4', '#75507b', '#06989a', '#d3d7cf',
  '#555753', '#ef2929', '#8ae234', '#fce94f', '#729fcf', '#ad7fa8', '#34e2e2', '#eeeeec'
];
/** screen/html.py's box, so a screen saved by either side looks the same. */
const BOX =
  `background:${BACKGROUND};color:${FOREGROUND};margin:0;padding:4px 6px;` +
  'font-family:var(--jp-code-font-family,monospace);font-size:13px;line-height:1.2;' +
  'white-space:pre;overflow-x:auto';
/** As much text as the kernel keeps of a session (its 128 KiB scrollback): a saved notebook stays small. */
export const TEXT_MAX_CHARS = 128 * 1024;

const CUBE = [0, 0x5f, 0x87, 0xaf, 0xd7, 0xff];

function hex(r: number, g: number, b: number): string {
  return '#' + [r, g, b].map(v => v.toString(16).padStart(2, '0')).join('');
}

/** The CSS colour of `colour`, `fallback` for the default. */
export function cssColour(colour: Colour, fallback: string): string {
  if (typeof colour === 'string') {
    return /^#[0-9a-f]{6}$/i.test(colour) ? colour.toLowerCase() : fallback;
  }
  if (!Number.isInteger(colour) || colour < 0 || colour > 255) {
    return fallback;
  }
  if (colour < 16) {
    return ANSI[colour];
  }
  if (colour < 232) {
    const n = colour - 16;
    return hex(CUBE[Math.floor(n / 36)], CUBE[Math.floor(n / 6) % 6], CUBE[n % 6]);
  }
  const grey = 8 + (colour - 232) * 10;
  return hex(grey, grey, grey);
}

function cellStyle(cell: ScreenCell): string {
  let fg = cssColour(cell.fg, FOREGROUND);
  let bg = cssColour(cell.bg, BACKGROUND);
  if (cell.inverse) {
    [fg, bg] = [bg, fg];
  }
  const style: string[] = [];
  if (fg !== FOREGROUND) {
    style.push(`color:${fg}`);
  }
  if (bg !== BACKGROUND) {
    style.push(`background:${bg}`);
  }
  if (cell.bold) {
    style.push('font-weight:bold');
  }
  if (cell.italic) {
    style.push('font-style:italic');
  }
  const decorations = [cell.underline && 'underline', cell.strikethrough && 'line-through'].filter(Boolean);
  if (decorations.length) {
    style.push(`text-decoration:${decorations.join(' ')}`);
  }
  return style.join(';');
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#x27;');
}

function rowHtml(row: readonly ScreenCell[]): string {
  const cells = row.filter(cell => cell.width !== 0);
  const chars = (cell: ScreenCell): string => (cell.invisible ? ' '.repeat(Math.max(1, cell.width)) : cell.chars || ' ');
  while (cells.length && (cells[cells.length - 1].chars === '' || cells[cells.length - 1].chars === ' ') && cellStyle(cells[cells.length - 1]) === '') {
    cells.pop();
  }
  let html = '';
  let i = 0;
  while (i < cells.length) {
    const style = cellStyle(cells[i]);
    let text = '';
    while (i < cells.length && cellStyle(cells[i]) === style) {
      text += chars(cells[i++]);
    }
    html += style ? `<span style="${style}">${escapeHtml(text)}</span>` : escapeHtml(text);
  }
  return html;
}

/**
 * The screen as one `<pre>`, as screen/html.py writes it: a row per line,
 * colours as inline styles, trailing blanks and blank rows at the bottom left out.
 */
export function screenHtml(rows: readonly (readonly ScreenCell[])[]): string {
  const shown = rows.map(rowHtml);
  while (shown.length && !shown[shown.length - 1]) {
    shown.pop();
  }
  return `<pre class="uexec-screen" style="${BOX}">${shown.join('\n')}</pre>`;
}

/**
 * The output as text from the terminal's lines (a line the width wrapped
 * joined again), trailing blank lines left out, the newest `maxChars` kept
 * from a line's start.
 */
export function screenText(lines: readonly { text: string; wrapped: boolean }[], maxChars = TEXT_MAX_CHARS): string {
  const joined: string[] = [];
  for (const line of lines) {
    if (line.wrapped && joined.length) {
      joined[joined.length - 1] += line.text;
    } else {
      joined.push(line.text);
    }
  }
  const trimmed = joined.map(line => line.trimEnd());
  while (trimmed.length && !trimmed[trimmed.length - 1]) {
    trimmed.pop();
  }
  let text = trimmed.join('\n');
  if (text.length > maxChars) {
    const cut = text.length - maxChars;
    const start = text.indexOf('\n', cut);
    text = start < 0 ? text.slice(cut) : text.slice(start + 1);
  }
  return text;
}

/** The caption the kernel writes under the screen (live/widget.py), with the view's own word for the state. */
export function caption(sessionId: number, title: string, state: string): string {
  return `live terminal: session ${sessionId} (${title}), ${state}`;
}

type MimeData = Record<string, unknown>;

const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';

/**
 * An output's `data` is a live view's as the kernel wrote it: a widget view
 * with a captioned screen. A container widget (a box around a view) is not:
 * its text is not the terminal's to replace.
 */
export function isLiveViewData(data: unknown): data is MimeData {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return false;
  }
  const html = joined((data as MimeData)['text/html']);
  return WIDGET_VIEW in data && html !== null && html.includes('<div class="uexec-screen-caption">');
}

function joined(value: unknown): string | null {
  if (typeof value === 'string') {
    return value;
  }
  return Array.isArray(value) && value.every(part => typeof part === 'string') ? value.join('') : null;
}

/**
 * An output's `data` with `snapshot` as its `text/html` and `text/plain`
 * (written as live/loaded.py and live/widget.py write them). Without text,
 * the old `text/plain` keeps its body and takes the new caption.
 */
export function withSnapshot(data: MimeData, snapshot: Snapshot): MimeData {
  const note = `[${snapshot.caption}]`;
  const html = `${snapshot.screen}<div class="uexec-screen-caption">[${escapeHtml(snapshot.caption)}]</div>`;
  let text: string;
  if (snapshot.text !== null) {
    text = `${snapshot.text}\n${note}`.replace(/^\n+/, '');
  } else {
    const old = joined(data['text/plain']) ?? '';
    // The kernel's caption is the last line that starts with "[live terminal:"; a note may follow it.
    const at = old.lastIndexOf('[live terminal: ');
    const end = at < 0 ? -1 : old.indexOf('\n', at);
    text = at < 0 ? `${old}\n${note}`.replace(/^\n+/, '') : old.slice(0, at) + note + (end < 0 ? '' : old.slice(end));
  }
  return { ...data, 'text/html': html, 'text/plain': text };
}
