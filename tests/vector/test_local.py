"""Columnar streams through a LocalCluster: word counts with acking over two workers (columnar only, and mixed with
per-tuple bolts), batches that do not fit, emits' targets, ticks, gathering by linger and the test kit."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from storm_py import Bolt, LocalCluster, TopologyBuilder, Tuple, VectorBolt, VectorSpout
from storm_py.clock import wait_until
from storm_py.testing import FeederSpout, complete_topology, read_tuples
from storm_py.testing.registry import Shared
from storm_py.vector import SchemaMismatchException, VectorOutputCollector
from tests.vector.components import CountBolt, RowCountBolt, SentenceBatchSpout, SplitBolt, Store, expected_counts

SCHEMA = pa.schema([("word", pa.string()), ("n", pa.int64())])


def run_word_count(mixed: bool) -> Store:
    store = Store()
    builder = TopologyBuilder()
    builder.set_spout("spout", SentenceBatchSpout(store, 8, 200))
    builder.set_bolt("split", SplitBolt(), 2).shuffle_grouping("spout")
    if mixed:  # rows as tuples to a per-tuple bolt, then gathered again into batches
        builder.set_bolt("rows", RowCountBolt(), 2).fields_grouping("split", ["word"])
        builder.set_bolt("count", CountBolt(store, add=True), 2).fields_grouping("rows", ["word"]) \
            .add_configuration("topology.vector.batch.size", 50)
    else:
        builder.set_bolt("count", CountBolt(store), 3).fields_grouping("split", ["word"])
    with LocalCluster() as cluster:
        cluster.submit_topology("wc", {"topology.workers": 2}, builder.create_topology())
        wait_until(lambda: len(store.acked) == 8, 60, what="every batch acked")
    return store


@pytest.mark.parametrize("mixed", [False, True], ids=["columnar", "mixed"])
def test_word_count_over_two_workers_is_exact_with_acking(mixed: bool) -> None:
    store = run_word_count(mixed)
    assert sorted(store.acked) == list(range(8)) and store.failed == []
    assert store.total() == expected_counts(8, 200)
    assert store.rows_seen == sum(expected_counts(8, 200).values())  # every row counted once
    assert all(len(tasks) == 1 for tasks in store.owners.values())  # a word meets one task


class Log(Shared):
    def __init__(self) -> None:
        self.items: list[Any] = []


class MismatchingBolt(VectorBolt):
    """Emits its input's columns in the wrong order on a stream declared with a schema."""

    def execute_batch(self, batch: pa.RecordBatch, collector: VectorOutputCollector) -> None:
        collector.emit(pa.record_batch({"n": pa.array([1], pa.int64()), "word": ["x"]}))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(SCHEMA)


def test_a_batch_that_does_not_fit_fails_its_input_and_the_error_names_component_and_columns() -> None:
    store = Store()
    builder = TopologyBuilder()
    builder.set_spout("spout", SentenceBatchSpout(store, 1, 10))
    builder.set_bolt("mismatch", MismatchingBolt()).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        cluster.submit_topology("bad", {"topology.message.timeout.secs": 30}, builder.create_topology())
        wait_until(lambda: store.failed, 30, what="the batch failed")
        wait_until(lambda: any(b["lastError"] for b in cluster.get_topology_summary("bad")["bolts"]), 30,
                   what="the error reported")
        bolt = next(b for b in cluster.get_topology_summary("bad")["bolts"] if b["boltId"] == "mismatch")
        error = bolt["lastError"]
        assert "SchemaMismatchException" in error and "'mismatch'" in error
        assert "word: string, n: int64" in error and "n: int64, word: string" in error


