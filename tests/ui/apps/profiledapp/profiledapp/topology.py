"""A topology made to be profiled: ``numbers`` emits tracked tuples (a few pending at a time) into ``crunch``,
whose ``execute`` spends its time in :func:`crunch_numbers` and keeps a block of every tuple in a list that only
grows (the line of :data:`APPEND_LINE`)."""

from __future__ import annotations

from typing import Any

from storm_py import BasicBolt, Spout, TopologyBuilder
from storm_py.clock import SYSTEM_CLOCK

#: Seconds of CPU each tuple costs ``crunch``.
CRUNCH_SECS = 0.03


def crunch_numbers(secs: float) -> int:
    """Busy arithmetic for ``secs`` seconds (a function a stack dump and a CPU profile can name)."""
    end = SYSTEM_CLOCK.now() + secs
    total = 0
    while SYSTEM_CLOCK.now() < end:
        total += sum(i * i for i in range(200))
    return total


class NumbersSpout(Spout):
    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.n = 0

    def next_tuple(self) -> None:
        self.n += 1
        self.collector.emit([self.n], msg_id=self.n)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class CrunchBolt(BasicBolt):
    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.kept: list[bytes] = []

    def execute(self, tup: Any, collector: Any) -> None:
        crunch_numbers(CRUNCH_SECS)
        self.kept.append(bytes(4096) + str(tup.values[0]).encode())  # APPEND_LINE

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare([])


def build(conf: dict[str, Any] | None = None) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumbersSpout(), 1)
    builder.set_bolt("crunch", CrunchBolt(), 1).shuffle_grouping("numbers")
    return builder.create_topology()
