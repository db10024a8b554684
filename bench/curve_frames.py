"""What ZeroMQ CURVE adds per frame between two worker transports: CPU seconds of one process sending and receiving
``--frames`` frames of ``--bytes`` bytes over 127.0.0.1 through :class:`storm_py.transport.zmq.ZmqTransport`,
plain and with ``curve_seed`` (encrypted both ways), alternating ``--runs`` times.  Median CPU µs per frame of
each; divide the difference by the items per frame (word count: ~500, ``items_per_frame`` in cluster_perf.py) for
the cost per tuple.

    python bench/curve_frames.py --frames 20000 --bytes 5000 --runs 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

from storm_py.transport.zmq import ZmqTransport


def one_run(frames: int, size: int, seed: bytes | None) -> float:
    """CPU µs per frame sent and received (both ends in this process)."""
    server, client = ZmqTransport(hwm=1000, curve_seed=seed), ZmqTransport(hwm=1000, curve_seed=seed)
    receiver = server.bind("127.0.0.1", 0)
    done = threading.Event()
    count = [0]

    def on_frame(_frame: bytes) -> None:
        count[0] += 1
        if count[0] == frames:
            done.set()

    receiver.start(on_frame)
    sender = client.connect(receiver.address)
    sender.send(b"x" * size)  # the handshake, outside the timing
    while count[0] < 1:
        time.sleep(0.001)
    count[0] = 0
    payload = b"y" * size
    cpu0 = time.process_time()
    for _ in range(frames):
        sender.send(payload)
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
    ap.add_argument("--modes", default="plain,curve", help="which to run: plain, curve or both (one alone: for "
                    "valgrind --tool=callgrind, whose instruction count is then that mode's)")
    args = ap.parse_args()
    modes = args.modes.split(",")
    plain: list[float] = []
    curve: list[float] = []
    for _ in range(args.runs):
        if "plain" in modes:
            plain.append(one_run(args.frames, args.bytes, None))
        if "curve" in modes:
            curve.append(one_run(args.frames, args.bytes, b"k" * 32))
    print(json.dumps({
        "frames": args.frames, "bytes": args.bytes,
        "plain_cpu_us_per_frame": round(statistics.median(plain), 2) if plain else None,
        "curve_cpu_us_per_frame": round(statistics.median(curve), 2) if curve else None,
        "runs_plain": [round(x, 2) for x in plain], "runs_curve": [round(x, 2) for x in curve],
    }))


if __name__ == "__main__":
    main()
