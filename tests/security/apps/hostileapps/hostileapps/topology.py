"""``stuck``: a bolt that hangs forever the first time it sees tuple 5 (once per marker file);
``bad_prepare``: a BasicBolt raising in ``prepare()``; ``bad_open``: a spout raising in ``open()``."""

from __future__ import annotations

import os
from typing import Any

from storm_py import BasicBolt, Fields, Spout, TopologyBuilder


class Numbers(Spout):
    """Emits ``count`` numbered tuples with message ids; replays failed ones."""

    def __init__(self, count: int) -> None:
        self.count = count

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector, self.next, self.replay = collector, 0, []

    def next_tuple(self) -> None:
        if self.replay:
            n = self.replay.pop()
            self.collector.emit([n], msg_id=n)
        elif self.next < self.count:
            self.collector.emit([self.next], msg_id=self.next)
            self.next += 1

    def fail(self, msg_id: Any) -> None:
        self.replay.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields(["n"]))


class HangOnce(BasicBolt):
    """Loops forever on tuple 5 unless its marker file exists (it creates the file first)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def execute(self, tup: Any, collector: Any) -> None:
        if tup.values[0] == 5 and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            while True:  # a bug: an infinite loop in user code
                pass


class BrokenPrepare(BasicBolt):
    def prepare(self, conf: Any, context: Any) -> None:
        raise RuntimeError("cannot reach the user database (prepare)")

    def execute(self, tup: Any, collector: Any) -> None:
        pass


class BrokenOpen(Numbers):
    def open(self, conf: Any, context: Any, collector: Any) -> None:
        raise RuntimeError("cannot reach the source queue (open)")


def stuck(conf: dict[str, Any]) -> Any:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers(int(conf.get("hostile.count", 200))), 1)
    b.set_bolt("hang", HangOnce(str(conf["hostile.marker"])), 1).shuffle_grouping("numbers")
    return b.create_topology()


def bad_prepare(conf: dict[str, Any]) -> Any:
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers(10), 1)
    b.set_bolt("broken", BrokenPrepare(), 1).shuffle_grouping("numbers")
    return b.create_topology()


def bad_open(conf: dict[str, Any]) -> Any:
    b = TopologyBuilder()
    b.set_spout("numbers", BrokenOpen(10), 1)
    b.set_bolt("fine", HangOnce("/nonexistent/never"), 1).shuffle_grouping("numbers")
    return b.create_topology()
