"""Worker hooks and task hooks: a worker hook's resources reach the tasks; task hooks see every event of their task."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from storm_py import BasicBolt, Bolt, Fields, TopologyBuilder
from storm_py.api.hooks import BaseTaskHook, BoltAckInfo, EmitInfo, SpoutAckInfo, WorkerHook
from storm_py.clock import wait_until
from storm_py.local import LocalCluster
from storm_py.testing import AckFailMapTracker, FeederSpout
from storm_py.testing.registry import Shared


class Events(Shared):
    """What the hooks and bolts saw (one object however often the topology is copied)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[tuple[str, str, int]] = Counter()
        self.values: list[Any] = []
        self.infos: list[Any] = []

    def count(self, kind: str, component: str, task: int, info: Any = None) -> None:
        with self.lock:
            self.counts[(kind, component, task)] += 1
            if info is not None:
                self.infos.append(info)

    def total(self, kind: str, component: str) -> int:
        with self.lock:
            return sum(n for (k, c, _), n in self.counts.items() if k == kind and c == component)


EVENTS = Events()


class ConnectionHook(WorkerHook):
    def __init__(self, events: Events) -> None:
        self.events = events

    def start(self, conf: dict[str, Any], context: Any) -> None:
        context.set_resource("connection", f"connection of {conf['topology.name']}")
        self.events.count("start", "worker", -1)

    def shutdown(self) -> None:
        self.events.count("shutdown", "worker", -1)


class UsesResource(Bolt):
    def __init__(self, events: Events) -> None:
        self.events = events

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.resource = context.get_resource("connection")

    def execute(self, tup: Any) -> None:
        with self.events.lock:
            self.events.values.append(self.resource)
        self.collector.ack(tup)


def test_a_worker_hooks_resource_reaches_a_bolt_and_the_hook_is_shut_down() -> None:
    events = Events()
    tracker = AckFailMapTracker()
    spout = FeederSpout(Fields("v"))
    spout.set_ack_fail_delegate(tracker)
    builder = TopologyBuilder()
    builder.set_spout("feeder", spout)
    builder.set_bolt("use", UsesResource(events)).shuffle_grouping("feeder")
    builder.add_worker_hook(ConnectionHook(events))
    with LocalCluster() as cluster:
        cluster.submit_topology("hooked", {}, builder.create_topology())
        spout.feed([1], 1)
        wait_until(lambda: tracker.is_acked(1), 10, what="the tuple to be acked")
        assert events.values == ["connection of hooked"]
        assert events.total("start", "worker") == 1
        cluster.kill_topology("hooked", 0)
        wait_until(lambda: events.total("shutdown", "worker") == 1, 10, what="the worker hook to shut down")


class CountingHook(BaseTaskHook):
    """Counts its task's events into the module's :data:`EVENTS` (built by name for topology.auto.task.hooks)."""

    def __init__(self, events: Events | None = None) -> None:
        self.events = events or EVENTS

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.component = context.get_this_component_id()
        self.task = context.get_this_task_id()

    def emit(self, info: EmitInfo) -> None:
        assert info.task_id == self.task, "a hook sees its own task's emits only"
        self.events.count("emit", self.component, info.task_id, info)

    def spout_ack(self, info: SpoutAckInfo) -> None:
        self.events.count("spout_ack", self.component, info.spout_task_id, info)

    def bolt_execute(self, info: Any) -> None:
        self.events.count("bolt_execute", self.component, info.executing_task_id)

    def bolt_ack(self, info: BoltAckInfo) -> None:
        self.events.count("bolt_ack", self.component, info.acking_task_id, info)

    def bolt_fail(self, info: Any) -> None:
        self.events.count("bolt_fail", self.component, info.failing_task_id)


class Split(Bolt):
    """Adds its own hook in prepare (Storm's usual place); emits two words per input, fails 'bad'."""

    def __init__(self, events: Events) -> None:
        self.events = events

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        hook = CountingHook(self.events)
        hook.prepare(conf, context)
        context.add_task_hook(hook)
        self.collector = collector

    def execute(self, tup: Any) -> None:
        if tup.values[0] == "bad":
            self.collector.fail(tup)
            return
        for word in tup.values[0].split():
            self.collector.emit([word], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])


class Sink(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        pass


def test_a_task_hook_counts_every_emit_and_ack_of_its_task() -> None:
    events = Events()
    EVENTS.counts.clear()
    tracker = AckFailMapTracker()
    spout = FeederSpout(Fields("sentence"))
    spout.set_ack_fail_delegate(tracker)
    builder = TopologyBuilder()
    builder.set_spout("feeder", spout)
    builder.set_bolt("split", Split(events), 2).shuffle_grouping("feeder")
    builder.set_bolt("sink", Sink(), 1).shuffle_grouping("split")
    conf = {"topology.workers": 2}
    with LocalCluster(supervisors=1, ports_per_supervisor=2) as cluster:
        sink_conf = {"topology.auto.task.hooks": [f"{__name__}:CountingHook"]}
        cluster.submit_topology("counted", {**conf, **sink_conf}, builder.create_topology())
        n = 40
        for i in range(n):
            spout.feed(["a b"], i)
        spout.feed(["bad"], n)
        wait_until(lambda: all(tracker.is_acked(i) for i in range(n)) and tracker.is_failed(n), 15,
                   what="every sentence to be acked and the bad one failed")
        # the bolt's own hook: every emit and ack and the fail of its tasks, per task
        assert events.total("emit", "split") == 2 * n
        assert events.total("bolt_ack", "split") == n
        assert events.total("bolt_fail", "split") == 1
        assert events.total("bolt_execute", "split") == n + 1
        assert len({task for (kind, comp, task) in events.counts if (kind, comp) == ("emit", "split")}) == 2
        emits = [i for i in events.infos if isinstance(i, EmitInfo)]
        assert {tuple(i.values) for i in emits} == {("a",), ("b",)} and all(i.stream == "default" for i in emits)
        assert all(len(i.out_tasks) == 1 for i in emits)
        # topology.auto.task.hooks: the spout's emits and acks (with their latency), the basic bolt's acks
        wait_until(lambda: EVENTS.total("bolt_ack", "sink") == 2 * n, 10, what="the sink's acks")
        assert EVENTS.total("emit", "feeder") == n + 1
        assert EVENTS.total("spout_ack", "feeder") == n
        acks = [i for i in EVENTS.infos if isinstance(i, SpoutAckInfo)]
        assert sorted(i.message_id for i in acks) == list(range(n))
        assert all(i.complete_latency_ms is not None and i.complete_latency_ms >= 0 for i in acks)
        assert EVENTS.total("emit", "sink") == 0
