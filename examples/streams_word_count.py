"""storm-starter's WordCountToBolt in the Stream API: sentences -> words -> a running count per word -> a bolt.

The pipeline is two generated bolts (split and pair behind a shuffle grouping, then the count per word behind a
fields grouping on the word) and the sink bolt given to ``to``, which keeps each word's latest count and prints
them when the topology stops.

Run it in-process:  storm-py local examples.streams_word_count:build --ttl 10
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # run as a script: the examples package

from examples.word_count import RandomSentenceSpout
from storm_py import Bolt, Spout
from storm_py.api.components import OutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.topology import StormTopology
from storm_py.api.tuple import Tuple
from storm_py.streams import StreamBuilder


class LatestCounts(Bolt):
    """The sink: keeps the latest ``(word, count)`` it received per word; prints them when the task stops."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.counts: dict[str, int] = {}
        self.task = context.this_task_id

    def execute(self, tup: Tuple) -> None:
        word, count = tup.values
        if count > self.counts.get(word, 0):
            self.counts[word] = count
        self.collector.ack(tup)

    def cleanup(self) -> None:
        if self.counts:
            shown = ", ".join(f"{w}={c}" for w, c in sorted(self.counts.items()))
            print(f"latest counts (task {self.task}): {shown}", flush=True)


def word_count(builder: StreamBuilder, spout: Spout, sink: Bolt | None, parallelism: int = 2) -> None:
    """The pipeline: the spout's sentences spread over ``parallelism`` tasks that split them and pair each word
    with 1, then the running count per word (fields-grouped on the word), sent to ``sink`` when one is given."""
    counts = (builder.new_stream(spout)
              .repartition(parallelism)
              .flat_map(lambda sentence: sentence[0].split())
              .map_to_pair(lambda word: (word, 1))
              .count_by_key())
    if sink is not None:
        counts.to(sink, parallelism)


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """The topology; ``conf`` may set ``wordcount.sentences`` to stop after that many sentences."""
    conf = conf or {}
    builder = StreamBuilder()
    word_count(builder, RandomSentenceSpout(conf.get("wordcount.sentences")), LatestCounts(),
               int(conf.get("wordcount.count.parallelism", 2)))
    return builder.build()
