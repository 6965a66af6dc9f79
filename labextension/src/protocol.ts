/**
 * The `unified_exec` protocol, version 2: a TypeScript mirror of
 * docs/protocol.md. Change both together; a Python test compares the type
 * lists below with the document and the kernel side.
 */

export const PROTOCOL_VERSION = 2;

/** The kernel comm target the Sessions panel opens. */
export const COMM_TARGET = 'unified_exec';

/**
 * Chosen by the front end; every answer echoes it (`null` when the request
 * had none).
 */
export type RequestId = string | number;

export type SessionId = number;

/** Where a request names a session, its name will do as well as its id. */
export type SessionKey = SessionId | string;

/** What ended a wait. */
export type EndedBy = 'exit' | 'command' | 'input' | 'match' | 'quiet' | 'timeout' | 'interrupt';

/** Events the kernel sends on its own carry `null` or no `request_id`. */
type EventRequestId = { request_id?: null };

// ---------------------------------------------------------------------------
// Kernel -> front end

export interface Limits {
  default_timeout_ms: number;
  max_timeout_ms: number;
  output_max_bytes: number;
  max_input_bytes: number;
  max_sessions: number;
  scrollback_bytes: number;
}

export interface HelloMessage extends EventRequestId {
  type: 'hello';
  protocol_version: number;
  limits: Limits;
  /** `"direct"` on the direct channel (docs/protocol.md, "Direct channel"). */
  carrier?: string;
}

export interface OutputMessage {
  type: 'output';
  request_id: RequestId | null;
  /** Offsets as on `data` events; `skipped` bytes before `offset` were left out. */
  offset: number;
  end: number;
  skipped: number;
  data: string;
}

export interface ResultMessage {
  type: 'result';
  request_id: RequestId | null;
  /** `null` once the process has exited. */
  session_id: SessionId | null;
  output: string;
  exit_code: number | null;
  /** A typed command's status (shell integration); `null` if none finished. */
  command_exit_code: number | null;
  ended_by: EndedBy;
  /** Seconds. */
  wall_time: number;
}

export interface WatchingMessage {
  type: 'watching';
  request_id: RequestId;
  session_id: SessionId;
}

/** The one answer a watch gets, unless it is unwatched first. */
export interface FiredMessage {
  type: 'fired';
  request_id: RequestId;
  session_id: SessionId | null;
  reason: EndedBy;
  /** What the session printed since the watch began, truncated as results are. */
  output: string;
  exit_code: number | null;
  command_exit_code: number | null;
  wall_time: number;
}

export interface SessionInfo {
  session_id: SessionId;
  /** The argv the user started (what runs may carry our shell integration's options). */
  command: string[];
  pid: number;
  alive: boolean;
  exit_code: number | null;
  /** Unix time in seconds. */
  started: number;
  name: string | null;
  /** It outlives kernel restarts (absent from kernels before kept sessions). */
  kept?: boolean;
  /** How many kernel restarts it has lived through. */
  restarts?: number;
  /** What a person should know beside its state, one line (its keeper died: no longer kept). */
  note?: string;
}

export interface SessionsMessage {
  type: 'sessions';
  request_id: RequestId | null;
  sessions: SessionInfo[];
}

export interface OkMessage {
  type: 'ok';
  request_id: RequestId | null;
  session_id: SessionId;
}

export interface AttachedMessage {
  type: 'attached';
  request_id: RequestId | null;
  session_id: SessionId;
  /** Where the replayed scrollback starts: 0 unless older output was dropped. */
  offset: number;
  /**
   * Where the replay ends and live output starts. What a view parses before
   * it is history: queries in it (a past `vi`'s) get no answer. Absent from
   * kernels before it was added: then only replayed `data` (with the
   * attach's `request_id`) counts as history.
   */
  end?: number;
  /** The program's output is stopped by XOFF (Ctrl+S) now; absent from older kernels. */
  paused?: boolean;
  alive: boolean;
  exit_code: number | null;
  rows: number;
  cols: number;
  /**
   * The sizes the replay was written at: `[offset, rows, cols]` from each
   * offset on, the first at the replay's start, the last the PTY's size now
   * (absent from older kernels: then all of it was `rows` x `cols`).
   */
  sizes?: [number, number, number][];
  /**
   * The session outlives a kernel restart: a view may reach the next
   * kernel and attach again (absent from kernels before kept sessions).
   */
  kept?: boolean;
  /**
   * false: the session runs on pipes (an agent's `tty: false`), with no terminal and
   * stdin closed: a view only watches it. Absent from kernels before pipes sessions.
   */
  tty?: boolean;
}

