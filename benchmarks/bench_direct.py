"""The direct channel without a browser: keystroke to echo and flood throughput, against the comm, in the same run.

    python benchmarks/bench_direct.py            # all cases
    python benchmarks/bench_direct.py keys       # the echo only
    python benchmarks/bench_direct.py flood      # the flood only
    python benchmarks/bench_direct.py misbehave  # the kernel's memory under a client that never reads

One `jupyter server` (token, private runtime dir) and one `uexec` kernel; a
`cat` session in canonical mode, so the line discipline echoes each typed
character at once. Each key is timed from its send to the frame or event
that carries its echo, keys 20 ms apart:

- keys_socket: an `I` frame on the kernel's Unix socket, the `B` echo (the
  kernel's own floor: no server, no websocket);
- keys_relay: the same through the server's relay (tornado's websocket
  client as the page: binary `I` message, binary `B` message);
- keys_comm: the comm over the kernel's websocket (`input` -> live `data`),
  what a live view used before the direct channel.

flood_*: `seq 1 2000000` (15.8 MB through the terminal) to an attached view
that acknowledges every 64 KiB as the page does: MB/s from the key that
starts it to `exited`, and the bytes skipped (0 when the view keeps up).
The browser's own figures (paint, xterm.js) are benchmarks/bench_live.py's.

misbehave: the kernel's RSS before and after a client on its socket that
sends and never reads: 200 `I` frames of 1 MiB to a program that never reads
its terminal (`sleep`), then 400 `attach`es of a session with a full
scrollback. The input window and the bound on unread replies keep both near
0 (docs/protocol.md, "Flow control"); before them, +206 MiB and +100 MiB.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.kernel_ws import Channels  # noqa: E402
from tests.misbehaving_client import MIB, attach_storm, keystroke_flood, settled_rss  # noqa: E402
from tests.server_process import JupyterServer  # noqa: E402
from unified_exec_kernel.protocol import frames  # noqa: E402
from unified_exec_kernel.protocol.address import find_socket  # noqa: E402

KEYS = 200
KEY_GAP_S = 0.02
FLOOD_LAST = 2_000_000


class Server(JupyterServer):
    def __init__(self):
        super().__init__(Path(tempfile.mkdtemp(prefix="uexec-bench-")))

    def stop(self):
        super().stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def summary(name: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    return f"{name:12s} p50 {statistics.median(ms):7.3f} ms   p90 {ms[int(len(ms) * 0.9)]:7.3f} ms   p99 {ms[int(len(ms) * 0.99)]:7.3f} ms   (n={len(ms)})"


# -- carriers: send a key, wait for bytes of a session -------------------------------------


class SocketCarrier:
    async def open(self, server, kernel_id):
        connection_file = server.runtime / f"kernel-{kernel_id}.json"
        self.reader, self.writer = await asyncio.open_unix_connection(find_socket(str(connection_file)), limit=2**24)
        await self.read()  # hello

    async def read(self):
        head = await self.reader.readexactly(5)
        kind, length = frames.HEADER.unpack(head)
        return kind, await self.reader.readexactly(length)

    def send_text(self, message):
        self.writer.write(frames.text_frame(json.dumps(message).encode()))

    def key(self, sid, data):
        self.writer.write(frames.input_frame(sid, data))

    def close(self):
        self.writer.close()


class RelayCarrier(SocketCarrier):
    async def open(self, server, kernel_id):
        url = f"ws://127.0.0.1:{server.port}/uexec/kernels/{kernel_id}/channel?token={server.token}"
        self.ws = await websocket_connect(HTTPRequest(url))
        await self.read()

    async def read(self):
        message = await self.ws.read_message()
        if isinstance(message, str):
            return frames.TEXT, message.encode()
        return message[:1], message[1:]

    def send_text(self, message):
        self.ws.write_message(json.dumps(message))

    def key(self, sid, data):
        self.ws.write_message(frames.INPUT + frames.INPUT_HEADER.pack(sid) + data, binary=True)

    def close(self):
        self.ws.close()


async def attach(carrier, sid) -> int:
    carrier.send_text({"type": "attach", "request_id": "a", "session_id": sid})
    while True:
        kind, payload = await carrier.read()
        if kind == frames.TEXT and json.loads(payload).get("type") == "attached":
            return json.loads(payload)["offset"]


async def keys_direct(carrier, sid) -> list[float]:
    await attach(carrier, sid)
    times = []
    for index in range(KEYS):
        key = b"abcdefghij"[index % 10 : index % 10 + 1]
        started = time.perf_counter()
        carrier.key(sid, key)
        while True:
            kind, payload = await carrier.read()
            if kind == frames.OUTPUT and key in payload[frames.OUTPUT_HEADER.size :]:
                break
        times.append(time.perf_counter() - started)
        await asyncio.sleep(KEY_GAP_S)
    carrier.key(sid, b"\x15")  # kill the line
    return times


async def keys_comm(server, kernel_id, sid) -> list[float]:
    channels = await Channels.connect(f"ws://127.0.0.1:{server.port}/api/kernels/{kernel_id}/channels", server.token)
    try:
        comm = await channels.open_unified_exec()
        await channels.ask(comm, {"type": "attach", "request_id": "a", "session_id": sid})
        times = []
        for index in range(KEYS):
            key = "abcdefghij"[index % 10]
            started = time.perf_counter()
            channels.comm_send(comm, {"type": "input", "session_id": sid, "data": key})
            await channels.comm_next(comm, lambda d: d.get("type") == "data" and d.get("request_id") is None and key in d["data"],
                                     time.monotonic() + 10, "echo")
            times.append(time.perf_counter() - started)
            await asyncio.sleep(KEY_GAP_S)
        channels.comm_send(comm, {"type": "input", "session_id": sid, "data": "\x15"})
        return times
    finally:
        channels.close()


async def flood(carrier, sid) -> str:
    end = acked = await attach(carrier, sid)
    started = time.perf_counter()
    carrier.key(sid, f"seq 1 {FLOOD_LAST}\r".encode())
    skipped_total = received = frames_seen = 0
    while True:
        kind, payload = await carrier.read()
        if kind == frames.TEXT:
            message = json.loads(payload)
            if message["type"] == "exited":
                break
            continue
        _, offset, skipped, data = frames.read_output(payload)
        skipped_total += skipped
        received += len(data)
        frames_seen += 1
        end = offset + len(data)
        if end - acked >= 64 * 1024:
            carrier.send_text({"type": "ack", "session_id": sid, "end": end})
            acked = end
    seconds = time.perf_counter() - started
    return f"{received / seconds / 1e6:6.1f} MB/s  {received / 1e6:.1f} MB in {seconds:.2f} s in {frames_seen} frames, skipped {skipped_total}"


def kernel_pid(connection_file: Path) -> int:
    """The kernel process the server started with this connection file."""
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(connection_file).encode() in (entry / "cmdline").read_bytes():
                return int(entry.name)
        except OSError:
            continue
    raise RuntimeError(f"no process runs {connection_file}")


async def misbehave(server, kernel_id) -> str:
    channels = await Channels.connect(f"ws://127.0.0.1:{server.port}/api/kernels/{kernel_id}/channels", server.token)
    try:
        _, text = await channels.execute("%%uexec --name deaf -t 0\nsleep 600\n")
        deaf = int(text.split("[session ")[1].split()[0])
        await channels.execute("%%uexec --name full -t 3000\nsh -c \"head -c 300000 /dev/zero | tr '\\\\0' x; sleep 600\"\n")
        connection_file = server.runtime / f"kernel-{kernel_id}.json"
        pid, path = kernel_pid(connection_file), find_socket(str(connection_file))
        before = await asyncio.to_thread(settled_rss, pid, 1.0)
        keys, sent = await asyncio.to_thread(keystroke_flood, path, deaf)
        after_keys = await asyncio.to_thread(settled_rss, pid)
        storm, attaches = await asyncio.to_thread(attach_storm, path, "full")
        after_attaches = await asyncio.to_thread(settled_rss, pid)
        keys.close()
        storm.close()
        await channels.execute("%uexec_kill deaf\n%uexec_kill full\n")
    finally:
        channels.close()
    return (
        f"kernel RSS {before / MIB:.1f} MiB; {sent} x 1 MiB keys to a program that never reads: "
        f"{(after_keys - before) / MIB:+.1f} MiB; {attaches} attaches never read: {(after_attaches - after_keys) / MIB:+.1f} MiB"
    )


CASES = ("keys", "flood", "misbehave")


async def main(cases: list[str]) -> None:
    unknown = [name for name in cases if name not in CASES]
    if unknown:
        sys.exit(f"unknown case {', '.join(unknown)}; choose from {', '.join(CASES)}")
    server = Server()
    try:
        kernel_id = server.api("POST", "api/kernels", {"name": "uexec"})["id"]
        channels = await Channels.connect(f"ws://127.0.0.1:{server.port}/api/kernels/{kernel_id}/channels", server.token)
        try:
            reply, text = await channels.execute("%%uexec --name keys -t 300\ncat\n")
            assert reply["status"] == "ok", text
        finally:
            channels.close()
        sid = 0
        if "keys" in cases:
            p50 = {}
            for name, carrier in (("keys_socket", SocketCarrier()), ("keys_relay", RelayCarrier())):
                await carrier.open(server, kernel_id)
                p50[name] = statistics.median(times := await keys_direct(carrier, sid))
                print(summary(name, times))
                carrier.close()
            p50["keys_comm"] = statistics.median(times := await keys_comm(server, kernel_id, sid))
            print(summary("keys_comm", times))
            print(
                f"{'keys ratios':12s} relay / comm p50 {p50['keys_relay'] / p50['keys_comm']:.2f}, "
                f"relay / socket p50 {p50['keys_relay'] / p50['keys_socket']:.2f} (what the server's relay adds)"
            )
        if "flood" in cases:
            for name, carrier in (("flood_socket", SocketCarrier()), ("flood_relay", RelayCarrier())):
                channels = await Channels.connect(f"ws://127.0.0.1:{server.port}/api/kernels/{kernel_id}/channels", server.token)
                reply, text = await channels.execute(f"%%uexec --name {name} -t 0\nsh -c 'read x; seq 1 {FLOOD_LAST}'\n")
                channels.close()
                flood_sid = int(text.split("[session ")[1].split()[0])
                await carrier.open(server, kernel_id)
                print(f"{name:12s} {await flood(carrier, flood_sid)}")
                carrier.close()
        if "misbehave" in cases:
            print(f"{'misbehave':12s} {await misbehave(server, kernel_id)}")
    finally:
        server.stop()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or list(CASES)))
