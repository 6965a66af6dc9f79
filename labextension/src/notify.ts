/**
 * Tell the person: when a session ends, or prints the line a `--until` or
 * a `watch` waited for, while no view of it is in sight (another tab,
 * scrolled away, its notebook closed), JupyterLab's notification center
 * says so, with an action that opens the session in a Sessions tab.
 * JupyterLab's own terminal says nothing; a two-hour training run that
 * fails in a background tab should not wait to be noticed.
 *
 * The kernel says what happened (`session_event`, protocol/notices.py) on
 * the direct channel, which a page reaches whether or not a notebook on
 * that kernel is open: one socket per running kernel. Where there is none
 * (a gateway's kernel: only its messages reach the page), the same
 * messages come on a comm of a kernel connection of our own that handles
 * no other comm (eventcomm.ts; one that did would close the widgets' comms
 * it does not know). This page decides whether anyone is looking.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel } from '@jupyterlab/services';

import { DirectCarrier, directUrl, REMOTE_KERNEL } from './direct';
import { EventComm } from './eventcomm';
import { noticeKind, noticeText } from './notice';
import { PROTOCOL_VERSION, type SessionEventMessage } from './protocol';
import type { TerminalTabs } from './tabs';

/** The settings (schema/notifications.json). */
export interface NotifySettings {
  enabled: boolean;
  /** Ends of sessions that ran less than this are not told (a quick `%%uexec ls` is no news). */
  minimumSeconds: number;
}

export const DEFAULT_SETTINGS: NotifySettings = { enabled: true, minimumSeconds: 10 };

/** A kernel without a channel is asked again this often (`%load_ext` may have started one). */
const RETRY_NO_CHANNEL_MS = 10_000;
/** Refusals of the direct channel before the kernel's comm is asked (a gateway's kernel has no channel). */
const DIRECT_TRIES_BEFORE_COMM = 3;
/** The longest wait between comms a kernel refused (a kernel that is not ours). */
const COMM_RETRY_MAX_MS = 5 * 60_000;
/** Waits before reconnecting a dropped channel (a restart takes seconds). */
const RECONNECT_MS = [500, 1000, 2000, 4000, 8000, 15000];

/** How long a failed end stays on screen: until read. Others go after this. */
const AUTO_CLOSE_MS = 8000;

export class SessionNotifier {
  constructor(
    private readonly _app: JupyterFrontEnd,
    private readonly _notebooks: INotebookTracker | null,
    private readonly _tabs: () => TerminalTabs | null
  ) {
    const kernels = _app.serviceManager.kernels;
    kernels.runningChanged.connect(this._sync, this);
    void kernels.ready.then(() => this._sync());
    // A kernel started by this page is in the list at once (the manager's poll may come much later).
    const follow = (panel: NotebookPanel): void => {
      panel.sessionContext.kernelChanged.connect(() => this._sync());
      panel.sessionContext.statusChanged.connect(() => this._sync());
    };
    _notebooks?.widgetAdded.connect((_, panel) => follow(panel));
    _notebooks?.forEach(follow);
  }

  /** Off until the settings are read (index.ts): a page whose person turned them off opens no channel at all. */
  get settings(): NotifySettings {
    return this._settings;
  }

  set settings(value: NotifySettings) {
    this._settings = value;
    this._sync();
  }

  /**
   * Whether someone can see session `sessionId` of `kernelId` in this page
   * now: a view of it (a live view, a Sessions tab) in sight; or, for a
   * session no view shows, its notebook shown (its cell tells).
   */
  inSight(kernelId: string, sessionId: number): boolean {
    if (document.visibilityState !== 'visible') {
      return false;
    }
    let views = 0;
    let seen = false;
    let notebookShown = false;
    this._tabs()?.tracker.forEach(tab => {
      const args = tab.content.args;
      if (args.kernelId === kernelId && args.sessionId === sessionId) {
        views++;
        seen ||= tab.isVisible;
      }
    });
    this._notebooks?.forEach(panel => {
      if (panel.sessionContext.session?.kernel?.id !== kernelId) {
        return;
      }
      const nodes = panel.content.node.querySelectorAll<HTMLElement>(`.uexec-terminal[data-session-id="${sessionId}"]`);
      views += nodes.length;
      if (!panel.isVisible) {
        return;
      }
      notebookShown = true;
      const frame = panel.content.node.getBoundingClientRect();
      nodes.forEach(node => {
        seen ||= overlaps(node.getBoundingClientRect(), frame);
      });
    });
    return seen || (views === 0 && notebookShown);
  }

