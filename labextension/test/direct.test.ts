import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';

import { CarrierBase } from '../src/carrier';
import {
  ACK_BYTES,
  ACK_IDLE_MS,
  decodeOutput,
  DirectCarrier,
  DirectFirstCarrier,
  directUrl,
  encodeInput,
  HELLO_TIMEOUT_MS,
  KEPT_NOTICE,
  KEPT_RECONNECT_MS,
  RECONNECT_DELAYS_MS,
  reconnectDelay,
  REMOTE_KERNEL,
  type ServerLocation,
  type SocketLike
} from '../src/direct';
import { nextRequestId, type FrontEndMessage, type KernelMessage } from '../src/protocol';
import { SessionStream } from '../src/stream';
import { DISCONNECTED_NOTICE, ENDED_WITH_THE_KERNEL } from '../src/format';

const SID = 7;
const URL_ = 'ws://h/uexec/kernels/k/channel';

/** A websocket the test plays the server of. */
class FakeSocket implements SocketLike {
  binaryType = 'blob';
  onopen: SocketLike['onopen'] = null;
  onmessage: SocketLike['onmessage'] = null;
  onclose: SocketLike['onclose'] = null;
  onerror: SocketLike['onerror'] = null;
  sent: (string | Uint8Array)[] = [];
  closed = false;

  constructor(readonly url: string) {}

  send(data: string | ArrayBufferView | ArrayBuffer): void {
    if (typeof data === 'string') {
      this.sent.push(data);
    } else if (data instanceof ArrayBuffer) {
      this.sent.push(new Uint8Array(data.slice(0)));
    } else {
      this.sent.push(new Uint8Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength)));
    }
  }

  close(): void {
    this.closed = true;
  }

  text(msg: object): void {
    this.onmessage?.({ data: JSON.stringify(msg) });
  }

  hello(version = 2): void {
    this.text({ type: 'hello', protocol_version: version, limits: {}, carrier: 'direct' });
  }

  binary(frame: ArrayBuffer): void {
    this.onmessage?.({ data: frame });
  }

  drop(code = 1006): void {
    this.onclose?.({ code });
  }

  /** The JSON messages the page sent. */
  json(): Record<string, unknown>[] {
    return this.sent.filter((m): m is string => typeof m === 'string').map(m => JSON.parse(m));
  }
}

function sockets(): { made: FakeSocket[]; factory: (url: string) => FakeSocket } {
  const made: FakeSocket[] = [];
  return { made, factory: url => { const s = new FakeSocket(url); made.push(s); return s; } };
}

/** A `B` message: kind, session u32, offset u64, skipped u64, bytes. */
function outputFrame(sessionId: number, offset: number, bytes: Uint8Array, skipped = 0): ArrayBuffer {
  const frame = new ArrayBuffer(21 + bytes.length);
  const view = new DataView(frame);
  view.setUint8(0, 0x42);
  view.setUint32(1, sessionId);
  view.setBigUint64(5, BigInt(offset));
  view.setBigUint64(13, BigInt(skipped));
  new Uint8Array(frame, 21).set(bytes);
  return frame;
}

const utf8 = new TextEncoder();
const decoder = new TextDecoder();

/** The widget's or the comm's carrier, played by the test. */
class FakeFallback extends CarrierBase {
  sent: FrontEndMessage[] = [];
  disposed = false;
  closedByOwner = false;
  send(msg: FrontEndMessage): void {
    this.sent.push(msg);
  }
  push(msg: KernelMessage): void {
    this.deliver(msg);
  }
  end(reason: string): void {
    this.close(reason);
  }
  dispose(): void {
    this.disposed = true;
  }
}

/**
 * What SessionTerminal does with a carrier, without xterm: attach, resume
 * when told, write what the stream says, acknowledge what was written.
 */
class View {
  readonly stream = new SessionStream();
  readonly shown: Uint8Array[] = [];
  closedWith: string | null = null;
  interruptedWith: string | null = null;

