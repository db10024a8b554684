"""WindowedVectorBolt in a LocalCluster: count windows measured in rows across batches, event-time windows read
from a column with late rows, batch tuples acked once all their rows expired, emits anchored to the window's
batches."""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa
import pytest

from storm_py import BasicBolt, LocalCluster, TopologyBuilder, Tuple, VectorSpout, WindowedVectorBolt
from storm_py.clock import wait_until
from storm_py.testing import FeederSpout
from storm_py.testing.registry import Shared
from storm_py.vector import TableWindow
from storm_py.windowing import Count, Duration
from tests.kafka.helpers import bolt_error


class Store(Shared):
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.queue: list[tuple[Any, pa.RecordBatch]] = []
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self.windows: list[dict[str, Any]] = []
        self.outputs: list[list[Any]] = []
        self.late: list[list[Any]] = []

    def push(self, msg_id: Any, batch: pa.RecordBatch) -> None:
        with self.lock:
            self.queue.append((msg_id, batch))


class QueueSpout(VectorSpout):
    """Emits the batches the test pushes, one per call, tracked by their ids."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def next_batch(self) -> None:
        with self.store.lock:
            item = self.store.queue.pop(0) if self.store.queue else None
        if item is not None:
            self.collector.emit(item[1], msg_id=item[0])

    def ack(self, msg_id: Any) -> None:
        self.store.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.store.failed.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(pa.schema([("n", pa.int64()), ("ts", pa.int64())]))


class SumWindow(WindowedVectorBolt):
    """Records each window's rows and emits ``[rows, sum of n]`` anchored to the window's batches."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, window: TableWindow) -> None:
        table = window.get()
        assert isinstance(table, pa.Table)
        self.store.windows.append({"n": table.column("n").to_pylist(), "new": window.get_new().column("n")
                                   .to_pylist(), "expired": len(window.get_expired().column("n")),
                                   "start": window.get_start_timestamp(), "end": window.get_end_timestamp()})
        self.collector.emit([table.num_rows, sum(table.column("n").to_pylist())])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["rows", "total"])


class Record(BasicBolt):
    def __init__(self, store: Store) -> None:
        self.store = store

    def execute(self, tup: Tuple, collector: Any) -> None:
        if tup.source_stream == "late":
            self.store.late.append(tup.values[0])
        else:
            self.store.outputs.append(list(tup.values))

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def batch(ns: list[int], ts: list[int] | None = None) -> pa.RecordBatch:
    return pa.record_batch({"n": pa.array(ns, pa.int64()), "ts": pa.array(ts or [0] * len(ns), pa.int64())})


def topology(store: Store, bolt: WindowedVectorBolt) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("spout", QueueSpout(store))
    builder.set_bolt("window", bolt).shuffle_grouping("spout")
    record = builder.set_bolt("record", Record(store)).shuffle_grouping("window")
    if "late" in str(bolt.get_component_configuration()):
        record.shuffle_grouping("window", "late")
    return builder.create_topology()


CONF = {"topology.message.timeout.secs": 60}


def test_a_count_window_counts_rows_across_batches_and_acks_a_batch_once_all_its_rows_expired():
    store = Store()
    sizes = [4, 6, 3, 7, 5]  # rows 0-3 | 4-9 | 10-12 | 13-19 | 20-24
    n = 0
    for bid, size in enumerate(sizes):
        store.push(bid, batch(list(range(n, n + size))))
        n += size
    with LocalCluster() as cluster:
        cluster.submit_topology("countwin", CONF, topology(store, SumWindow(store).with_tumbling_window(Count(10))))
        wait_until(lambda: len(store.outputs) == 2 and len(store.acked) == 2, 60,
                   what=f"two windows and their acks (have {store.outputs}, acked {store.acked})")
        assert [w["n"] for w in store.windows] == [list(range(10)), list(range(10, 20))]
        assert [w["new"] for w in store.windows] == [list(range(10)), list(range(10, 20))]
        assert [w["expired"] for w in store.windows] == [0, 10]
        assert store.windows[0]["start"] is None
        assert sorted(store.outputs) == [[10, 45], [10, 145]]
        # batches 0 and 1 had all their rows expire with the second window; 2 and 3 are in the last window,
        # and 4 waits for the next: none of them is acked (nor failed) yet
        assert sorted(store.acked) == [0, 1] and store.failed == []
        cluster.kill_topology("countwin", wait_secs=0)


