"""storm-starter's WordCountTopology: sentences -> split -> fields-grouped running counts.

Run it in-process:  storm-py local examples.word_count:build --ttl 10
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

from storm_py import BasicBolt, Spout, TopologyBuilder
from storm_py.api.components import BasicOutputCollector, OutputFieldsDeclarer, SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple

log = logging.getLogger(__name__)

SENTENCES = (
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
)


class RandomSentenceSpout(Spout):
    """Emits the sentences above in turn, each with a message id so the tree is tracked (at-least-once)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self.collector = collector
        self.sentences = itertools.cycle(SENTENCES)
        self.seq = 0
        self.failed: list[tuple[int, str]] = []
        self.pending: dict[int, str] = {}

    def next_tuple(self) -> None:
        if self.failed:
            msg_id, sentence = self.failed.pop()
        else:
            if self.limit is not None and self.seq >= self.limit:
                return
            self.seq += 1
            msg_id, sentence = self.seq, next(self.sentences)
        self.pending[msg_id] = sentence
        self.collector.emit([sentence], msg_id)

    def ack(self, msg_id: Any) -> None:
        self.pending.pop(msg_id, None)

    def fail(self, msg_id: Any) -> None:
        sentence = self.pending.pop(msg_id, None)
        if sentence is not None:
            self.failed.append((msg_id, sentence))

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["sentence"])


class SplitSentence(BasicBolt):
    """Splits a sentence into words."""

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        for word in tup.values[0].split():
            collector.emit([word])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["word"])


class WordCount(BasicBolt):
    """Running count per word; emits ``[word, count]`` and prints its counts when the topology stops."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self.counts: dict[str, int] = {}
        self.task = context.this_task_id

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        word = tup.values[0]
        count = self.counts.get(word, 0) + 1
        self.counts[word] = count
        collector.emit([word, count])

    def cleanup(self) -> None:
        if self.counts:
            shown = ", ".join(f"{w}={c}" for w, c in sorted(self.counts.items()))
            print(f"final counts (task {self.task}): {shown}", flush=True)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["word", "count"])


def build(conf: dict[str, Any] | None = None) -> Any:
    """The word-count topology; ``conf`` may set ``wordcount.sentences`` to stop after that many sentences."""
    conf = conf or {}
    limit = conf.get("wordcount.sentences")
    builder = TopologyBuilder()
    builder.set_spout("spout", RandomSentenceSpout(limit), 1)
    split = int(conf.get("wordcount.split.parallelism", 2))
    builder.set_bolt("split", SplitSentence(), split).shuffle_grouping("spout")
    builder.set_bolt("count", WordCount(), int(conf.get("wordcount.count.parallelism", 2))).fields_grouping(
        "split", ["word"]
    )
    return builder.create_topology()
