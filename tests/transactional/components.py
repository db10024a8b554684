"""Components the transactional tests share: ports of Storm's testing batch bolts and a controller bolt."""

from __future__ import annotations

import queue
import threading
from typing import Any

from storm_py import BasicBolt, Bolt
from storm_py.clock import wait_until
from storm_py.testing.registry import Shared
from storm_py.transactional import BaseBatchBolt, Committer


class CountingBatchBolt(BaseBatchBolt):
    """Counts the tuples of its batch; emits ``[id, count]`` (Storm's CountingBatchBolt)."""

    def prepare(self, conf, context, collector, id):
        self.collector = collector
        self.id = id
        self.count = 0

    def execute(self, tup):
        self.count += 1

    def finish_batch(self):
        self.collector.emit([self.id, self.count])

    def declare_output_fields(self, declarer):
        declarer.declare(["tx", "count"])


class CountingCommitBolt(CountingBatchBolt, Committer):
    """A committing :class:`CountingBatchBolt` (Storm's CountingCommitBolt)."""


class KeyedCountingBatchBolt(BaseBatchBolt):
    """Counts tuples per key (value 1); emits ``[id, key, count]`` per key (Storm's KeyedCountingBatchBolt)."""

    def prepare(self, conf, context, collector, id):
        self.collector = collector
        self.id = id
        self.counts: dict[Any, int] = {}

    def execute(self, tup):
        key = tup.get_value(1)
        self.counts[key] = self.counts.get(key, 0) + 1

    def finish_batch(self):
        for key, count in self.counts.items():
            self.collector.emit([self.id, key, count])

    def declare_output_fields(self, declarer):
        declarer.declare(["tx", "key", "count"])


class KeyedCountingCommitterBolt(KeyedCountingBatchBolt, Committer):
    """A committing :class:`KeyedCountingBatchBolt` (Storm's KeyedCountingCommitterBolt)."""


class KeyedSummingBatchBolt(BaseBatchBolt):
    """Sums value 2 per key (value 1); emits ``[id, key, sum]`` per key (Storm's KeyedSummingBatchBolt)."""

    def prepare(self, conf, context, collector, id):
        self.collector = collector
        self.id = id
        self.sums: dict[Any, Any] = {}

    def execute(self, tup):
        key = tup.get_value(1)
        self.sums[key] = self.sums.get(key, 0) + tup.get_value(2)

    def finish_batch(self):
        for key, total in self.sums.items():
            self.collector.emit([self.id, key, total])

    def declare_output_fields(self, declarer):
        declarer.declare(["tx", "key", "sum"])


class IdentityBolt(BasicBolt):
    """Re-emits its input (Storm's IdentityBolt, a basic bolt)."""

    def __init__(self, fields: list[str]) -> None:
        self.fields = fields

    def execute(self, tup, collector):
        collector.emit(tup.values)

    def declare_output_fields(self, declarer):
        declarer.declare(self.fields)


class Controls(Shared):
    """What a test shares with a :class:`ControllerBolt`: the tuples it holds and the commands it is sent."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held: list[Any] = []
        self.commands: queue.Queue[tuple[str, int]] = queue.Queue()
        self.done = threading.Event()

    def held_txids(self) -> list[int]:
        with self.lock:
            return sorted({t.values[0].transaction_id for t in self.held})


class ControllerBolt(Bolt):
    """Holds every tuple it receives; on a tick, acks or fails the held tuples of the txids it was told to.

    Port of the controller bolt of Storm's transactional_test.clj: subscribed to coordinated count-report
    streams, it keeps batch (or commit) trees open until the test lets them complete or fail.  Commands are
    executed on tick tuples, so they run on the worker's thread.
    """

    def __init__(self, controls: Controls) -> None:
        self.controls = controls

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        c = self.controls
        if not tup.is_tick():
            with c.lock:
                c.held.append(tup)
            return
        while True:
            try:
                op, txid = c.commands.get_nowait()
            except queue.Empty:
                break
            with c.lock:
                chosen = [t for t in c.held if t.values[0].transaction_id == txid]
                c.held = [t for t in c.held if t.values[0].transaction_id != txid]
            for t in chosen:
                (self.collector.ack if op == "ack" else self.collector.fail)(t)
        c.done.set()

    def get_component_configuration(self):
        return {"topology.tick.tuple.freq.secs": 1}


def control(cluster, controls: Controls, *commands: tuple[str, int]) -> None:
    """Send commands to the controller bolt and let it run them (one second of simulated time)."""
    for cmd in commands:
        controls.commands.put(cmd)
    controls.done.clear()
    cluster.advance_cluster_time(1)
    wait_until(lambda: controls.commands.empty() and controls.done.is_set(), 10, what="controller bolt commands")
    cluster.wait_idle()
