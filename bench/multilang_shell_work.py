"""The shell bolts' own work per sentence of the multilang word count, on one thread, for instruction counts.

What ``bench/multilang_wc.py`` runs in storm_py's worker for the two ``ShellBolt``s, without the processes, the
cluster or the clock: per sentence, the split bolt's ``execute`` of the sentence, its ``background_step`` writing
it and then reading and handling the bytes a pystorm split process answers (8 anchored emits with
``need_task_ids`` false, one ack), and the count bolt's 8 ``execute``s and the 8 acks it reads.  The bolts' process
is a stand-in that hands over those bytes (made before the measured loop) and swallows what is written; the
collector is a stub.  So it counts the multilang package's encoding, decoding, ledger and dispatch, nothing of the
runtime.

Instructions per sentence (``--instructions``, with valgrind): runs of 1,000 and 3,000 sentences under
``valgrind --tool=cachegrind``, each with and without ``--prepare-only`` (the preparation subtracted):
(I(3000) - P(3000) - (I(1000) - P(1000))) / 2000.

usage: python bench/multilang_shell_work.py [--serializer json|msgpack] [--n 3000] [--prepare-only]
       python bench/multilang_shell_work.py --instructions [--serializer json|msgpack]
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the other bench scripts
from two_workers import cachegrind

from storm_py.api.tuple import Fields, Tuple
from storm_py.build import describe
from storm_py.multilang.bolt import ShellBolt
from storm_py.multilang.ledger import Heartbeat, PendingLedger
from storm_py.multilang.serializer import serializer_for
from storm_py.multilang.traffic import BoltTraffic
from storm_py.multilang.wire import Serializer

SENTENCE = "the quick brown fox jumps over the lazy"


class StubCollector:
    def emit(self, values: Any, anchors: Any = None, stream: str = "default") -> list[int]:
        return [1]

    def emit_direct(self, task: int, values: Any, anchors: Any = None, stream: str = "default") -> None:
        pass

    def ack(self, tup: Any) -> None:
        pass

    def fail(self, tup: Any) -> None:
        raise AssertionError(f"failed {tup!r}")

    def report_error(self, exc: BaseException) -> None:
        raise exc


class StubClock:
    simulated = False

    def now(self) -> float:
        return 0.0


class StandIn:
    """What the bolt uses of its process: an inbox filled from ``answer`` on ``read``; writes are counted."""

    def __init__(self, serializer: Serializer) -> None:
        self.inbox: deque[Any] = deque()
        self.unsent = bytearray()
        self.decoder = serializer.decoder(shorthand=True)
        self.answer = b""
        self.written = 0

    def may_read(self) -> bool:
        return True

    def read(self) -> bool:
        if not self.answer:
            return False
        self.inbox.extend(self.decoder.feed(self.answer))
        self.answer = b""
        return True

    def send(self, data: bytes) -> None:
        self.written += len(data)

    def flush(self) -> None:
        pass


def shell_bolt(serializer: Serializer) -> tuple[ShellBolt, StandIn]:
    """A shell bolt in the state ``prepare`` leaves it in, talking to a stand-in process."""
    bolt = ShellBolt("stand-in")
    proc = StandIn(serializer)
    bolt.component_id = "bench"
    collector = StubCollector()
    ledger: PendingLedger[Tuple] = PendingLedger()
    traffic = BoltTraffic(ledger, serializer, collector, 100, bolt._execute_general, bolt._refused)
    traffic.unsent = proc.unsent
    bolt.__dict__.update(
        _serializer=serializer, _collector=collector, _ledger=ledger, _traffic=traffic, _outbuf=traffic.outbuf,
        _clock=StubClock(), _timeout=30.0, _beat=Heartbeat(30.0, 0.0), _restart_at=0.0, _failures=0, _process=proc,
        _max_pending=100, execute=traffic.execute,
    )
    return bolt, proc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--serializer", default="msgpack", choices=("json", "msgpack"))
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--prepare-only", action="store_true", help="make the inputs and stop (to subtract)")
    ap.add_argument("--instructions", action="store_true", help="instructions per sentence, with valgrind")
    a = ap.parse_args()
    if a.instructions:
        if shutil.which("valgrind") is None:
            sys.exit("--instructions needs valgrind (apt-get install valgrind)")
        runs = {(n, prep): cachegrind(__file__, "--serializer", a.serializer, "--n", str(n), *prep)
                for n in (1000, 3000) for prep in ((), ("--prepare-only",))}
        work = {n: runs[n, ()][1] - runs[n, ("--prepare-only",)][1] for n in (1000, 3000)}
        print(json.dumps({"serializer": a.serializer, "build": describe(),
                          "instructions_per_sentence": round((work[3000] - work[1000]) / 2000)}))
        return
    n = a.n
    serializer = serializer_for(a.serializer, "bench")

    def pack(msg: dict[str, Any]) -> bytes:
        return msgpack.packb(msg) if a.serializer == "msgpack" else (json.dumps(msg) + "\nend\n").encode()

    words = SENTENCE.split()
    sentences = [Tuple([SENTENCE], Fields(["sentence"]), "sentences", "default", 9, None, 1, 2) for _ in range(n)]
    word_tuples = [[Tuple([w], Fields(["word"]), "split", "default", 3, None, 1, 2) for w in words] for _ in range(n)]
    # pending ids are 1, 2, ... in each bolt: sentence i is split's id i + 1, its words count's 8 i + 1 .. 8 i + 8
    # pystorm's messages, in its key order
    split_answers = [b"".join([pack({"command": "emit", "tuple": [w], "anchors": [str(i + 1)], "need_task_ids": False})
                               for w in words] + [pack({"command": "ack", "id": str(i + 1)})]) for i in range(n)]
    count_answers = [b"".join(pack({"command": "ack", "id": str(8 * i + k)}) for k in range(1, 9)) for i in range(n)]
    gc.collect()
    gc.freeze()  # the inputs made above are not walked by the collector's passes in the measured loop
    if a.prepare_only:
        print("acked 0")  # (read by --instructions)
        return
    split, split_proc = shell_bolt(serializer)
    count, count_proc = shell_bolt(serializer)
    started = time.thread_time()
    for i in range(n):
        split.execute(sentences[i])
        split.background_step(0.0)
        split_proc.answer = split_answers[i]
        split.background_step(0.0)
        for tup in word_tuples[i]:
            count.execute(tup)
        count.background_step(0.0)
        count_proc.answer = count_answers[i]
        count.background_step(0.0)
    secs = time.thread_time() - started
    assert not len(split._ledger) and not len(count._ledger), "every input answered"
    print(f"acked {n}")  # the sentences run (read by --instructions)
    print(json.dumps({"serializer": a.serializer, "n": n, "us_per_sentence": round(secs / n * 1e6, 2),
                      "bytes_written_per_sentence": round((split_proc.written + count_proc.written) / n)}),
          file=sys.stderr)


if __name__ == "__main__":
    main()
