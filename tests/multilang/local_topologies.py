"""Topologies for ``storm-py local``: a pystorm spout that logs (at INFO) once its sentences are acked, behind it a
sink (``sentences``), or three pystorm split bolts that attack their worker once (``attacked``: 64 MiB on stderr
without a newline, ``{`` and 64 MiB without an ``end`` line, a msgpack bin declared 2 GiB long) or behave
(``unattacked``).  The bolts' first processes mark ``$HOSTILE_MARKERS`` (a folder) so later ones behave."""

from __future__ import annotations

import os
from typing import Any

from storm_py import Bolt, TopologyBuilder
from storm_py.api.topology import StormTopology
from storm_py.multilang import ShellBolt, ShellSpout

SENTENCES = 5
#: each bolt's id, its mode in ``resources/faulty_bolt.py`` and its serializer
ATTACKS = (("stderr_flood", "stderr", "json"), ("unended", "unended", "json"), ("big_bin", "bigbin", "msgpack"))


class Sentences(ShellSpout):
    def __init__(self, n: int = SENTENCES) -> None:
        super().__init__("python3", "sentence_spout.py", str(n))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["sentence"])


class Split(ShellBolt):
    def __init__(self, mode: str, name: str, serializer: str) -> None:
        super().__init__("python3", "faulty_bolt.py", mode, "5", os.path.join(os.environ["HOSTILE_MARKERS"], name),
                         serializer)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])


class Sink(Bolt):
    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.ack(tup)


def sentences() -> StormTopology:
    builder = TopologyBuilder()
    builder.set_spout("sentences", Sentences())
    builder.set_bolt("sink", Sink()).shuffle_grouping("sentences")
    return builder.create_topology()


def _splits(attack: bool) -> StormTopology:
    builder = TopologyBuilder()
    builder.set_spout("sentences", Sentences(30))
    for name, mode, serializer in ATTACKS:
        builder.set_bolt(name, Split(mode if attack else "behave", name, serializer)).shuffle_grouping(
            "sentences").add_configuration("topology.multilang.serializer", serializer)
        builder.set_bolt(f"{name}_sink", Sink()).shuffle_grouping(name)
    return builder.create_topology()


def attacked() -> StormTopology:
    return _splits(True)


def unattacked() -> StormTopology:
    return _splits(False)
