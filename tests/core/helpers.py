"""Bolts and spouts the core tests share (ports of Storm's integration-test helpers)."""

from __future__ import annotations

from typing import Any

from storm_py import BasicBolt, Bolt, Fields, Spout, TopologyBuilder
from storm_py.testing import AckTracker, FeederSpout


class IdentityBolt(Bolt):
    """Re-emits its input anchored, then acks (Storm's IdentityBolt)."""

    def __init__(self, fields: list[str] | None = None) -> None:
        self.fields = fields or ["num"]

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit(tup.values, tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(self.fields)


class AckBolt(Bolt):
    """Acks everything."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)


class BranchingBolt(Bolt):
    """Emits ``branches`` children anchored to each input, then acks it."""

    def __init__(self, branches: int) -> None:
        self.branches = branches

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        for i in range(self.branches):
            self.collector.emit([i], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["num"])


class AggBolt(Bolt):
    """Collects ``amount`` inputs, emits one tuple anchored to all of them, acks them (Storm's AggBolt)."""

    def __init__(self, amount: int) -> None:
        self.amount = amount

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.seen: list[Any] = []

    def execute(self, tup):
        self.seen.append(tup)
        if len(self.seen) == self.amount:
            self.collector.emit([1], self.seen)
            for t in self.seen:
                self.collector.ack(t)
            self.seen = []

    def declare_output_fields(self, declarer):
        declarer.declare(["num"])


class AckEveryOtherBolt(Bolt):
    """Acks the 1st, 3rd, 5th ... input and drops the others (Storm's AckEveryOtherBolt)."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.state = True

    def execute(self, tup):
        if self.state:
            self.collector.ack(tup)
        self.state = not self.state


class AckTrackingFeeder:
    """A feeder spout with an ack tracker; ``assert_num_acks(n)`` checks and resets (Storm's AckTrackingFeeder)."""

    def __init__(self, *fields: str) -> None:
        self.tracker = AckTracker()
        self.spout = FeederSpout(Fields(*fields))
        self.spout.set_ack_fail_delegate(self.tracker)
        self._next = 0

    def feed(self, values: list[Any]) -> None:
        self._next += 1
        self.spout.feed(values, self._next)

    def assert_num_acks(self, n: int) -> None:
        assert self.tracker.get_num_acks() == n
        self.tracker.reset_num_acks()


def feeder_topology(fields: list[str], delegate: Any, spout_id: str = "1") -> tuple[FeederSpout, TopologyBuilder]:
    """A FeederSpout on ``fields`` whose acks and fails go to ``delegate``, as spout ``spout_id`` of a new builder."""
    feeder = FeederSpout(fields)
    feeder.set_ack_fail_delegate(delegate)
    builder = TopologyBuilder()
    builder.set_spout(spout_id, feeder)
    return feeder, builder


class ConfBolt(BasicBolt):
    """Emits ``[key, value]`` of its component conf for each key it receives (Storm's TestConfBolt)."""

    def __init__(self, component_conf: dict[str, Any] | None = None) -> None:
        self.component_conf = component_conf

    def prepare(self, conf, context):
        self.conf = conf

    def execute(self, tup, collector):
        key = tup.values[0]
        collector.emit([key, self.conf.get(key)])

    def declare_output_fields(self, declarer):
        declarer.declare(["conf", "value"])

    def get_component_configuration(self):
        return self.component_conf


class PlannerSpout(Spout):
    """A spout that never emits by itself (placeholder for mocked sources; Storm's TestPlannerSpout)."""

    def __init__(self, fields: list[str]) -> None:
        self.fields = fields

    def declare_output_fields(self, declarer):
        declarer.declare(self.fields)


class CountingSpout(Spout):
    """Emits ``n`` numbered tuples with message ids; records acks and fails in shared sets."""

    def __init__(self, n: int, results: dict[str, Any]) -> None:
        self.n = n
        self.results = results

    def __deepcopy__(self, memo):
        return CountingSpout(self.n, self.results)

    def open(self, conf, context, collector):
        self.collector = collector
        self.i = 0

    def next_tuple(self):
        if self.i < self.n:
            self.i += 1
            self.collector.emit([self.i], self.i)

    def ack(self, msg_id):
        self.results.setdefault("acked", []).append(msg_id)

    def fail(self, msg_id):
        self.results.setdefault("failed", []).append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(["num"])