/**
 * Output of an attached session. Offsets count UTF-8 bytes of the session's
 * decoded output stream; `end` is one past the last byte of `data`.
 */
export interface DataMessage {
  type: 'data';
  /** The `attach`'s id while replaying scrollback, `null` for live output. */
  request_id: RequestId | null;
  session_id: SessionId;
  offset: number;
  end: number;
  /**
   * The text; from the direct channel's binary frames, its UTF-8 bytes as
   * they came (xterm.js decodes them itself).
   */
  data: string | Uint8Array;
  /** Bytes the kernel chose not to send just before this event. */
  skipped: number;
}

/** An attached session's output was stopped by XOFF (`paused`) or started again (XON). */
export interface FlowMessage {
  type: 'flow';
  session_id: SessionId;
  paused: boolean;
}

/**
 * Why a session ended (`exited.reason`): its program ended (its exit code
 * says how), it was closed (a kill, `%uexec_kill`, pruning), or its kernel
 * shut down or restarted. Every view says it in the same words (format.ts).
 */
export const END_REASONS = ['exit', 'closed', 'kernel'] as const;

export type EndReason = (typeof END_REASONS)[number];

/**
 * The PTY's size changed: the view in use (the one typed or clicked into
 * last) gave it its own. A view of another size shows the program at this
 * one and says so.
 */
export interface SizeMessage extends EventRequestId {
  type: 'size';
  session_id: SessionId;
  rows: number;
  cols: number;
}

/**
 * A session ended (`exited`) or printed the line a wait was for
 * (`matched`), to every comm and direct channel: what notifications tell a
 * person who is not looking (notify.ts).
 */
export interface SessionEventMessage extends EventRequestId {
  type: 'session_event';
  /** `culled`: the server is shutting its kernel down as idle, which ends it (server/culling.py). */
  event: 'exited' | 'matched' | 'culled';
  session_id: SessionId;
  name: string | null;
  command: string[];
  exit_code: number | null;
  /** Since the session started. */
  seconds: number;
  /** `matched`: the line, as a person reads it. */
  line: string | null;
  /** `matched`: a `--until` (a cell's, an exec's) or a `watch`. */
  by: 'until' | 'watch' | null;
  /** `culled`: how long the kernel had been idle, in seconds. */
  idle_seconds?: number | null;
}

export interface ExitedMessage extends EventRequestId {
  type: 'exited';
  session_id: SessionId;
  /** Negative: killed by that signal; `null` if the status was lost. */
  exit_code: number | null;
  /** The session was closed (a kill, the kernel's shutdown): its signal is no crash. */
  closed?: boolean;
  /** Absent from kernels before it was added: then `closed` says what it can. */
  reason?: EndReason;
}

export interface SessionsChangedMessage extends EventRequestId {
  type: 'sessions_changed';
}

export const ERROR_NAMES = [
  'UnknownSessionId',
  'UnknownJournal',
  'WriteToStdin',
  'MissingCommandLine',
  'CreateSession',
  'BadRequest',
  'Internal'
] as const;

export type ErrorName = (typeof ERROR_NAMES)[number];

export interface ErrorMessage {
  type: 'error';
  /** `null` when the request had none or could not be read. */
  request_id: RequestId | null;
  /** The request's `session_id`, when it named one. */
  session_id?: SessionId;
  error: ErrorName;
  /** One line a person can read. */
  message: string;
}

/** A command typed into an integrated shell, as a session's journal recorded it. */
export interface JournalCommand {
  number: number;
  text: string;
  start: number;
  /** `null` while it runs. */
  end: number | null;
  exit_code: number | null;
}

/** The answer to `read`: output in [start, end) from the session's journal. */
export interface JournalMessage {
  type: 'journal';
  request_id: RequestId | null;
  session_id: SessionId;
  start: number;
  end: number;
  /** Where the session's output ends (so far). */
  output_end: number;
  /** The range asked for goes on past `end`: read again from there. */
  more: boolean;
  command: JournalCommand | null;
  /** One line each: output the journal did not keep. */
  notes: string[];
  data: string;
}

export type KernelMessage =
  | HelloMessage
  | OutputMessage
  | ResultMessage
  | SessionsMessage
  | OkMessage
  | AttachedMessage
  | FlowMessage
  | SizeMessage
  | SessionEventMessage
  | DataMessage
  | ExitedMessage
  | SessionsChangedMessage
  | WatchingMessage
  | FiredMessage
  | JournalMessage
  | ErrorMessage;