  /** What happened, told unless someone sees it or the settings say not to. */
  tell(kernelId: string, event: SessionEventMessage): void {
    const text = noticeText(event);
    if (!this.settings.enabled) {
      console.debug(`uexec: notifications are off: ${text}`);
      return;
    }
    if (event.event === 'exited' && event.seconds < this.settings.minimumSeconds) {
      console.debug(`uexec: shorter than ${this.settings.minimumSeconds} s, not told: ${text}`);
      return;
    }
    // A cull is told even in sight: the view goes quiet without saying why (the kernel is gone).
    if (event.event !== 'culled' && this.inSight(kernelId, event.session_id)) {
      console.debug(`uexec: in sight, not told: ${text}`);
      return;
    }
    console.debug(`uexec: told: ${text}`);
    const kind = noticeKind(event);
    const args = { kernelId, sessionId: event.session_id, command: event.command.join(' ') };
    Notification.emit(text, kind, {
      autoClose: kind === 'error' ? false : AUTO_CLOSE_MS,
      // A culled kernel's session cannot be opened any more.
      actions: event.event === 'culled' ? [] : [
        {
          label: 'Open',
          caption: 'Show this session in a terminal tab',
          callback: () => void this._app.commands.execute('uexec:open-session', args)
        }
      ]
    });
  }

  dispose(): void {
    this._app.serviceManager.kernels.runningChanged.disconnect(this._sync, this);
    this._channels.forEach(channel => channel.close());
    this._channels.clear();
  }

  /** One channel per running kernel while notifications are on; none for kernels gone, none at all when off. */
  private _sync(): void {
    const running = new Map<string, Kernel.IModel>();
    for (const model of this._settings.enabled ? this._app.serviceManager.kernels.running() : []) {
      running.set(model.id, model);
    }
    this._notebooks?.forEach(panel => {
      if (!this._settings.enabled) {
        return;
      }
      const kernel = panel.sessionContext.session?.kernel;
      if (kernel && !kernel.isDisposed) {
        running.set(kernel.id, { id: kernel.id, name: kernel.name });
      }
    });
    for (const [id, channel] of this._channels) {
      if (!running.has(id)) {
        channel.close();
        this._channels.delete(id);
      }
    }
    for (const id of running.keys()) {
      const channel = this._channels.get(id);
      if (!channel) {
        const model = running.get(id) as Kernel.IModel;
        const open = (): Kernel.IKernelConnection =>
          this._app.serviceManager.kernels.connectTo({ model, handleComms: false });
        this._channels.set(id, new EventChannel(this._url(id), open, event => this.tell(id, event)));
      } else if (channel.retryable) {
        channel.retry();
      }
    }
  }

  private _url(kernelId: string): string {
    const server = this._app.serviceManager.serverSettings;
    return directUrl(kernelId, { baseUrl: server.baseUrl, wsUrl: server.wsUrl, token: server.token, pageUrl: location.href });
  }

  private readonly _channels = new Map<string, EventChannel>();
  private _settings: NotifySettings = { ...DEFAULT_SETTINGS, enabled: false };
}

type NewsCarrier = DirectCarrier | EventComm;

/**
 * One kernel's news, `hello` and `session_event`, as the protocol says them
 * on either carrier: its direct channel where our server extension relays
 * one, else the `unified_exec` comm on a kernel connection of our own
 * (eventcomm.ts: a gateway's kernel, whose messages alone reach the page).
 * It attaches nothing and sends nothing.
 */
