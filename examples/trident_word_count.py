"""The Trident tutorial's word count: sentences split into words, counted exactly once per word.

A cycling :class:`FixedBatchSpout` feeds batches of sentences; ``Split`` turns each into words; the words are
grouped and counted into an opaque :class:`MemoryMapState` with ``persistent_aggregate``.  The planner fuses
the split with the partial counts into one bolt and the final counts with the state into a committer bolt
(``b-1``) partitioned by word, so every word's count lives in one task and is updated once per batch, in
txid order, whatever replays happen.

Given a DRPC (a :class:`~storm_py.drpc.LocalDRPC`, or ``drpc.servers`` on a cluster), the tutorial's query
stream is added too: ``words`` takes a sentence, looks each of its words up in the counts and answers the sum
in Storm's format, e.g. ``drpc.execute("words", "cat the dog jumped")`` is ``"[[6]]"`` once every sentence
is counted once.

Run it in-process:  python -m examples.trident_word_count
or:                 storm-py local examples.trident_word_count:build --ttl 5   (prints the counts as it stops)
on a cluster:       storm-py submit APP.whl examples.trident_word_count:build_remote --name twc
                    storm-py drpc-client words "cat the dog jumped"
"""

from __future__ import annotations

from typing import Any

from storm_py import Config
from storm_py.api.topology import StormTopology
from storm_py.clock import wait_until
from storm_py.drpc import LocalDRPC
from storm_py.local import LocalCluster
from storm_py.trident import (
    BaseFilter,
    BaseFunction,
    Count,
    FilterNull,
    FixedBatchSpout,
    MapGet,
    MemoryMapState,
    Sum,
    TridentCollector,
    TridentState,
    TridentTopology,
    TridentTuple,
)
from storm_py.trident.state import MemoryMapStateFactory

#: the sentences, each split on single spaces
SENTENCES = [
    ["the cow jumped over the moon"],
    ["the man went to the store and bought some candy"],
    ["four score and seven years ago"],
    ["how many apples can you eat"],
    ["to be or not to be the person"],
]

WORDS = len({word for (sentence,) in SENTENCES for word in sentence.split(" ")})


class Split(BaseFunction):
    """Emits every word of the sentence."""

    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        for word in tuple.get_value(0).split(" "):
            collector.emit([word])


class FinalCounts(BaseFilter):
    """Keeps every tuple of the counts' new values and remembers each word's latest count; prints them when its
    task shuts down (as ``storm-py local`` ends), one line per task."""

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.counts: dict[str, int] = {}

    def is_keep(self, tuple: TridentTuple) -> bool:
        self.counts[tuple.get_value(0)] = tuple.get_value(1)
        return True

    def cleanup(self) -> None:
        if self.counts:
            shown = ", ".join(f"{w}={c}" for w, c in sorted(self.counts.items()))
            print(f"final counts: {shown}", flush=True)


def word_counts(topology: TridentTopology, factory: MemoryMapStateFactory, cycle: bool = True) -> TridentState:
    """The tutorial's counting stream: sentences -> words -> counts per word."""
    spout = FixedBatchSpout(["sentence"], 3, *SENTENCES)
    spout.set_cycle(cycle)
    return (
        topology.new_stream("spout1", spout)
        .parallelism_hint(16)
        .each(["sentence"], Split(), ["word"])
        .group_by(["word"])
        .persistent_aggregate(factory, Count(), ["count"])
        .parallelism_hint(6)
    )


def add_query(topology: TridentTopology, counts: TridentState, drpc: Any = None) -> None:
    """The tutorial's ``words`` query: the sum of the counts of a sentence's words (``drpc``: a LocalDRPC, or
    ``None`` for the servers of ``drpc.servers``)."""
    (
        topology.new_drpc_stream("words", drpc)
        .each(["args"], Split(), ["word"])
        .group_by(["word"])
        .state_query(counts, ["word"], MapGet(), ["count"])
        .each(["count"], FilterNull())
        .aggregate(["count"], Sum(), ["sum"])
    )


def build_topology(factory: MemoryMapStateFactory | None = None, drpc: Any = None, cycle: bool = True) -> StormTopology:
    """The word count (into ``factory``, default a new opaque MemoryMapState) and, given a DRPC, its query."""
    topology = TridentTopology()
    counts = word_counts(topology, factory or MemoryMapState.factory("opaque"), cycle)
    if drpc is not None:
        add_query(topology, counts, drpc)
    return topology.build()


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """For ``storm-py local``: the counting topology, printing each word's count when it stops."""
    topology = TridentTopology()
    counts = word_counts(topology, MemoryMapState.factory("opaque"))
    counts.new_values_stream().each(["word", "count"], FinalCounts())
    return topology.build()


def build_remote(conf: dict[str, Any] | None = None) -> StormTopology:
    """For ``storm-py submit`` (one worker): every sentence counted once, queried through ``drpc.servers``."""
    topology = TridentTopology()
    add_query(topology, word_counts(topology, MemoryMapState.factory("opaque"), cycle=False))
    return topology.build()


def main() -> None:
    """Count every sentence once, answer the tutorial's DRPC query, then print the counts."""
    factory = MemoryMapState.factory("opaque")
    config = Config()
    config.set_max_spout_pending(3)
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        cluster.submit_topology("trident-word-count", config, build_topology(factory, drpc, cycle=False))
        wait_until(lambda: len(factory.values()) >= WORDS, 30, what="every sentence counted")
        print("words 'cat the dog jumped':", drpc.execute("words", "cat the dog jumped"))
    for (word,), count in sorted(factory.values().items()):
        print(f"{word}: {count}")


if __name__ == "__main__":
    main()