export const KERNEL_MESSAGE_TYPES = [
  'hello',
  'output',
  'result',
  'sessions',
  'ok',
  'attached',
  'data',
  'exited',
  'flow',
  'size',
  'session_event',
  'sessions_changed',
  'watching',
  'fired',
  'journal',
  'error'
] as const;

// ---------------------------------------------------------------------------
// Front end -> kernel

interface Request {
  request_id?: RequestId;
}

export interface ExecRequest extends Request {
  type: 'exec';
  /** `null` starts a new session with `input_chunks` as its argv. */
  session_id: SessionKey | null;
  input_chunks: string[];
  timeout_ms?: number;
  format?: 'text' | 'agent';
  /** End the wait when the output matches (Python `re`, MULTILINE). */
  until?: string;
  /** End the wait once output came and then nothing for this long. */
  quiet_ms?: number;
  /** A new session's name, working directory, environment, shell integration. */
  name?: string;
  cwd?: string;
  env?: Record<string, string>;
  integration?: boolean;
}

export interface WatchRequest {
  type: 'watch';
  /** Required: `fired` and `unwatch` name the watch by it. */
  request_id: RequestId;
  session_id: SessionKey;
  until?: string;
  quiet_ms?: number;
  /** End when a command typed into an integrated shell is done. */
  command?: boolean;
  timeout_ms?: number;
  format?: 'text' | 'agent';
}

export interface UnwatchRequest extends Request {
  type: 'unwatch';
  /** The `request_id` of the watch to cancel. */
  watch_id: RequestId;
}

export interface ListRequest extends Request {
  type: 'list';
}

export interface KillRequest extends Request {
  type: 'kill';
  session_id: SessionKey;
  /** A name like `"SIGINT"` or a number; omitted: close the whole session. */
  signal?: string | number;
}

/*
 * `attach`, `input` and `resize` are the requests a widget view sends; on the
 * widget carrier `session_id` is implied (the widget's own), so it is
 * optional here. On the comm carrier it is required.
 */

export interface AttachRequest extends Request {
  type: 'attach';
  session_id?: SessionId;
}

export interface DetachRequest extends Request {
  type: 'detach';
  session_id: SessionId;
}

export interface InputRequest extends Request {
  type: 'input';
  session_id?: SessionId;
  /** Written to the PTY as-is: keystrokes. */
  data: string;
  /** The view typing (a comm or widget carries several): its size becomes the PTY's. */
  view?: string;
}

export interface ResizeRequest extends Request {
  type: 'resize';
  session_id?: SessionId;
  /** 1..1000 each: the view's own size. */
  rows: number;
  cols: number;
  /** Which view this is (a comm or widget carries several). */
  view?: string;
  /** A person just turned to this view (focus): the PTY takes its size now, not at its next key. */
  claim?: boolean;
}

export interface ReadRequest extends Request {
  type: 'read';
  session_id: SessionKey;
  /** Output offsets; omitted: the start (or the command's), and the end. */
  start?: number;
  end?: number;
  /** 1-based; -1 the last command typed into the shell. */
  command?: number;
  /** 1..1048576; default 65536. */
  max_bytes?: number;
}

export type FrontEndMessage =
  | ExecRequest
  | ListRequest
  | KillRequest
  | AttachRequest
  | DetachRequest
  | InputRequest
  | ResizeRequest
  | WatchRequest
  | UnwatchRequest
  | ReadRequest;

export const FRONTEND_MESSAGE_TYPES = [
  'exec',
  'list',
  'kill',
  'attach',
  'detach',
  'input',
  'resize',
  'watch',
  'unwatch',
  'read'
] as const;

/**
 * Read an incoming carrier payload as a kernel message. Only the shape the
 * dispatch needs is checked: the kernel is trusted, but a newer one may send
 * types this front end does not know, which are dropped.
 */
export function asKernelMessage(payload: unknown): KernelMessage | null {
  if (typeof payload !== 'object' || payload === null) {
    return null;
  }
  const type = (payload as { type?: unknown }).type;
  return (KERNEL_MESSAGE_TYPES as readonly unknown[]).includes(type)
    ? (payload as KernelMessage)
    : null;
}

// Every window showing a widget gets every answer sent on the widget's comm,
// so request ids carry a per-page tag besides the counter.
const pageTag = Math.random().toString(36).slice(2, 10);
let requestCount = 0;

/** A request id no other view, in this page or another, will use. */
export function nextRequestId(): string {
  return `${pageTag}-${++requestCount}`;
}
