"""A Trident word count into an opaque RedisMapState, for the distributed cluster.

``tridentcount.sentences`` deterministic sentences (``sentences(n)``) come ``tridentcount.batch`` per batch from
a ``FixedBatchSpout`` that starts a new batch at most every ``tridentcount.interval`` seconds; every worker
process fails the batch the first time it sees every seventh sentence; the counts go to Redis
(``tridentcount.redis.port``, keys under ``tridentcount.prefix``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from storm_py.clock import SYSTEM_CLOCK
from storm_py.errors import FailedException
from storm_py.trident import BaseFunction, Count, FixedBatchSpout, TridentTopology
from storm_py.trident.redis_state import RedisMapState

WORDS = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel", "iris", "juniper"]


def sentences(n: int) -> list[list[Any]]:
    return [[" ".join(WORDS[(i * 3 + j * 7) % len(WORDS)] for j in range(1 + i % 4))] for i in range(n)]


def expected_counts(n: int) -> dict[str, int]:
    return dict(Counter(w for (s,) in sentences(n) for w in s.split(" ")))


class PacedSpout(FixedBatchSpout):
    """A FixedBatchSpout starting a new batch at most every ``interval`` seconds."""

    def __init__(self, interval: float, *args: Any) -> None:
        super().__init__(*args)
        self.interval = interval
        self.next_start = 0.0

    def is_ready(self) -> bool:
        now = SYSTEM_CLOCK.now()
        if now < self.next_start:
            return False
        self.next_start = now + self.interval
        return True


class SplitFailingOnce(BaseFunction):
    """Splits a sentence; fails the batch the first time this process sees every seventh sentence."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def execute(self, tuple: Any, collector: Any) -> None:
        sentence = tuple.get_value(0)
        if sentence not in self.seen:
            self.seen.add(sentence)
            if sum(map(ord, sentence)) % 7 == 0:
                raise FailedException("the first time this worker sees it")
        for word in sentence.split(" "):
            collector.emit([word])


def build(conf: dict[str, Any]) -> Any:
    n = int(conf.get("tridentcount.sentences", 300))
    spout = PacedSpout(float(conf.get("tridentcount.interval", 0.2)), ["sentence"],
                       int(conf.get("tridentcount.batch", 3)), *sentences(n))
    state = RedisMapState.factory("opaque", {
        "port": int(conf["tridentcount.redis.port"]), "key_prefix": str(conf["tridentcount.prefix"]),
    })
    topology = TridentTopology()
    (
        topology.new_stream(str(conf.get("tridentcount.txid", "tridentcount")), spout)
        .each(["sentence"], SplitFailingOnce(), ["word"]).parallelism_hint(2)
        .group_by(["word"])
        .persistent_aggregate(state, Count(), ["count"]).parallelism_hint(2)
    )
    return topology.build()
