"""The two-process pyzmq + msgpack ceiling: word-count-shaped tuples, batched, PUSH -> PULL over 127.0.0.1.

A sender process builds every tuple (stream, source task, random 64-bit root and edge ids, ["word", count])
and packs it in batches; a receiver process unpacks every batch and touches every tuple (XORs its root id).
Three stacks are measured:

* ``raw`` -- bare pyzmq sockets and ``msgpack.packb``/``unpackb`` of ``[stream, task, root, edge, values]``
  rows: the ceiling any Python transport on this machine can reach;
* ``storm_py`` -- the project's own path: :func:`storm_py.protocol.messages.encode_batch` entries
  ``[task, KIND_TUPLE, stream, source_task, values, [root, edge]]``, a
  :class:`storm_py.transport.zmq.ZmqTransport` sender and receiver thread, and
  :func:`~storm_py.protocol.messages.decode_frame` with full entry validation;
* ``storm_py_unchecked`` -- the same with ``decode_frame(..., validate_entries=False)``.

tuples/s = N / (time from the sender's first tuple to the receiver's last one), both read from the
system-wide monotonic clock; the median of ``--runs`` runs is reported for each stack and batch size.  The
result is JSON on stdout; one human line per configuration goes to stderr.

    python bench/zmq_ceiling.py --n 1000000
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing as mp
import os
import platform
import random
import statistics
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

import msgpack
import zmq

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog"]
STREAM = "default"
SOURCE_TASK = 7
TARGET_TASK = 3
END = b"END"
JOIN_TIMEOUT = 120.0


# ---------------------------------------------------------------------------------- raw pyzmq


def _raw_receiver(conn: Connection, hwm: int) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PULL)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVHWM, hwm)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    conn.send(port)
    unpackb = msgpack.unpackb
    tuples = 0
    acc = 0
    first = 0.0
    cpu0 = time.process_time()
    while True:
        msg = sock.recv()
        if msg == END:
            break
        if not first:
            first = time.monotonic()
        batch = unpackb(msg, use_list=True, raw=False)
        for t in batch:
            acc ^= t[2]
        tuples += len(batch)
    end = time.monotonic()
    conn.send({"tuples": tuples, "first": first, "end": end, "cpu": time.process_time() - cpu0, "xor": acc})
    sock.close(linger=0)
    ctx.term()


def _raw_sender(conn: Connection, port: int, n: int, batch_size: int, hwm: int) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH)
    sock.setsockopt(zmq.LINGER, -1)  # deliver END before closing
    sock.setsockopt(zmq.SNDHWM, hwm)
    sock.connect(f"tcp://127.0.0.1:{port}")
    rb = random.getrandbits
    packb = msgpack.packb
    words = WORDS
    nwords = len(words)
    conn.recv()  # go
    cpu0 = time.process_time()
    start = time.monotonic()
    i = 0
    while i < n:
        stop = min(n, i + batch_size)
        batch = [[STREAM, SOURCE_TASK, rb(64), rb(64), [words[j % nwords], j]] for j in range(i, stop)]
        sock.send(packb(batch))
        i = stop
    sock.send(END)
    conn.send({"start": start, "cpu": time.process_time() - cpu0})
    sock.close()
    ctx.term()


# ---------------------------------------------------------------------------------- storm_py stack


def _storm_receiver(conn: Connection, hwm: int, validate: bool = True) -> None:
    from storm_py.protocol.messages import TUPLE_IDS, decode_frame
    from storm_py.transport.zmq import ZmqTransport

    transport = ZmqTransport(hwm=hwm)
    rx = transport.bind("127.0.0.1", 0)
    conn.send(int(rx.address.rsplit(":", 1)[1]))
    done = threading.Event()
    state = {"tuples": 0, "xor": 0, "first": 0.0, "end": 0.0}

    def on_frame(frame: bytes) -> None:
        if not state["first"]:
            state["first"] = time.monotonic()
        _type, _src, payload = decode_frame(frame, validate_entries=validate)
        if not payload:  # the end marker: an empty batch
            state["end"] = time.monotonic()
            done.set()
            return
        acc = state["xor"]
        for entry in payload:
            acc ^= entry[TUPLE_IDS][0]
        state["xor"] = acc
        state["tuples"] += len(payload)

    cpu0 = time.process_time()
    rx.start(on_frame)
    if not done.wait(JOIN_TIMEOUT):
        raise SystemExit("storm_py receiver: no end marker")
    cpu = time.process_time() - cpu0
    transport.close()
    conn.send({**state, "cpu": cpu})


def _storm_sender(conn: Connection, port: int, n: int, batch_size: int, hwm: int) -> None:
    from storm_py.protocol.messages import KIND_TUPLE, encode_batch
    from storm_py.transport.zmq import ZmqTransport

    transport = ZmqTransport(hwm=hwm)
    tx = transport.connect(f"tcp://127.0.0.1:{port}")
    rb = random.getrandbits
    words = WORDS
    nwords = len(words)
    conn.recv()  # go
    cpu0 = time.process_time()
    start = time.monotonic()
    i = 0
    while i < n:
        stop = min(n, i + batch_size)
        entries = [
            [TARGET_TASK, KIND_TUPLE, STREAM, SOURCE_TASK, [words[j % nwords], j], [rb(64), rb(64)]]
            for j in range(i, stop)
        ]
        tx.send(encode_batch("bench-sender", entries))
        i = stop
    tx.send(encode_batch("bench-sender", []))  # the end marker
    conn.send({"start": start, "cpu": time.process_time() - cpu0, "blocked": tx.stats.send_blocked})
    # linger 0 on close would drop queued frames: wait for the receiver to confirm instead
    conn.recv()
    transport.close()


def _storm_receiver_unchecked(conn: Connection, hwm: int) -> None:
    _storm_receiver(conn, hwm, validate=False)


STACKS = {
    "raw": (_raw_receiver, _raw_sender),
    "storm_py": (_storm_receiver, _storm_sender),
    "storm_py_unchecked": (_storm_receiver_unchecked, _storm_sender),
}


# ---------------------------------------------------------------------------------- driver


def _child(gc_off: bool, fn: Any, *args: Any) -> None:
    """Process entry point: optionally switch off the cyclic garbage collector, then run ``fn``."""
    if gc_off:
        gc.disable()
    fn(*args)


def _one_run(stack: str, n: int, batch_size: int, hwm: int, gc_off: bool = False) -> dict[str, Any]:
    receiver_fn, sender_fn = STACKS[stack]
    mpc = mp.get_context("spawn")
    r_parent, r_child = mpc.Pipe()
    s_parent, s_child = mpc.Pipe()
    receiver = mpc.Process(
        target=_child, args=(gc_off, receiver_fn, r_child, hwm), name=f"bench-recv-{stack}", daemon=True
    )
    procs = [receiver]
    try:
        receiver.start()
        if not r_parent.poll(JOIN_TIMEOUT):
            raise RuntimeError("receiver did not report its port")
        port = r_parent.recv()
        sender = mpc.Process(
            target=_child,
            args=(gc_off, sender_fn, s_child, port, n, batch_size, hwm),
            name=f"bench-send-{stack}",
            daemon=True,
        )
        procs.append(sender)
        sender.start()
        s_parent.send("go")
        if not r_parent.poll(JOIN_TIMEOUT):
            raise RuntimeError("receiver did not finish")
        got = r_parent.recv()
        if not s_parent.poll(JOIN_TIMEOUT):
            raise RuntimeError("sender did not report")
        sent = s_parent.recv()
        if stack.startswith("storm_py"):
            s_parent.send("done")
        for p in procs:
            p.join(JOIN_TIMEOUT)
            if p.exitcode != 0:
                raise RuntimeError(f"{p.name} exited with {p.exitcode}")
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(5)
    if got["tuples"] != n:
        raise RuntimeError(f"{stack}: receiver counted {got['tuples']} tuples, expected {n}")
    elapsed = got["end"] - sent["start"]
    return {
        "tuples_per_s": n / elapsed,
        "receiver_window_tuples_per_s": n / (got["end"] - got["first"]),
        "elapsed_s": elapsed,
        "sender_cpu_s": sent["cpu"],
        "receiver_cpu_s": got["cpu"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=1_000_000, help="tuples per run")
    parser.add_argument("--batches", default="100,1000", help="comma-separated batch sizes")
    parser.add_argument("--runs", type=int, default=3, help="runs per configuration (median reported)")
    parser.add_argument("--hwm", type=int, default=100, help="high-water mark, in messages, on each socket")
    parser.add_argument(
        "--stacks", default="raw,storm_py,storm_py_unchecked", help=f"comma-separated, from {sorted(STACKS)}"
    )
    parser.add_argument("--gc-off", action="store_true", help="disable the cyclic GC in both processes")
    args = parser.parse_args(argv)
    stacks = [s for s in args.stacks.split(",") if s]
    for s in stacks:
        if s not in STACKS:
            parser.error(f"unknown stack {s!r}")
    batches = [int(b) for b in args.batches.split(",") if b]

    results = []
    for stack in stacks:
        for batch_size in batches:
            runs = [_one_run(stack, args.n, batch_size, args.hwm, args.gc_off) for _ in range(args.runs)]
            rates = [r["tuples_per_s"] for r in runs]
            row = {
                "stack": stack,
                "batch": batch_size,
                "tuples_per_s_median": statistics.median(rates),
                "runs": runs,
            }
            results.append(row)
            print(
                f"{stack:8s} batch {batch_size:5d}: {row['tuples_per_s_median']:>12,.0f} tuples/s "
                f"(median of {len(runs)}: {', '.join(f'{r:,.0f}' for r in rates)}; "
                f"sender cpu {statistics.median(r['sender_cpu_s'] for r in runs):.2f}s, "
                f"receiver cpu {statistics.median(r['receiver_cpu_s'] for r in runs):.2f}s)",
                file=sys.stderr,
                flush=True,
            )
    report = {
        "benchmark": "zmq_ceiling",
        "n": args.n,
        "runs_per_config": args.runs,
        "hwm": args.hwm,
        "gc": "off" if args.gc_off else "on",
        "python": platform.python_version(),
        "pyzmq": zmq.__version__,
        "libzmq": zmq.zmq_version(),
        "msgpack": ".".join(map(str, msgpack.version)),
        "cpus": os.cpu_count(),
        "results": results,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
