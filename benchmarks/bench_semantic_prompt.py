"""What the OSC 133 scanner costs on a session's decoded output.

    python benchmarks/bench_semantic_prompt.py [MB]

Feeds ~100 MB of text shaped like `seq` through a PTY (`1\\r\\n2\\r\\n...`), as the
bytes a session scans (whole UTF-8 characters), in the chunk sizes a session reads
(4 KiB: one PTY read; 64 KiB: a callback that read until EAGAIN), plain, with
colour escapes on every line (ESC everywhere, no marker), and with a full marker
set (A, B, C, D) every 100 lines (far more than a shell prints). Goal: plain text
costs nothing next to the ~80 MB/s drain rate; `of drain` is the scan's time as a
share of that drain's time for the same bytes.
"""

from __future__ import annotations

import sys
import time

from unified_exec_kernel.core.completion.semantic_prompt import SemanticPromptScanner

NONCE = "0123456789abcdef"
DRAIN_MB_S = 80.0  # a session's drain rate when a program floods (benchmarks/bench_engine.py `drain`)


def _text(total_bytes: int, shape: str) -> bytes:
    lines = []
    size = 0
    n = 0
    markers = "".join(f"\x1b]133;{k};uexec={NONCE}\a" for k in ("D;0", "A", "B", "C"))
    while size < total_bytes:
        n += 1
        line = f"\x1b[01;34m{n}\x1b[0m\r\n" if shape == "colour" else f"{n}\r\n"
        if shape == "markers" and n % 100 == 0:
            line += markers
        lines.append(line)
        size += len(line)
    return "".join(lines).encode()


def _chunks(text: bytes, size: int) -> list[bytes]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def measure(chunks: list[bytes]) -> tuple[float, int]:
    scanner = SemanticPromptScanner(NONCE)
    events = 0
    started = time.perf_counter()
    for chunk in chunks:
        events += len(scanner.feed(chunk)[1])
    return time.perf_counter() - started, events


def main() -> None:
    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 100.0
    total = int(megabytes * 1e6)
    print(f"{'shape':8} {'chunk':>6} {'MB/s':>9} {'events':>8} {'of drain':>9}")
    for shape in ("plain", "colour", "markers"):
        text = _text(total, shape)
        for size in (4096, 65536):
            chunks = _chunks(text, size)
            seconds, events = measure(chunks)
            rate = len(text) / seconds / 1e6
            print(f"{shape:8} {size:6} {rate:9.0f} {events:8} {DRAIN_MB_S / rate:9.1%}")


if __name__ == "__main__":
    main()