  constructor(readonly carrier: DirectFirstCarrier) {
    carrier.listen({
      received: msg => {
        const action = this.stream.handle(msg);
        if (action?.kind === 'write' || action?.kind === 'attached' || action?.kind === 'resumed') {
          this.shown.push(utf8.encode(action.text));
          if (action.kind === 'write' && action.bytes) {
            this.shown.push(action.bytes.slice());
            carrier.written(this.stream.end, true);
          }
        }
      },
      closed: reason => { this.closedWith = reason; },
      interrupted: reason => { this.interruptedWith = reason; },
      restarted: notice => {
        const id = nextRequestId();
        this.stream.resume(id, notice);
        carrier.send({ type: 'attach', request_id: id });
      }
    });
    const id = nextRequestId();
    this.stream.begin(id);
    carrier.send({ type: 'attach', request_id: id });
  }

  text(): string {
    return this.shown.map(b => decoder.decode(b)).join('');
  }
}

/** The kernel's side of one connection: answer the last attach with a replay of `output` in `chunk`-byte frames. */
function replay(socket: FakeSocket, output: Uint8Array, chunk: number, alive = true, kept = false): void {
  const attach = socket.json().filter(m => m.type === 'attach').pop();
  assert.ok(attach, 'the view attached');
  assert.equal(attach.session_id, SID);
  socket.text({ type: 'attached', request_id: attach.request_id, session_id: SID, offset: 0, alive, exit_code: null, rows: 24, cols: 80, kept });
  for (let at = 0; at < output.length; at += chunk) {
    socket.binary(outputFrame(SID, at, output.subarray(at, Math.min(output.length, at + chunk))));
  }
}

function enableTimers(t: TestContext): void {
  t.mock.timers.enable({ apis: ['setTimeout'] });
}

/** A view on a DirectFirstCarrier whose websockets and fallback the test plays. */
function directFirst(
  t: TestContext,
  options: DirectFirstCarrier.IOptions = {}
): { made: FakeSocket[]; fallback: FakeFallback; carrier: DirectFirstCarrier; view: View } {
  enableTimers(t);
  const { made, factory } = sockets();
  const fallback = new FakeFallback();
  const carrier = new DirectFirstCarrier(new DirectCarrier({ url: URL_, sessionId: SID, socket: factory }), fallback, options);
  return { made, fallback, carrier, view: new View(carrier) };
}

/** What the live view passes: a kept session's view outlives the widget's messages. */
const KEPT = { kept: { reopen: (id: number) => `open it again with %%uexec --live -s ${id}` } };

describe('framing', () => {
  test('keys go out as an I message: kind, session id u32 big-endian, UTF-8', () => {
    const frame = encodeInput(0x01020304, 'aé\r');
    assert.deepEqual([...frame], [0x49, 1, 2, 3, 4, 0x61, 0xc3, 0xa9, 0x0d]);
  });

  test('a B message becomes a data event with 64-bit offsets, its text left as bytes', () => {
    const offset = 5 * 2 ** 32 + 17; // past 4 GiB: both halves count
    const msg = decodeOutput(outputFrame(3, offset, utf8.encode('é\n'), 2 ** 33));
    assert.ok(msg);
    assert.equal(msg.session_id, 3);
    assert.equal(msg.offset, offset);
    assert.equal(msg.end, offset + 3);
    assert.equal(msg.skipped, 2 ** 33);
    assert.equal(msg.request_id, null);
    assert.deepEqual([...(msg.data as Uint8Array)], [0xc3, 0xa9, 0x0a]);
  });

  test('anything but a whole B message is not output', () => {
    assert.equal(decodeOutput(new Uint8Array([0x49, 0, 0, 0, 1, 0x61]).buffer), null);
    assert.equal(decodeOutput(new Uint8Array([0x42, 0, 0]).buffer), null);
  });

  test('the URL sits under the base URL, ws or wss as the page, with its token', () => {
    const cases: [string, ServerLocation, string][] = [
      ['abc-1', { baseUrl: '/user/alice/', token: 't0k', pageUrl: 'https://hub.example/user/alice/lab' },
        'wss://hub.example/user/alice/uexec/kernels/abc-1/channel?token=t0k'],
      ['k', { baseUrl: 'http://127.0.0.1:8888/base', pageUrl: 'http://127.0.0.1:8888/base/lab' },
        'ws://127.0.0.1:8888/base/uexec/kernels/k/channel'],
      // JupyterLab's ServerConnection settings name the websocket base.
      ['k', { wsUrl: 'ws://127.0.0.1:9/', token: '', pageUrl: 'http://127.0.0.1:9/lab' },
        'ws://127.0.0.1:9/uexec/kernels/k/channel'],
      ['a/b', { baseUrl: '/', pageUrl: 'http://h/lab' }, 'ws://h/uexec/kernels/a%2Fb/channel']
    ];
    for (const [kernelId, where, url] of cases) {
      assert.equal(directUrl(kernelId, where), url);
    }
  });
});