class EventChannel {
  constructor(
    private readonly _url: string,
    private readonly _openKernel: () => Kernel.IKernelConnection,
    private readonly _heard: (event: SessionEventMessage) => void
  ) {
    this._connect();
  }

  /** The kernel had no channel a while ago: worth asking again (`%load_ext` may have started one since). */
  get retryable(): boolean {
    return this._noChannelSince !== null && Date.now() - this._noChannelSince >= RETRY_NO_CHANNEL_MS;
  }

  retry(): void {
    clearTimeout(this._timer);
    this._noChannelSince = null;
    const carrier = this._carrier;
    this._carrier = null; // its close is not a loss to act on
    carrier?.dispose();
    this._connect();
  }

  close(): void {
    this._closed = true;
    clearTimeout(this._timer);
    this._carrier?.dispose();
    this._carrier = null;
  }

  private _connect(): void {
    if (!this._closed && !this._carrier) {
      this._use(new DirectCarrier({ url: this._url, sessionId: 0 }));
    }
  }

  private _use(carrier: NewsCarrier): void {
    this._carrier = carrier;
    let heard = false;
    carrier.listen({
      received: msg => {
        if (carrier !== this._carrier) {
          return;
        }
        if (msg.type === 'hello') {
          heard = true;
          this._attempt = 0;
          this._refused = 0;
          this._commWait = RETRY_NO_CHANNEL_MS;
          this._speaks = msg.protocol_version === PROTOCOL_VERSION;
          const over = carrier instanceof EventComm ? "the kernel's comm" : this._url.replace(/\?.*/, '');
          console.debug(`uexec: listening for session events on ${over}`);
        } else if (msg.type === 'session_event' && this._speaks) {
          this._heard(msg);
        }
      },
      closed: reason => {
        if (carrier === this._carrier && !this._closed) {
          this._carrier = null;
          this._lost(carrier, heard, reason);
        }
      }
    });
  }

  /** `carrier` closed; `heard`: after its `hello` (the kernel went), else it never worked. */
  private _lost(carrier: NewsCarrier, heard: boolean, reason: string): void {
    if (carrier instanceof DirectCarrier && !heard) {
      this._refused++;
      // A kernel just started binds its socket as our extension loads: ask the socket a few times first,
      // unless the kernel runs elsewhere (a gateway's), where it never will.
      const never = reason === REMOTE_KERNEL;
      if ((never || this._refused >= DIRECT_TRIES_BEFORE_COMM) && Date.now() >= this._commAfter) {
        console.debug(`uexec: ${reason}; listening for session events on the kernel's comm instead`);
        this._use(new EventComm(this._openKernel()));
        return;
      }
    } else if (carrier instanceof EventComm && !heard) {
      // No `unified_exec` target (not our kernel, or not loaded yet): each refusal is a line in the
      // kernel's log, so ask its comm less and less often.
      this._commAfter = Date.now() + this._commWait;
      this._commWait = Math.min(this._commWait * 2, COMM_RETRY_MAX_MS);
    }
    // No channel yet, or dropped (a restart, the server): try again a few times, then now and then as the
    // kernels change.
    if (this._attempt < RECONNECT_MS.length) {
      this._timer = setTimeout(() => this._connect(), RECONNECT_MS[this._attempt++]);
    } else {
      this._noChannelSince = Date.now();
      this._timer = setTimeout(() => this.retry(), RETRY_NO_CHANNEL_MS);
    }
  }

  private _carrier: NewsCarrier | null = null;
  private _closed = false;
  private _attempt = 0;
  /** First attempts of the direct channel refused in a row. */
  private _refused = 0;
  /** When the comm may be asked again after the kernel refused it. */
  private _commAfter = 0;
  private _commWait = RETRY_NO_CHANNEL_MS;
  private _speaks = false;
  private _noChannelSince: number | null = null;
  private _timer: ReturnType<typeof setTimeout> | undefined = undefined;
}

function overlaps(a: DOMRect, b: DOMRect): boolean {
  return a.width > 0 && a.height > 0 && a.bottom > b.top && a.top < b.bottom && a.right > b.left && a.left < b.right;
}