def test_event_time_windows_read_a_column_and_late_rows_go_to_the_late_stream():
    store = Store()
    bolt = SumWindow(store).with_tumbling_window(Duration(10)).with_timestamp_field("ts") \
        .with_watermark_interval(Duration(20)).with_late_tuple_stream("late")
    store.push("a", batch([1, 2, 3, 4, 5], [1, 3, 12, 15, 27]))  # its rows fall in three windows
    with LocalCluster() as cluster:
        cluster.submit_topology("timewin", CONF, topology(store, bolt))
        wait_until(lambda: len(store.windows) == 2, 60, what=f"windows up to the watermark (have {store.windows})")
        assert [(w["n"], w["start"], w["end"]) for w in store.windows] == [([1, 2], 0, 10), ([3, 4], 10, 20)]
        assert store.acked == []  # row 27 is still waiting for its window
        store.push("b", batch([6, 7, 8], [5, 31, 45]))  # 5 is before the watermark (27): late
        wait_until(lambda: len(store.windows) == 4 and store.late, 60,
                   what=f"the windows after the second batch (have {store.windows}, late {store.late})")
        assert [(w["n"], w["end"]) for w in store.windows[2:]] == [([5], 30), ([7], 40)]
        assert store.late == [[6, 5]]
        wait_until(lambda: store.acked == ["a"], 30, what=f"a acked once row 27 expired (acked {store.acked})")
        assert store.failed == []
        cluster.kill_topology("timewin", wait_secs=0)


def test_a_batch_without_its_timestamp_column_fails_and_names_the_column():
    store = Store()
    bolt = SumWindow(store).with_tumbling_window(Duration(10)).with_timestamp_field("when")
    store.push("x", batch([1], [1]))
    with LocalCluster() as cluster:
        cluster.submit_topology("nots", CONF, topology(store, bolt))
        wait_until(lambda: store.failed == ["x"], 60, what="the batch failed")
        wait_until(lambda: bolt_error(cluster, "nots", "window"), 30, what="the error reported")
        error = bolt_error(cluster, "nots", "window")
        cluster.kill_topology("nots", wait_secs=0)
    assert store.windows == [] and store.acked == []
    assert "no timestamp column 'when'" in error and "'spout'" in error


def test_a_timestamp_extractor_is_refused_for_rows():
    with pytest.raises(TypeError, match="with_timestamp_field"):
        SumWindow(Store()).with_timestamp_extractor(lambda t: 0)


def test_a_per_tuple_stream_gives_one_row_per_tuple():
    store = Store()
    feeder = FeederSpout(["n", "ts"])
    builder = TopologyBuilder()
    builder.set_spout("spout", feeder)
    builder.set_bolt("window", SumWindow(store).with_tumbling_window(Count(3))).shuffle_grouping("spout")
    builder.set_bolt("record", Record(store)).shuffle_grouping("window")
    with LocalCluster() as cluster:
        cluster.submit_topology("rowwin", CONF, builder.create_topology())
        for i in range(7):
            feeder.feed([i, None if i == 0 else i * 10])  # a null in the first row
        wait_until(lambda: len(store.outputs) == 2, 60, what=f"two windows (have {store.windows})")
        cluster.kill_topology("rowwin", wait_secs=0)
    assert [w["n"] for w in store.windows] == [[0, 1, 2], [3, 4, 5]]
    assert sorted(store.outputs) == [[3, 3], [3, 12]]
