"""Word count in one process, hand-written: a plain loop, and a minimal Storm-style executor with and without
XOR acking (the in-process baselines of ``bench/storm_perf.py``'s word count).

    python bench/peers/inproc.py [--secs 8] [--warmup 2] [--modes plain,executor,executor_xor]

The executor is what Storm does per tuple, with nothing else: a ``Tup`` object per tuple (values, root id, edge
id), one deque per task drained in turn, fields grouping by memoised CRC-32, and with ``executor_xor`` random
64-bit root and edge ids, an in-process XOR ledger per root, a pending map at the spout and a max-pending window
of 2000 (storm_perf's ``topology.max.spout.pending``).  Count emits ``[word, count]`` to no subscriber, as the
storm_py topology does.  Prints one ``RESULT`` line per mode: sentences/s after the warm-up.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SENTENCES, environment, result, word_task

MAX_PENDING = 2000
SPOUT_BATCH = 100


class Tup:
    __slots__ = ("edge", "root", "values")

    def __init__(self, values: list[object], root: int, edge: int) -> None:
        self.values = values
        self.root = root
        self.edge = edge


def plain(secs: float) -> float:
    """Split and count in a dict loop: no framework at all."""
    counts: dict[str, int] = {}
    out: list[tuple[str, int]] = []
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < secs:
        for i in range(10_000):
            for w in SENTENCES[i % 5].split():
                c = counts.get(w, 0) + 1
                counts[w] = c
                out.append((w, c))
            out.clear()
        n += 10_000
    return n / (time.perf_counter() - t0)


class Executor:
    """spout -> split -> count (one task each) and, with acking, an acker; one thread, queues between them."""

    def __init__(self, acking: bool) -> None:
        self.acking = acking
        self.split_q: deque[Tup] = deque()
        self.count_q: deque[Tup] = deque()
        self.ack_q: deque[tuple[int, int, int]] = deque()  # (kind, root, value): 0 init, 1 ack
        self.ledger: dict[int, int] = {}
        self.pending: dict[int, int] = {}
        self.counts: dict[str, int] = {}
        self.grouping: dict[str, int] = {}
        self.seq = 0
        self.acked = 0
        self.emitted = 0

    def spout_step(self) -> None:
        rb = random.getrandbits
        for _ in range(SPOUT_BATCH):
            if self.acking and len(self.pending) >= MAX_PENDING:
                return
            self.seq += 1
            values: list[object] = [SENTENCES[self.seq % 5]]
            if self.acking:
                root, edge = rb(64), rb(64)
                self.pending[root] = self.seq
                self.ack_q.append((0, root, edge))
                self.split_q.append(Tup(values, root, edge))
            else:
                self.split_q.append(Tup(values, 0, 0))
            self.emitted += 1

    def split_step(self) -> None:
        q, out, rb, acking = self.split_q, self.count_q, random.getrandbits, self.acking
        grouping = self.grouping
        while q:
            tup = q.popleft()
            xor = tup.edge
            for w in tup.values[0].split():  # type: ignore[attr-defined]
                word_task(w, 1, grouping)
                if acking:
                    edge = rb(64)
                    xor ^= edge
                    out.append(Tup([w], tup.root, edge))
                else:
                    out.append(Tup([w], 0, 0))
            if acking:
                self.ack_q.append((1, tup.root, xor))

    def count_step(self) -> None:
        q, counts, acking, acks = self.count_q, self.counts, self.acking, self.ack_q
        while q:
            tup = q.popleft()
            w = tup.values[0]
            c = counts.get(w, 0) + 1  # type: ignore[call-overload]
            counts[w] = c  # type: ignore[index]
            _ = [w, c]  # the emit to no subscriber
            if acking:
                acks.append((1, tup.root, tup.edge))

    def acker_step(self) -> None:
        q, ledger, pending = self.ack_q, self.ledger, self.pending
        while q:
            _kind, root, value = q.popleft()
            v = ledger.get(root, 0) ^ value
            if v:
                ledger[root] = v
            else:
                ledger.pop(root, None)
                if pending.pop(root, None) is not None:
                    self.acked += 1

    def run_for(self, secs: float) -> None:
        end = time.perf_counter() + secs
        while time.perf_counter() < end:
            for _ in range(20):
                self.spout_step()
                self.split_step()
                self.count_step()
                self.acker_step()
                if not self.acking:
                    self.acked = self.emitted

    def rate(self, secs: float, warmup: float) -> float:
        self.run_for(warmup)
        a0, t0 = self.acked, time.perf_counter()
        self.run_for(secs)
        return (self.acked - a0) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--secs", type=float, default=8.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--modes", default="plain,executor,executor_xor")
    args = ap.parse_args()
    for mode in args.modes.split(","):
        env = environment()
        if mode == "plain":
            rate = plain(args.secs)
        elif mode in ("executor", "executor_xor"):
            rate = Executor(acking=mode == "executor_xor").rate(args.secs, args.warmup)
        else:
            ap.error(f"unknown mode {mode!r}")
        result(f"inproc_{mode}", sentences_per_s=round(rate), secs=args.secs, warmup=args.warmup,
               max_pending=MAX_PENDING if mode == "executor_xor" else None, **env)


if __name__ == "__main__":
    main()
