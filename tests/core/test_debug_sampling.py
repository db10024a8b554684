"""Debug sampling (Storm's event logger): a share of a topology's emits goes to ``__eventlogger``, which writes
them to the events log; turning debugging off stops it, and a component's own options win over the topology's."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from storm_py import Bolt, Fields, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.errors import InvalidTopologyException
from storm_py.local import LocalCluster
from storm_py.runtime.eventlogger import EVENTS_LOGGER
from storm_py.testing import AckFailMapTracker, FeederSpout


class EventLines(logging.Handler):
    """The events log's lines, by component."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.guard = threading.Lock()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        with self.guard:
            self.lines.append(record.getMessage())

    def by_component(self) -> Counter[str]:
        with self.guard:
            return Counter(line.split(",")[1] for line in self.lines)


@pytest.fixture()
def events() -> Iterator[EventLines]:
    handler = EventLines()
    logger = logging.getLogger(EVENTS_LOGGER)
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


class Double(Bolt):
    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.emit([tup.values[0] * 2], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["doubled"])


def sampled(cluster: LocalCluster, tid: str, pct: dict[str, float]) -> bool:
    """Whether every worker applied the sampling shares ``pct`` (by component)."""
    for worker in cluster.workers(tid):
        rt = worker.runtime
        assert rt is not None
        for ex in rt.executors:
            if ex.component_id in pct:
                for task in ex.task_ids:
                    w = ex.watchers.get(task)
                    if (w.sample_pct if w is not None else 0.0) != pct[ex.component_id]:
                        return False
    return True


def test_sampling_at_10_percent_logs_about_10_percent_and_off_stops_it(events: EventLines) -> None:
    tracker = AckFailMapTracker()
    spout = FeederSpout(Fields("n"))
    spout.set_ack_fail_delegate(tracker)
    builder = TopologyBuilder()
    builder.set_spout("numbers", spout)
    builder.set_bolt("double", Double(), 2).shuffle_grouping("numbers")
    builder.set_bolt("sink", Double()).shuffle_grouping("double")
    conf = {"topology.workers": 2, "topology.eventlogger.executors": 1}
    with LocalCluster(supervisors=1, ports_per_supervisor=2) as cluster:
        tid = cluster.submit_topology("debugged", conf, builder.create_topology())
        with pytest.raises(InvalidTopologyException, match="no component 'nope'"):
            cluster.debug("debugged", "nope", True, 10)
        with pytest.raises(InvalidTopologyException, match="between 0 and 100"):
            cluster.debug("debugged", None, True, 110)

        def feed(first: int, n: int) -> None:
            for i in range(first, first + n):
                spout.feed([i], i)
            wait_until(lambda: all(tracker.is_acked(i) for i in range(first, first + n)), 60,
                       what=f"{n} tuples acked")
            cluster.wait_idle(10)

        cluster.debug("debugged", None, True, 10)
        wait_until(lambda: sampled(cluster, tid, {"numbers": 10, "double": 10, "sink": 10}), 10,
                   what="the workers to sample at 10 %")
        n = 1000
        feed(0, n)
        counts = events.by_component()
        # each emit is sampled on its own with probability 0.1: 100 expected per component, standard deviation
        # about 9.5; the bound is over five deviations wide, so a correct sampler fails it about once in 10^7 runs
        for component in ("numbers", "double", "sink"):
            assert 50 <= counts[component] <= 150, counts
        assert set(counts) == {"numbers", "double", "sink"}
        line = next(x for x in events.lines if ",numbers," in x)
        when, component, task, message_id, values = line.split(",", 4)
        assert when.endswith("+00:00") and task.isdigit() and message_id == "" and values.startswith("[")

        cluster.debug("debugged", None, False, 10)
        wait_until(lambda: sampled(cluster, tid, {"numbers": 0, "double": 0, "sink": 0}), 10,
                   what="the workers to stop sampling")
        before = len(events.lines)
        feed(n, 500)
        assert len(events.lines) == before, "debugging off: nothing more is logged"

        # a component's own options win over the topology's: only 'double' at 100 %
        cluster.debug("debugged", "double", True, 100)
        wait_until(lambda: sampled(cluster, tid, {"numbers": 0, "double": 100, "sink": 0}), 10,
                   what="the workers to sample 'double' only")
        feed(n + 500, 100)
        new = Counter(x.split(",")[1] for x in events.lines[before:])
        assert new == Counter({"double": 100})


def test_topology_debug_logs_every_emit_of_the_component_to_the_worker_log() -> None:
    lines = EventLines()
    logger = logging.getLogger("storm_py.debug")
    logger.addHandler(lines)
    level = logger.level
    logger.setLevel(logging.INFO)
    tracker = AckFailMapTracker()
    spout = FeederSpout(Fields("n"))
    spout.set_ack_fail_delegate(tracker)
    builder = TopologyBuilder()
    builder.set_spout("numbers", spout)
    builder.set_bolt("double", Double()).shuffle_grouping("numbers").add_configuration("topology.debug", True)
    builder.set_bolt("sink", Double()).shuffle_grouping("double")
    try:
        with LocalCluster() as cluster:
            cluster.submit_topology("verbose", {}, builder.create_topology())
            for i in range(5):
                spout.feed([i], i)
            wait_until(lambda: all(tracker.is_acked(i) for i in range(5)), 10, what="five tuples acked")
            assert sorted(lines.lines) == [f"Emitting: double default [{2 * i}]" for i in range(5)]
    finally:
        logger.removeHandler(lines)
        logger.setLevel(level)
