"""What ZeroMQ CURVE and the frame tags add per frame between two worker transports: CPU seconds of one process
sending and receiving ``--frames`` frames of ``--bytes`` bytes over 127.0.0.1 through
:class:`storm_py.transport.zmq.ZmqTransport`, in each of ``--modes``, alternating ``--runs`` times.  Median CPU µs
per frame of each; divide a difference by the items per frame (word count: ~500-600, ``items_per_frame`` in
cluster_perf.py) for the cost per tuple.

Modes: ``plain`` (neither), ``tags`` (each frame sealed and opened with :class:`FrameAuth`, as a worker does with
``storm.messaging.encryption: none``), ``curve`` (encrypted both ways, no tags: what a worker does with ``curve``
since CURVE authenticates every message), ``curve+tags`` (both: what a worker did with ``curve`` before).  One
mode alone is for ``valgrind --tool=callgrind``, whose instruction count is then that mode's.

    python bench/curve_frames.py --frames 20000 --bytes 5000 --runs 5
    python bench/curve_frames.py --frames 5000 --bytes 30000 --runs 5 --modes tags,curve,curve+tags
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

from storm_py.runtime.transfer.auth import FrameAuth
from storm_py.transport.zmq import ZmqTransport

MODES = ("plain", "tags", "curve", "curve+tags")


def one_run(frames: int, size: int, mode: str) -> float:
    """CPU µs per frame sent and received (both ends in this process) in ``mode``."""
    seed = b"k" * 32 if mode.startswith("curve") else None
    auth = FrameAuth(b"t" * 32) if mode.endswith("tags") else None
    server, client = ZmqTransport(hwm=1000, curve_seed=seed), ZmqTransport(hwm=1000, curve_seed=seed)
    receiver = server.bind("127.0.0.1", 0)
    done = threading.Event()
    count = [0]

    def on_frame(frame: bytes) -> None:
        if auth is not None and auth.open(frame) is None:
            raise RuntimeError("a frame lost its tag")
        count[0] += 1
        if count[0] == frames:
            done.set()

    receiver.start(on_frame)
    sender = client.connect(receiver.address)
    first = b"x" * size
    sender.send(first if auth is None else auth.seal(first))  # the handshake, outside the timing
    while count[0] < 1:
        time.sleep(0.001)
    count[0] = 0
    payload = b"y" * size
    cpu0 = time.process_time()
    for _ in range(frames):
        sender.send(payload if auth is None else auth.seal(payload))
    done.wait(120)
    cpu = time.process_time() - cpu0
    client.close()
    server.close()
    return cpu / frames * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=20000)
    ap.add_argument("--bytes", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--modes", default="plain,curve", help=f"comma-separated, of {', '.join(MODES)}")
    args = ap.parse_args()
    modes = args.modes.split(",")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        ap.error(f"unknown modes {unknown}; choose from {', '.join(MODES)}")
    runs: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(args.runs):
        for mode in modes:
            runs[mode].append(one_run(args.frames, args.bytes, mode))
    print(json.dumps({
        "frames": args.frames, "bytes": args.bytes,
        **{f"{m}_cpu_us_per_frame": round(statistics.median(v), 2) for m, v in runs.items()},
        **{f"runs_{m}": [round(x, 2) for x in v] for m, v in runs.items()},
    }))  # fmt: skip


if __name__ == "__main__":
    main()
