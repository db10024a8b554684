"""What the Stream API tests share: a thread-safe record test code and components both see, a capturing sink
bolt, and a builder fed by feeder spouts in a simulated-time LocalCluster."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from storm_py import Bolt, LocalCluster
from storm_py.api.topology import StormTopology
from storm_py.testing import AckFailMapTracker, FeederSpout, TrackedTopology
from storm_py.testing.registry import Shared


class Record(Shared):
    """Values seen by consumers and sinks, in arrival order (one object even when copied per task)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.items: list[Any] = []

    def add(self, item: Any) -> None:
        with self._lock:
            self.items.append(item)

    def __call__(self, item: Any) -> None:
        self.add(item)

    def snapshot(self) -> list[Any]:
        with self._lock:
            return list(self.items)


class CaptureBolt(Bolt):
    """A sink for ``to``: records each input's values and acks it."""

    def __init__(self, record: Record) -> None:
        self.record = record

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.record.add(list(tup.values))
        self.collector.ack(tup)


def feeder(fields: list[str], tracker: AckFailMapTracker | None = None) -> FeederSpout:
    spout = FeederSpout(fields)
    if tracker is not None:
        spout.set_ack_fail_delegate(tracker)
    return spout


@dataclass
class Running:
    cluster: LocalCluster
    tracked: TrackedTopology
    name: str


@contextmanager
def running(topology: StormTopology, conf: dict[str, Any] | None = None,
            simulated_time: bool = True) -> Iterator[Running]:
    """``topology`` submitted as a tracked topology to a fresh LocalCluster (simulated time by default)."""
    with LocalCluster(supervisors=1, ports_per_supervisor=2, simulated_time=simulated_time) as cluster:
        tracked = TrackedTopology(topology, cluster)
        cluster.submit_topology("streams", conf or {}, tracked)
        yield Running(cluster, tracked, "streams")
