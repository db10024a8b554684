"""storm-starter's ExclamationTopology: words -> "!!!" -> "!!!" again.

Run it in-process:  storm-py local examples.exclamation:build --ttl 10
"""

from __future__ import annotations

from typing import Any

from storm_py import Bolt, TopologyBuilder
from storm_py.api.components import OutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.testing import TestWordSpout


class ExclamationBolt(Bolt):
    """Appends ``!!!`` to its input, anchored, then acks it."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector

    def execute(self, tup: Tuple) -> None:
        self.collector.emit([tup.get_value(0) + "!!!"], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["word"])


class ShowExclaimed(Bolt):
    """Counts the exclaimed words it receives and prints them when the topology stops."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.seen: dict[str, int] = {}

    def execute(self, tup: Tuple) -> None:
        word = tup.get_value(0)
        self.seen[word] = self.seen.get(word, 0) + 1
        self.collector.ack(tup)

    def cleanup(self) -> None:
        if self.seen:
            shown = ", ".join(f"{w} x{n}" for w, n in sorted(self.seen.items()))
            print(f"exclaimed: {shown}", flush=True)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        pass


def build(conf: dict[str, Any] | None = None) -> Any:
    """The exclamation topology."""
    builder = TopologyBuilder()
    builder.set_spout("word", TestWordSpout(), 10)
    builder.set_bolt("exclaim1", ExclamationBolt(), 3).shuffle_grouping("word")
    builder.set_bolt("exclaim2", ExclamationBolt(), 2).shuffle_grouping("exclaim1")
    builder.set_bolt("show", ShowExclaimed()).shuffle_grouping("exclaim2")
    return builder.create_topology()