/** A DirectCarrier whose one websocket has said `hello`, on mock timers. */
function openDirect(t: TestContext): { made: FakeSocket[]; direct: DirectCarrier } {
  enableTimers(t);
  const { made, factory } = sockets();
  const direct = new DirectCarrier({ url: URL_, sessionId: SID, socket: factory });
  made[0].hello();
  return { made, direct };
}

describe('DirectCarrier', () => {
  test('keys are I frames, other requests JSON text with the session id', t => {
    enableTimers(t);
    const { made, factory } = sockets();
    const direct = new DirectCarrier({ url: URL_, sessionId: SID, socket: factory });
    assert.equal(made[0].url, URL_);
    assert.equal(made[0].binaryType, 'arraybuffer');
    direct.send({ type: 'input', data: 'x' }); // before hello: not sent
    made[0].hello();
    assert.ok(direct.isOpen);
    direct.send({ type: 'input', data: 'ls\r' });
    direct.send({ type: 'resize', rows: 5, cols: 9 });
    assert.deepEqual(made[0].sent[0], encodeInput(SID, 'ls\r'));
    // The order matters to nobody but the browser tests' resize recorder.
    assert.equal(made[0].sent[1], '{"type":"resize","rows":5,"cols":9,"session_id":7}');
    direct.dispose();
  });

  test('acknowledges past 64 KiB unacknowledged at once, a drained tail after ACK_IDLE_MS', t => {
    const { made, direct } = openDirect(t);
    direct.written(1000, false);
    direct.written(2000, true); // an echo: drained, a small tail
    direct.written(2001, true); // the next one, before the tail's ack: the same ack covers it
    assert.deepEqual(made[0].json(), []);
    t.mock.timers.tick(ACK_IDLE_MS - 1);
    assert.deepEqual(made[0].json(), []);
    t.mock.timers.tick(1);
    assert.deepEqual(made[0].json(), [{ type: 'ack', session_id: SID, end: 2001 }]);
    direct.written(2001 + ACK_BYTES - 1, false);
    assert.equal(made[0].json().length, 1);
    direct.written(2001 + ACK_BYTES, false); // a flood: at once, and it takes the pending tail along
    direct.written(2001 + ACK_BYTES, true); // nothing new
    t.mock.timers.tick(ACK_IDLE_MS);
    assert.deepEqual(made[0].json(), [
      { type: 'ack', session_id: SID, end: 2001 },
      { type: 'ack', session_id: SID, end: 2001 + ACK_BYTES }
    ]);
    direct.dispose();
    assert.ok(made[0].closed);
  });

  test('a kernel that runs elsewhere (4421) closes it at once, saying so, even after it was open', t => {
    const { made, direct } = openDirect(t);
    const said: string[] = [];
    direct.listen({ received: () => undefined, closed: reason => said.push(reason) });
    made[0].drop(4404); // a restart's gap: it asks again
    assert.deepEqual(said, []);
    t.mock.timers.tick(RECONNECT_DELAYS_MS[0]);
    assert.equal(made.length, 2);
    made[1].drop(4421); // the kernel is now a gateway's: no more asking
    assert.deepEqual(said, [REMOTE_KERNEL]);
    assert.ok(direct.isClosed);
    t.mock.timers.tick(KEPT_RECONNECT_MS);
    assert.equal(made.length, 2);
  });

  test('a pending ack dies with its connection', t => {
    const { made, direct } = openDirect(t);
    direct.written(500, true);
    direct.dispose();
    t.mock.timers.tick(ACK_IDLE_MS);
    assert.deepEqual(made[0].json(), []);
  });
});

