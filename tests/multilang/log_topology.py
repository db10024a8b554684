"""A topology for ``storm-py local``: a pystorm spout that logs (at INFO) once its five sentences are acked."""

from __future__ import annotations

from typing import Any

from storm_py import Bolt, TopologyBuilder
from storm_py.api.topology import StormTopology
from storm_py.multilang import ShellSpout

SENTENCES = 5


class Sentences(ShellSpout):
    def __init__(self) -> None:
        super().__init__("python3", "sentence_spout.py", str(SENTENCES))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["sentence"])


class Sink(Bolt):
    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.ack(tup)


def topology() -> StormTopology:
    builder = TopologyBuilder()
    builder.set_spout("sentences", Sentences())
    builder.set_bolt("sink", Sink()).shuffle_grouping("sentences")
    return builder.create_topology()