class RefusedSpout(VectorSpout):
    """Emits a batch that does not fit with msg_id 1 (and catches the error), then lets one escape, then emits a
    good batch with msg_id 3."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.step = 0

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def next_batch(self) -> None:
        self.step += 1
        wrong = pa.record_batch({"other": [1]})
        if self.step == 1:
            try:
                self.collector.emit(wrong, msg_id=1)
            except SchemaMismatchException as exc:
                self.log.items.append(("caught", str(exc)))
        elif self.step == 2:
            self.collector.emit(wrong, msg_id=2)
        elif self.step == 3:
            good = pa.record_batch({"word": ["a", "b"], "n": pa.array([1, 2], pa.int64())})
            self.log.items.append(("targets", self.collector.emit(good, msg_id=3)))
            self.log.items.append(("empty", self.collector.emit(good.slice(0, 0))))

    def ack(self, msg_id: Any) -> None:
        self.log.items.append(("ack", msg_id))

    def fail(self, msg_id: Any) -> None:
        self.log.items.append(("fail", msg_id))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(SCHEMA)


class RowSink(Bolt):
    def __init__(self, log: Log) -> None:
        self.log = log

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.task = context.get_this_task_id()

    def execute(self, tup: Tuple) -> None:
        self.log.items.append(("row", self.task, tup.values))
        self.collector.ack(tup)


class Sizes(VectorBolt):
    def __init__(self, log: Log) -> None:
        self.log = log

    def execute_batch(self, batch: pa.RecordBatch, collector: VectorOutputCollector) -> None:
        self.log.items.append(("size", batch.num_rows))


def test_a_spout_emit_that_does_not_fit_fails_its_msg_id_and_the_spout_goes_on() -> None:
    log = Log()
    builder = TopologyBuilder()
    builder.set_spout("spout", RefusedSpout(log))
    builder.set_bolt("sink", RowSink(log), 3).all_grouping("spout")
    builder.set_bolt("sizes", Sizes(log)).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        cluster.submit_topology("refused", {}, builder.create_topology())
        wait_until(lambda: ("ack", 3) in log.items and ("fail", 2) in log.items, 30, what="acks and fails")
        spout = cluster.get_topology_summary("refused")["spouts"][0]
        assert "'spout'" in spout["lastError"] and "SchemaMismatchException" in spout["lastError"]
        tasks = cluster.get_topology_summary("refused")
    items = log.items
    assert ("fail", 1) in items and ("fail", 2) in items
    caught = next(text for kind, text in (i[:2] for i in items) if kind == "caught")
    assert "'spout'" in caught and "other: int64" in caught and "word: string, n: int64" in caught
    targets = next(i[1] for i in items if i[0] == "targets")
    assert targets == sorted(targets) and len(targets) == 4  # every sink task and the sizes task
    assert next(i[1] for i in items if i[0] == "empty") == []
    rows = [i for i in items if i[0] == "row"]
    assert len(rows) == 6 and {tuple(i[2]) for i in rows} == {("a", 1), ("b", 2)}
    assert [i[1] for i in items if i[0] == "size"] == [2]  # the batch of no rows was not sent
    assert tasks


class TickBatches(VectorBolt):
    def __init__(self, log: Log) -> None:
        self.log = log

    def execute_batch(self, batch: pa.RecordBatch, collector: VectorOutputCollector) -> None:
        self.log.items.append(("batch", batch.to_pylist(), collector.source_component, collector.source_task))

    def execute_tick(self, tup: Tuple, collector: VectorOutputCollector) -> None:
        self.log.items.append(("tick", tup.source_stream))

    def get_component_configuration(self) -> dict[str, Any] | None:
        return {"topology.tick.tuple.freq.secs": 1, "topology.vector.batch.linger.ms": 3000,
                "topology.vector.batch.size": 1000}


def test_a_vector_bolt_gathers_a_per_tuple_stream_until_the_linger_and_gets_ticks() -> None:
    log = Log()
    feeder = FeederSpout(["word", "n"])
    builder = TopologyBuilder()
    builder.set_spout("feeder", feeder)
    builder.set_bolt("gather", TickBatches(log)).shuffle_grouping("feeder")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("gather", {}, builder.create_topology())
        cluster.advance_cluster_time(11)
        feeder.feed(["a", 1])
        feeder.feed(["b", None])
        cluster.advance_cluster_time(1)
        wait_until(lambda: ("tick", "__tick") in log.items, 30, what="a tick")
        assert not any(i[0] == "batch" for i in log.items)  # 1 s of the 3 s linger passed
        cluster.advance_cluster_time(3)
        wait_until(lambda: any(i[0] == "batch" for i in log.items), 30, what="the gathered batch")
    batch = next(i for i in log.items if i[0] == "batch")
    assert batch[1] == [{"word": "a", "n": 1}, {"word": "b", "n": None}] and batch[2] == "feeder"


class Echo(VectorSpout):
    """Emits the batches of ``log.items``, one per call, then nothing (completable for complete_topology: the log
    is shared by the task's copy and the test's object)."""

    def __init__(self, log: Log, outcomes: Log | None = None) -> None:
        self.log = log
        self.outcomes = outcomes or Log()

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def ack(self, msg_id: Any) -> None:
        self.outcomes.items.append(("ack", msg_id))

    def fail(self, msg_id: Any) -> None:
        self.outcomes.items.append(("fail", msg_id))

    def next_batch(self) -> None:
        if self.log.items:
            self.collector.emit(self.log.items.pop(0), msg_id=len(self.log.items))

    def is_exhausted(self) -> bool:
        return not self.log.items

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(SCHEMA)


def test_read_tuples_gives_one_values_list_per_row_of_a_columnar_stream() -> None:
    batches = [pa.record_batch({"word": ["a", "b"], "n": pa.array([1, 2], pa.int64())}),
               pa.record_batch({"word": ["c"], "n": pa.array([3], pa.int64())})]
    log = Log()
    log.items = list(batches)
    builder = TopologyBuilder()
    builder.set_spout("echo", Echo(log))
    with LocalCluster(simulated_time=True) as cluster:
        results = complete_topology(cluster, builder.create_topology(), mocked_sources=None)
    assert read_tuples(results, "echo") == [["a", 1], ["b", 2], ["c", 3]]


class FailB(Bolt):
    """Acks every row but those whose word is "b"."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Tuple) -> None:
        if tup["word"] == "b":
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)


