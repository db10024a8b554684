"""A VectorBolt with ``async def execute_batch`` runs under the asyncio bolts' rules in a LocalCluster: one
execution per batch tuple, several in flight at once, output in input order (ordered mode), a batch whose
coroutine raises failed and replayed by the spout, and a per-tuple input handled as batches of one row."""

from __future__ import annotations

import asyncio
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from storm_py import BasicBolt, LocalCluster, TopologyBuilder, Tuple, VectorBolt
from storm_py.clock import wait_until
from storm_py.testing import FeederSpout
from storm_py.testing.registry import Shared
from storm_py.vector.components import AsyncVectorBoltRunner, VectorBoltRunner
from tests.vector.components import SentenceBatchSpout, Store


class Seen(Shared):
    def __init__(self) -> None:
        self.batches: list[int] = []  # the batch ids reaching the sink, in order
        self.rows: list[Any] = []
        self.running = 0
        self.most = 0
        self.raised: set[int] = set()


class SlowLengths(VectorBolt):
    """Awaits a while per batch (longer for early batches, so that later ones finish first), then emits each
    sentence's length; raises once for batch 3."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def execute_batch(self, batch: pa.RecordBatch, collector: Any) -> None:
        bid = batch.column("batch")[0].as_py()
        self.seen.running += 1
        self.seen.most = max(self.seen.most, self.seen.running)
        try:
            await asyncio.sleep(0.2 - 0.02 * bid)
        finally:
            self.seen.running -= 1
        if bid == 3 and 3 not in self.seen.raised:
            self.seen.raised.add(3)
            raise RuntimeError("batch 3 fails once")
        collector.emit(pa.record_batch({"batch": batch.column("batch"),
                                        "length": pc.utf8_length(batch.column("sentence"))}))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(pa.schema([("batch", pa.int64()), ("length", pa.int32())]))


class Sink(BasicBolt):
    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    def execute(self, tup: Tuple, collector: Any) -> None:
        if not self.seen.batches or self.seen.batches[-1] != tup.values[0]:
            self.seen.batches.append(tup.values[0])
        self.seen.rows.append(tuple(tup.values))

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def test_an_async_execute_batch_runs_batches_concurrently_in_order_and_a_failed_one_is_replayed() -> None:
    assert isinstance(SlowLengths(Seen()).topology_bolt(), AsyncVectorBoltRunner)
    store, seen = Store(), Seen()
    builder = TopologyBuilder()
    builder.set_spout("spout", SentenceBatchSpout(store, 8, 50))
    builder.set_bolt("lengths", SlowLengths(seen)).shuffle_grouping("spout")
    builder.set_bolt("sink", Sink(seen)).global_grouping("lengths")
    with LocalCluster() as cluster:
        cluster.submit_topology("async-vector", {"topology.async.max.in.flight": 4},
                                builder.create_topology())
        wait_until(lambda: len(store.acked) == 8, 60, what="every batch acked")
    assert sorted(store.acked) == list(range(8)) and store.failed == [3]
    assert seen.most > 1, "batches ran concurrently"
    assert seen.most <= 4, "no more than topology.async.max.in.flight at once"
    # ordered mode: each batch's rows left in the order the batches arrived, whatever order they finished in; the
    # failed batch 3 came back after the others
    first = [b for b in seen.batches if b != 3]
    assert first == sorted(first) and seen.batches[-1] == 3
    assert len(seen.rows) == 8 * 50


class Doubler(VectorBolt):
    async def execute_batch(self, batch: pa.RecordBatch, collector: Any) -> None:
        await asyncio.sleep(0)
        collector.emit([pc.multiply(batch.column("n"), 2)[0].as_py()])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["doubled"])


def test_an_async_vector_bolt_takes_a_per_tuple_input_as_batches_of_one_row() -> None:
    seen = Seen()
    feeder = FeederSpout(["n"])
    builder = TopologyBuilder()
    builder.set_spout("feed", feeder)
    builder.set_bolt("double", Doubler()).shuffle_grouping("feed")
    builder.set_bolt("sink", Sink(seen)).shuffle_grouping("double")
    with LocalCluster() as cluster:
        cluster.submit_topology("one-row", {}, builder.create_topology())
        for n in range(5):
            feeder.feed([n])
        wait_until(lambda: len(seen.rows) == 5, 30, what="five doubled values")
    assert sorted(r[0] for r in seen.rows) == [0, 2, 4, 6, 8]


def test_a_plain_execute_batch_still_runs_in_the_synchronous_runner() -> None:
    class Plain(VectorBolt):
        def execute_batch(self, batch: pa.RecordBatch, collector: Any) -> None:
            pass

    assert isinstance(Plain().topology_bolt(), VectorBoltRunner)
