"""Word count as a hand-written pyzmq pipeline: spout, split and count processes (and with ``--ack xor`` an
acker process doing Storm's XOR acking), msgpack batches over TCP loopback PUSH/PULL sockets.

    python bench/peers/zmq_pipeline.py [--ack none|xor] [--n 1000000] [--batch 1000] [--max-pending 20000]

* The spout sends batches of ``--batch`` sentences to the splitter; the splitter splits them and sends one batch
  of words per input batch to the counter, which keeps a dict.  High-water mark 16 messages per socket side, so
  backpressure applies.
* ``--ack xor``: the spout draws a random 64-bit root and edge id per sentence and sends the inits to the acker;
  the splitter draws an edge id per word and acks ``edge ^ xor(child edges)`` per sentence, the counter acks each
  word's edge; acks travel in one message per processed batch.  The acker XORs per root and returns completed
  roots to the spout, which keeps a pending map and a window of ``--max-pending`` sentences.  The spout never
  blocks on a send while completions wait (otherwise spout -> splitter -> acker -> spout deadlocks).

sentences/s = N / (time from the spout's first send to the last completion, or to the counter's last word without
acking), read from the system-wide monotonic clock.  Every run checks the counts.  One ``RESULT`` line.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import msgpack
import zmq

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SENTENCES, WORDS_PER_SENTENCE, environment, expected_counts, result

HWM = 16
URL = "tcp://127.0.0.1"


def _pull(ctx: zmq.Context, conn: Connection | None = None) -> tuple[zmq.Socket, int]:
    sock = ctx.socket(zmq.PULL)
    sock.setsockopt(zmq.RCVHWM, HWM)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port(URL)
    return sock, port


def _push(ctx: zmq.Context, port: int) -> zmq.Socket:
    sock = ctx.socket(zmq.PUSH)
    sock.setsockopt(zmq.SNDHWM, HWM)
    sock.setsockopt(zmq.LINGER, 2000)
    sock.connect(f"{URL}:{port}")
    return sock


def counter(conn: Connection, acking: bool, expect_words: int) -> None:
    ctx = zmq.Context()
    rx, port = _pull(ctx)
    conn.send(port)
    acker_port = conn.recv()
    acks = _push(ctx, acker_port) if acking else None
    unpackb, packb = msgpack.unpackb, msgpack.packb
    counts: dict[str, int] = {}
    words = 0
    cpu0 = time.process_time()
    while words < expect_words:
        batch = unpackb(rx.recv())
        if acking:
            rows = []
            for root, edge, w in batch:
                c = counts.get(w, 0) + 1
                counts[w] = c
                rows.append((root, edge))
            assert acks is not None
            acks.send(packb(rows))
        else:
            for w in batch:
                counts[w] = counts.get(w, 0) + 1
        words += len(batch)
    end = time.monotonic()
    conn.send({"end": end, "cpu": time.process_time() - cpu0, "counts": counts})
    ctx.destroy(linger=1000)


def splitter(conn: Connection, acking: bool, counter_port: int) -> None:
    ctx = zmq.Context()
    rx, port = _pull(ctx)
    conn.send(port)
    acker_port = conn.recv()
    out = _push(ctx, counter_port)
    acks = _push(ctx, acker_port) if acking else None
    unpackb, packb, rb = msgpack.unpackb, msgpack.packb, random.getrandbits
    cpu0 = time.process_time()
    while True:
        msg = rx.recv()
        if msg == b"END":
            break
        batch = unpackb(msg)
        if acking:
            words = []
            rows = []
            for root, edge, sentence in batch:
                xor = edge
                for w in sentence.split():
                    e = rb(64)
                    xor ^= e
                    words.append((root, e, w))
                rows.append((root, xor))
            out.send(packb(words))
            assert acks is not None
            acks.send(packb(rows))
        else:
            out.send(packb([w for sentence in batch for w in sentence.split()]))
    conn.send({"cpu": time.process_time() - cpu0})
    ctx.destroy(linger=1000)


def acker(conn: Connection) -> None:
    ctx = zmq.Context()
    rx, port = _pull(ctx)
    conn.send(port)
    spout_port = conn.recv()
    done = _push(ctx, spout_port)
    unpackb, packb = msgpack.unpackb, msgpack.packb
    ledger: dict[int, int] = {}
    cpu0 = time.process_time()
    while True:
        msg = rx.recv()
        if msg == b"END":
            break
        completed = []
        for root, value in unpackb(msg):
            v = ledger.get(root, 0) ^ value
            if v:
                ledger[root] = v
            else:
                del ledger[root]
                completed.append(root)
        if completed:
            done.send(packb(completed))
    conn.send({"cpu": time.process_time() - cpu0})
    ctx.destroy(linger=1000)


def spout(conn: Connection, acking: bool, n: int, batch_size: int, max_pending: int) -> None:
    ctx = zmq.Context()
    done, port = _pull(ctx) if acking else (None, 0)
    conn.send(port)
    split_port, acker_port = conn.recv()
    out = _push(ctx, split_port)
    inits = _push(ctx, acker_port) if acking else None
    packb, unpackb, rb = msgpack.packb, msgpack.unpackb, random.getrandbits
    conn.recv()  # go
    cpu0 = time.process_time()
    start = time.monotonic()
    seq = 0
    acked = 0
    pending: set[int] = set()
    if not acking:
        while seq < n:
            stop = min(n, seq + batch_size)
            out.send(packb([SENTENCES[i % 5] for i in range(seq, stop)]))
            seq = stop
        out.send(b"END")
        conn.send({"start": start, "cpu": time.process_time() - cpu0})
        ctx.destroy(linger=2000)
        return
    assert done is not None and inits is not None
    poller = zmq.Poller()
    poller.register(done, zmq.POLLIN)
    held: tuple[bytes, bytes] | None = None  # a batch the splitter or the acker could not take yet
    end = start
    while acked < n:
        while True:  # completions first: never block a send while they wait
            try:
                msg = done.recv(zmq.NOBLOCK)
            except zmq.Again:
                break
            for root in unpackb(msg):
                pending.discard(root)
                acked += 1
            end = time.monotonic()
        if held is None and seq < n and len(pending) + batch_size <= max_pending:
            stop = min(n, seq + batch_size)
            rows = []
            data = []
            for i in range(seq, stop):
                root, edge = rb(64), rb(64)
                pending.add(root)
                rows.append((root, edge))
                data.append((root, edge, SENTENCES[i % 5]))
            seq = stop
            held = (packb(rows), packb(data))
        if held is not None:
            try:
                inits.send(held[0], zmq.NOBLOCK)
                held = (b"", held[1])
            except zmq.Again:
                pass
            if not held[0]:
                try:
                    out.send(held[1], zmq.NOBLOCK)
                    held = None
                except zmq.Again:
                    pass
            if held is not None or seq >= n or len(pending) + batch_size > max_pending:
                poller.poll(1)
        else:
            poller.poll(1)
    out.send(b"END")
    inits.send(b"END")
    conn.send({"start": start, "end": end, "cpu": time.process_time() - cpu0})
    ctx.destroy(linger=2000)


def run(acking: bool, n: int, batch_size: int, max_pending: int) -> dict[str, Any]:
    mpc = mp.get_context("spawn")
    pipes: dict[str, Any] = {}
    procs: list[Any] = []

    def start(name: str, target: Any, *args: Any) -> Connection:
        parent, child = mpc.Pipe()
        p = mpc.Process(target=target, args=(child, *args), name=f"peer-{name}", daemon=True)
        p.start()
        procs.append(p)
        pipes[name] = parent
        return parent

    try:
        c = start("count", counter, acking, n * WORDS_PER_SENTENCE)
        count_port = c.recv()
        s = start("split", splitter, acking, count_port)
        split_port = s.recv()
        sp = start("spout", spout, acking, n, batch_size, max_pending)
        spout_port = sp.recv()
        acker_port = 0
        if acking:
            a = start("acker", acker)
            acker_port = a.recv()
            a.send(spout_port)
        c.send(acker_port)
        s.send(acker_port)
        sp.send((split_port, acker_port))
        sp.send("go")
        sent = sp.recv()
        got = c.recv()
        cpu = {"spout": sent["cpu"], "count": got["cpu"], "split": s.recv()["cpu"]}
        if acking:
            cpu["acker"] = pipes["acker"].recv()["cpu"]
        for p in procs:
            p.join(60)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(5)
    ok = got["counts"] == expected_counts(n)
    end = sent["end"] if acking else got["end"]
    elapsed = end - sent["start"]
    return {"sentences_per_s": round(n / elapsed), "elapsed_s": round(elapsed, 3), "ok": ok,
            "cpu_s": {k: round(v, 2) for k, v in cpu.items()},
            "cpu_us_per_sentence": round(sum(cpu.values()) / n * 1e6, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ack", choices=["none", "xor"], default="xor")
    ap.add_argument("--n", type=int, default=1_000_000, help="sentences")
    ap.add_argument("--batch", type=int, default=1000, help="sentences per message")
    ap.add_argument("--max-pending", type=int, default=20_000, help="sentences in flight (with --ack xor)")
    args = ap.parse_args()
    env = environment()
    row = run(args.ack == "xor", args.n, args.batch, args.max_pending)
    result(f"zmq_pipeline_{args.ack}", **row, n=args.n, batch=args.batch,
           max_pending=args.max_pending if args.ack == "xor" else None, pyzmq=zmq.__version__,
           msgpack=".".join(map(str, msgpack.version)), **env)
    if not row["ok"]:
        sys.exit("zmq_pipeline: wrong counts")


if __name__ == "__main__":
    main()