def test_a_failed_row_fails_its_batch_and_a_batch_of_acked_rows_is_acked() -> None:
    batches = Log()
    batches.items = [pa.record_batch({"word": ["a", "c"], "n": pa.array([1, 2], pa.int64())}),
                     pa.record_batch({"word": ["a", "b", "c"], "n": pa.array([1, 2, 3], pa.int64())})]
    outcomes = Log()
    builder = TopologyBuilder()
    builder.set_spout("echo", Echo(batches, outcomes))
    builder.set_bolt("rows", FailB(), 2).shuffle_grouping("echo")
    with LocalCluster() as cluster:
        cluster.submit_topology("rows", {}, builder.create_topology())
        wait_until(lambda: len(outcomes.items) == 2, 30, what="both batches done")
    assert sorted(outcomes.items) == [("ack", 1), ("fail", 0)]


class DirectSpout(VectorSpout):
    """Sends one batch to the highest task of the sink over a direct columnar stream."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.sent = False

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.target = max(context.get_component_tasks("sink"))

    def next_batch(self) -> None:
        if not self.sent:
            self.sent = True
            self.log.items.append(("target", self.target))
            self.collector.emit_direct(self.target, pa.record_batch({"word": ["d"], "n": pa.array([4], pa.int64())}),
                                       msg_id=7)

    def ack(self, msg_id: Any) -> None:
        self.log.items.append(("ack", msg_id))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(SCHEMA, direct=True)


def test_emit_direct_sends_a_batch_to_the_named_task() -> None:
    log = Log()
    builder = TopologyBuilder()
    builder.set_spout("spout", DirectSpout(log))
    builder.set_bolt("sink", RowSink(log), 3).direct_grouping("spout")
    with LocalCluster() as cluster:
        cluster.submit_topology("direct", {}, builder.create_topology())
        wait_until(lambda: ("ack", 7) in log.items, 30, what="the batch acked")
    target = next(i[1] for i in log.items if i[0] == "target")
    assert [i[1:] for i in log.items if i[0] == "row"] == [(target, ["d", 4])]