describe('DirectFirstCarrier', () => {
  test('uses the direct channel once it says hello, and nothing goes to the fallback', t => {
    const { made, fallback, carrier, view } = directFirst(t);
    assert.equal(carrier.choice, 'deciding');
    made[0].hello();
    assert.equal(carrier.choice, 'direct');
    replay(made[0], utf8.encode('$ '), 64);
    made[0].binary(outputFrame(SID, 2, utf8.encode('ok\r\n')));
    // The widget's messages keep coming (other views); this view ignores them.
    fallback.push({ type: 'data', request_id: null, session_id: SID, offset: 6, end: 9, skipped: 0, data: 'xxx' });
    assert.equal(view.text(), '$ ok\r\n');
    assert.equal(fallback.sent.length, 0);
    carrier.dispose();
    assert.ok(made[0].closed && fallback.disposed);
  });

  for (const [why, fail] of [
    ['the websocket is refused', (s: FakeSocket, _t: TestContext) => s.drop(1006)],
    ['the server has no channel for the kernel (4404)', (s: FakeSocket, _t: TestContext) => s.drop(4404)],
    ['the kernel runs elsewhere, a gateway\'s (4421)', (s: FakeSocket, _t: TestContext) => s.drop(4421)],
    ['no hello comes within 10 s', (_s: FakeSocket, t: TestContext) => t.mock.timers.tick(HELLO_TIMEOUT_MS)],
    ['the kernel speaks another protocol version', (s: FakeSocket, _t: TestContext) => s.hello(99)]
  ] as const) {
    test(`falls back silently when ${why}, sending what waited`, t => {
      const { made, fallback, carrier, view } = directFirst(t);
      carrier.send({ type: 'resize', rows: 3, cols: 4 });
      t.mock.timers.tick(HELLO_TIMEOUT_MS - 1);
      assert.equal(fallback.sent.length, 0);
      fail(made[0], t);
      assert.equal(carrier.choice, 'fallback');
      assert.deepEqual(fallback.sent.map(m => m.type), ['attach', 'resize']);
      assert.ok(made[0].closed);
      // No second try: a page without the channel does not keep knocking.
      t.mock.timers.tick(10_000);
      assert.equal(made.length, 1);
      const attach = fallback.sent[0] as { request_id: string };
      fallback.push({ type: 'attached', request_id: attach.request_id, session_id: SID, offset: 0, alive: true, exit_code: null, rows: 24, cols: 80 });
      fallback.push({ type: 'data', request_id: attach.request_id, session_id: SID, offset: 0, end: 2, skipped: 0, data: '$ ' });
      assert.equal(view.text(), '$ ');
      assert.equal(view.closedWith, null);
    });
  }

  test("a fallback that throws on send (its comm went with the page's kernel connection) closes the view, throwing nothing", t => {
    const { made, fallback, carrier, view } = directFirst(t);
    fallback.send = () => {
      throw new Error('Cannot send'); // @jupyterlab/services' comm of a disposed kernel connection
    };
    carrier.send({ type: 'resize', rows: 3, cols: 4 });
    assert.doesNotThrow(() => made[0].drop(4404)); // "no direct channel": what waited goes to the fallback
    assert.equal(view.closedWith, 'disconnected from the kernel');
    assert.ok(carrier.isClosed);
    assert.doesNotThrow(() => carrier.send({ type: 'input', data: 'x' }));
  });

  test('a URL the browser refuses to open is the fallback at once', () => {
    const fallback = new FakeFallback();
    const refuse = (): SocketLike => {
      throw new SyntaxError('bad URL');
    };
    const carrier = new DirectFirstCarrier(new DirectCarrier({ url: 'ws://[', sessionId: SID, socket: refuse }), fallback);
    new View(carrier);
    assert.equal(carrier.choice, 'fallback');
    assert.deepEqual(fallback.sent.map(m => m.type), ['attach']);
  });

  test('without a URL (VS Code, Colab, no kernel id) it is the fallback from the start', () => {
    const fallback = new FakeFallback();
    const carrier = new DirectFirstCarrier(null, fallback);
    new View(carrier);
    assert.equal(carrier.choice, 'fallback');
    assert.deepEqual(fallback.sent.map(m => m.type), ['attach']);
  });

  test('the fallback closing (kernel restart, widget closed) closes the view and the channel', t => {
    const { made, fallback, carrier, view } = directFirst(t);
    made[0].hello();
    fallback.end('disconnected from the kernel');
    assert.equal(view.closedWith, 'disconnected from the kernel');
    assert.ok(carrier.isClosed && made[0].closed);
    t.mock.timers.tick(10_000);
    assert.equal(made.length, 1, 'no reconnect after closing');
  });
});

