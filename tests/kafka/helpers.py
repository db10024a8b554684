"""Components and checks shared by the Kafka tests (LocalCluster runs them in this process)."""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from storm_py import Bolt, LocalCluster
from storm_py.clock import wait_until

#: what the bolts saw, per test key (components may be copied; this module-level state is shared)
SEEN: dict[str, Counter[Any]] = {}
DEAD: dict[str, list[list[Any]]] = {}
_LOCK = threading.Lock()


def reset(key: str) -> None:
    with _LOCK:
        SEEN[key] = Counter()
        DEAD[key] = []


class RecordingBolt(Bolt):
    """Records the value of every tuple it acks; fails a seeded random ``fail_rate`` of tuples, each once."""

    def __init__(self, key: str, fail_rate: float = 0.0, seed: int = 7, fail_values: frozenset[bytes] = frozenset()):
        self.key = key
        self.fail_rate = fail_rate
        self.seed = seed
        self.fail_values = fail_values

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.rng = random.Random(self.seed * 1000 + context.this_task_id)
        self.failed_once: set[Any] = set()

    def execute(self, tup: Any) -> None:
        if tup.source_stream == "dead_letter":
            with _LOCK:
                DEAD[self.key].append(list(tup.values))
            self.collector.ack(tup)
            return
        value = tup.values[4] if len(tup.values) >= 5 else tup.values[0]
        if value in self.fail_values:
            self.collector.fail(tup)
            return
        ident = (tup.values[1], tup.values[2]) if len(tup.values) >= 5 else value
        if self.fail_rate and ident not in self.failed_once and self.rng.random() < self.fail_rate:
            self.failed_once.add(ident)
            self.collector.fail(tup)
            return
        with _LOCK:
            SEEN[self.key][value] += 1
        self.collector.ack(tup)


def wait_seen(key: str, expected: set[Any], timeout: float) -> None:
    wait_until(lambda: expected <= set(SEEN[key]), timeout, interval=0.2,
               what=f"all {len(expected)} records processed (seen {len(set(SEEN[key]) & expected)})")


def spout_error(cluster: LocalCluster, name: str, spout_id: str = "kafka") -> str:
    summary = cluster.get_topology_summary(name)
    for s in summary["spouts"]:
        if s["spoutId"] == spout_id:
            return str(s.get("lastError") or "")
    return ""


def bolt_error(cluster: LocalCluster, name: str, bolt_id: str) -> str:
    summary = cluster.get_topology_summary(name)
    for b in summary["bolts"]:
        if b["boltId"] == bolt_id:
            return str(b.get("lastError") or "")
    return ""


#: every value of the ``kafkaOffset`` metric that :class:`OffsetPoints` received (cleared by each test using it)
OFFSET_POINTS: list[dict[str, Any]] = []
#: how a topology's conf registers :class:`OffsetPoints`
OFFSET_POINTS_CONF = {"topology.metrics.consumer.register": [
    {"class": "tests.kafka.helpers:OffsetPoints", "parallelism.hint": 1}]}


class OffsetPoints:
    """A metrics consumer keeping every value of the ``kafkaOffset`` metric in :data:`OFFSET_POINTS`."""

    def prepare(self, conf: Any, argument: Any, context: Any) -> None:
        pass

    def handle_data_points(self, task_info: Any, data_points: Any) -> None:
        with _LOCK:
            for p in data_points:
                name, value = (p[0], p[1]) if isinstance(p, (tuple, list)) else (p.name, p.value)
                if name == "kafkaOffset":
                    OFFSET_POINTS.append(value)

    def cleanup(self) -> None:
        pass


def offset_points() -> list[dict[str, Any]]:
    """What :class:`OffsetPoints` received so far."""
    with _LOCK:
        return list(OFFSET_POINTS)


def run_spout_until(bootstrap: str, topic: str, group: str, done: Callable[[], bool], name: str) -> None:
    """A KafkaSpout on ``topic`` into a :class:`RecordingBolt`, committing every 200 ms, run in a LocalCluster
    until ``done()`` holds; its ``kafkaOffset`` values (a 1 s bucket) go to :data:`OFFSET_POINTS`."""
    from storm_py import TopologyBuilder
    from storm_py.kafka import KafkaSpout, KafkaSpoutConfig

    OFFSET_POINTS.clear()
    conf = KafkaSpoutConfig(bootstrap, [topic], group_id=group, offset_commit_period_ms=200,
                            metrics_time_bucket_secs=1)
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(conf))
    tb.set_bolt("check", RecordingBolt(topic), 1).shuffle_grouping("kafka")
    with LocalCluster() as cluster:
        cluster.submit_topology(name, OFFSET_POINTS_CONF, tb.create_topology())
        wait_until(done, 60, interval=0.2, what=f"{name}: the spout's progress")
        cluster.kill_topology(name, wait_secs=0)