describe('reconnecting', () => {
  // 320 bytes of numbered lines, with two-byte characters to cut through.
  const before = utf8.encode(Array.from({ length: 40 }, (_, i) => `l${String(i).padStart(3, '0')}é\r\n`).join(''));

  test('a drop, a reconnect and a replay show every byte exactly once', t => {
    assert.equal(before.length, 320);
    const { made, fallback, carrier, view } = directFirst(t);
    made[0].hello();
    replay(made[0], before.subarray(0, 100), 64);
    made[0].binary(outputFrame(SID, 100, before.subarray(100, 150)));
    made[0].drop();
    assert.equal(made.length, 1);
    carrier.send({ type: 'input', data: 'q' }); // typed while away: waits
    t.mock.timers.tick(RECONNECT_DELAYS_MS[0]);
    assert.equal(made.length, 2);
    made[1].hello();
    // The new connection gets the waiting key and a new attach; the kernel
    // printed 150..320 meanwhile, and replays it all in 64-byte frames
    // (so one frame straddles what was shown, at byte 150).
    assert.deepEqual(made[1].sent[0], encodeInput(SID, 'q'));
    replay(made[1], before.subarray(0, 250), 64);
    made[1].binary(outputFrame(SID, 250, before.subarray(250)));
    assert.equal(view.text(), decoder.decode(before));
    assert.equal(view.stream.end, before.length);
    assert.ok(view.stream.live);
    // Acks on the new connection count from its own start (the drained tail's, after ACK_IDLE_MS).
    t.mock.timers.tick(ACK_IDLE_MS);
    assert.deepEqual(made[1].json().filter(m => m.type === 'ack').pop(), { type: 'ack', session_id: SID, end: before.length });
    assert.equal(fallback.sent.length, 0);
  });

  test('after the last backoff it falls back to the comm, still without a repeated byte', t => {
    const { made, fallback, carrier, view } = directFirst(t);
    made[0].hello();
    replay(made[0], before.subarray(0, 123), 50);
    made[0].drop();
    for (const [attempt, wait] of RECONNECT_DELAYS_MS.entries()) {
      t.mock.timers.tick(wait - 1);
      assert.equal(made.length, attempt + 1);
      t.mock.timers.tick(1);
      assert.equal(made.length, attempt + 2);
      if (attempt === 1) {
        t.mock.timers.tick(HELLO_TIMEOUT_MS); // opens, never says hello
      } else {
        made[attempt + 1].drop();
      }
    }
    assert.equal(carrier.choice, 'fallback');
    const attach = fallback.sent.find(m => m.type === 'attach') as { request_id: string };
    assert.ok(attach, 'attached again over the comm');
    // The comm's JSON replay, in two events, the first ending past what was shown.
    const text = decoder.decode(before);
    fallback.push({ type: 'attached', request_id: attach.request_id, session_id: SID, offset: 0, alive: true, exit_code: null, rows: 24, cols: 80 });
    fallback.push({ type: 'data', request_id: attach.request_id, session_id: SID, offset: 0, end: 140, skipped: 0, data: decoder.decode(before.subarray(0, 140)) });
    fallback.push({ type: 'data', request_id: attach.request_id, session_id: SID, offset: 140, end: before.length, skipped: 0, data: decoder.decode(before.subarray(140)) });
    assert.equal(view.text(), text);
    assert.equal(view.closedWith, null);
  });

  test('output the kernel no longer keeps shows as a skip, not as a silent hole', t => {
    const { made, view } = directFirst(t);
    made[0].hello();
    replay(made[0], utf8.encode('abc'), 64);
    made[0].drop();
    t.mock.timers.tick(RECONNECT_DELAYS_MS[0]);
    made[1].hello();
    const attach = made[1].json().find(m => m.type === 'attach')!;
    made[1].text({ type: 'attached', request_id: attach.request_id, session_id: SID, offset: 5003, alive: true, exit_code: null, rows: 24, cols: 80 });
    made[1].binary(outputFrame(SID, 5003, utf8.encode('tail')));
    assert.match(view.text(), /^abc\r\n\x1b\[2m\[… 5\.0 kB skipped …\]\x1b\[22m\r\ntail$/);
  });
});

describe('a kept session across a kernel restart', () => {
  test('a kept channel keeps trying for 30 s, at most a second apart; others give up after 1.75 s', () => {
    assert.deepEqual([0, 1, 2, 3].map(i => reconnectDelay(i, false, 0)), [250, 500, 1000, null]);
    const delays: number[] = [];
    for (let waited = 0, delay = reconnectDelay(0, true, 0); delay !== null; delay = reconnectDelay(delays.length, true, waited)) {
      delays.push(delay);
      waited += delay;
    }
    assert.deepEqual(delays.slice(0, 4), [250, 500, 1000, 1000]);
    assert.ok(Math.max(...delays) <= 1000);
    const total = delays.reduce((a, b) => a + b, 0);
    assert.ok(total >= KEPT_RECONNECT_MS && total < KEPT_RECONNECT_MS + 1000, String(total));
  });

  test('the view waits out the restart on the direct channel, says so in one line, and types on', t => {
    const { made, fallback, carrier, view } = directFirst(t, KEPT);
    made[0].hello();
    replay(made[0], utf8.encode('$ '), 64, true, true);
    // The widget's comm dies with the kernel; then the kernel's socket closes.
    fallback.end('disconnected from the kernel');
    assert.equal(view.closedWith, null);
    assert.equal(view.interruptedWith, 'disconnected from the kernel; reconnecting');
    assert.ok(carrier.outlivedFallback);
    made[0].drop(1001);
    carrier.send({ type: 'input', data: 'e' }); // typed while the kernel restarts: waits
    // The restart takes 3 s: the relay has no socket yet (4404), well past the 1.75 s of a plain drop.
    let waited = 0;
    while (waited < 3000) {
      const delay = reconnectDelay(made.length - 1, true, waited)!;
      t.mock.timers.tick(delay);
      waited += delay;
      made[made.length - 1].drop(4404);
    }
    const before = made.length;
    t.mock.timers.tick(1000);
    assert.equal(made.length, before + 1);
    const next = made[made.length - 1];
    next.hello();
    assert.deepEqual(next.sent[0], encodeInput(SID, 'e'));
    const attach = next.json().find(m => m.type === 'attach')!;
    assert.ok(attach, 'attached again by session id');
    next.text({ type: 'attached', request_id: attach.request_id, session_id: SID, offset: 0, alive: true, exit_code: null, rows: 24, cols: 80, kept: true });
    next.binary(outputFrame(SID, 0, utf8.encode('$ e')));
    // The prompt the line cut is drawn again under it, where the shell's cursor is.
    assert.equal(view.text(), `$ \r\n\x1b[2m${KEPT_NOTICE}\x1b[22m\r\n$ e`);
    carrier.send({ type: 'input', data: 'cho\r' });
    assert.deepEqual(next.sent.at(-1), encodeInput(SID, 'cho\r'));
    assert.equal(fallback.sent.length, 0);
    // A later drop (the network) is no restart: no second line.
    next.drop();
    t.mock.timers.tick(RECONNECT_DELAYS_MS[0]);
    made[made.length - 1].hello();
    replay(made[made.length - 1], utf8.encode('$ echo\r\n'), 64, true, true);
    assert.equal(view.text().split(KEPT_NOTICE).length, 2);
    // Another Restart Kernel: the kernel closes the channel (1001) again, and the view says so again.
    made[made.length - 1].drop(1001);
    t.mock.timers.tick(RECONNECT_DELAYS_MS[0]);
    made[made.length - 1].hello();
    replay(made[made.length - 1], utf8.encode('$ echo\r\n$ '), 64, true, true);
    assert.equal(view.text().split(KEPT_NOTICE).length, 3);
    assert.equal(view.closedWith, null);
  });

  test('a next kernel quicker than the news of the old one\'s comm: one line, and the view goes on', t => {
    const { made, fallback, view } = directFirst(t, KEPT);
    made[0].hello();
    replay(made[0], utf8.encode('$ '), 64, true, true);
    made[0].drop(1001);
    t.mock.timers.tick(RECONNECT_DELAYS_MS[0]);
    made[1].hello();
    replay(made[1], utf8.encode('$ '), 64, true, true);
    fallback.end('disconnected from the kernel');
    assert.equal(view.interruptedWith, null, 'already on the next kernel');
    assert.equal(view.closedWith, null);
    assert.equal(view.text(), `$ \r\n\x1b[2m${KEPT_NOTICE}\x1b[22m\r\n$ `);
  });

  test('a next kernel that never answers ends the view after 30 s, saying how to open the session again', t => {
    const { made, fallback, view } = directFirst(t, KEPT);
    made[0].hello();
    replay(made[0], utf8.encode('$ '), 64, true, true);
    made[0].drop(1001); // the socket may close before the comm
    fallback.end('disconnected from the kernel');
    // Every try is refused (the kernel is gone): a try a second at most, until 30 s have gone by.
    let elapsed = 0;
    let dropped = 1;
    while (view.closedWith === null && elapsed < 2 * KEPT_RECONNECT_MS) {
      t.mock.timers.tick(250);
      elapsed += 250;
      while (dropped < made.length) {
        made[dropped++].drop(1006);
      }
    }
    assert.equal(view.closedWith, 'the kernel did not come back; open it again with %%uexec --live -s 7');
    assert.ok(elapsed >= KEPT_RECONNECT_MS && elapsed <= KEPT_RECONNECT_MS + 1000, String(elapsed));
    assert.ok(made.length >= 30, `${made.length} tries`);
    const tries = made.length;
    t.mock.timers.tick(60_000);
    assert.equal(made.length, tries, 'no more tries');
  });

  test('with no direct channel a kept view closes saying how to open the session again', () => {
    const fallback = new FakeFallback();
    const carrier = new DirectFirstCarrier(null, fallback, KEPT);
    const view = new View(carrier);
    const attach = fallback.sent[0] as { request_id: string };
    fallback.push({ type: 'attached', request_id: attach.request_id, session_id: SID, offset: 0, alive: true, exit_code: null, rows: 24, cols: 80, kept: true });
    fallback.end(DISCONNECTED_NOTICE); // what the widget's comm says as it dies with its kernel
    assert.equal(view.closedWith, 'disconnected from the kernel; open it again with %%uexec --live -s 7');
  });

  test('a session not kept closes with its kernel as before, the channel too', t => {
    const { made, fallback, carrier, view } = directFirst(t, KEPT);
    made[0].hello();
    replay(made[0], utf8.encode('$ '), 64, true, false);
    fallback.end('disconnected from the kernel');
    assert.equal(view.closedWith, 'disconnected from the kernel');
    assert.equal(view.interruptedWith, null);
    assert.ok(carrier.isClosed && made[0].closed);
    t.mock.timers.tick(10_000);
    assert.equal(made.length, 1);
  });

  for (const [name, options] of [['a live view', KEPT], ['a tab', undefined]] as const) {
    test(`${name}: a session not kept ends when the kernel closes its channel (1001), no reconnect, no fallback`, t => {
      const { made, fallback, carrier, view } = directFirst(t, options);
      made[0].hello();
      replay(made[0], utf8.encode('$ '), 64, true, false);
      made[0].drop(1001); // Kernel > Shut Down (or a restart) before the widget's comm is seen to die
      assert.equal(view.closedWith, ENDED_WITH_THE_KERNEL);
      assert.ok(carrier.isClosed);
      t.mock.timers.tick(60_000);
      assert.equal(made.length, 1, 'no reconnect');
      assert.equal(fallback.sent.length, 0, "no attach over the dead kernel's messages");
    });
  }

  test('a widget closed by its owner (close() in Python) ends the view, kept or not', t => {
    const { made, fallback, view } = directFirst(t, KEPT);
    made[0].hello();
    replay(made[0], utf8.encode('$ '), 64, true, true);
    fallback.closedByOwner = true;
    fallback.end('disconnected from the kernel');
    assert.equal(view.closedWith, 'disconnected from the kernel');
    assert.ok(made[0].closed);
  });

  test('without the option (a terminal tab, which opens a new comm itself) a kept view closes too', t => {
    const { made, fallback, view } = directFirst(t);
    made[0].hello();
    replay(made[0], utf8.encode('$ '), 64, true, true);
    fallback.end('the kernel restarted');
    assert.equal(view.closedWith, 'the kernel restarted');
  });
});
