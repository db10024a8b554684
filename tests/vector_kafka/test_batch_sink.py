"""ParquetBatchSink with batch inputs: ``[attempt, RecordBatch | Table]`` added without a row conversion, columns
matched by name and cast safely, a batch that does not fit sent whole to ``"errors"``, exactly once per txid."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest

from storm_py.spark import ParquetBatchSink, committed_txids, read_committed_table
from storm_py.spark.layout import DatasetLayout
from storm_py.testing import test_tuple
from storm_py.transactional.attempt import TransactionAttempt

SCHEMA = {"user": "string", "amount": "float64", "partition": "int64", "offset": "int64", "at": "timestamp?"}
T0 = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


class Collector:
    def __init__(self) -> None:
        self.emitted: list[tuple[list[Any], str]] = []

    def emit(self, values: list[Any], stream: str = "default") -> list[int]:
        self.emitted.append((values, stream))
        return []


def batch(offsets: list[int], partition: int = 0, **over: Any) -> pa.RecordBatch:
    columns = {
        "offset": pa.array(offsets, pa.int64()),
        "user": pa.array([f"u{o}" for o in offsets]),
        "amount": pa.array([o / 2 for o in offsets], pa.float32()),  # cast to float64 by name
        "partition": pa.array([partition] * len(offsets), pa.int32()),
        "at": pa.array([T0] * len(offsets), pa.timestamp("ms", tz="UTC")),
        "ignored": pa.array([b"x"] * len(offsets)),
    }
    columns.update(over)
    return pa.RecordBatch.from_pydict(columns)


def run_txid(sink: ParquetBatchSink, txid: int, attempt: int, *inputs: Any) -> Collector:
    collector = Collector()
    tx = TransactionAttempt(txid, attempt)
    sink.prepare({}, None, collector, tx)  # type: ignore[arg-type]
    for data in inputs:
        sink.execute(test_tuple([tx, data], component="kafka", fields=["attempt", "batch"]))
    sink.finish_batch()
    return collector


def rows(root: Any) -> list[dict[str, Any]]:
    return sorted(read_committed_table(root).to_pylist(), key=lambda r: (r["partition"], r["offset"]))


def test_batches_are_cast_by_name_and_committed_exactly_once_per_txid(tmp_path):
    sink = ParquetBatchSink(tmp_path, SCHEMA, source_fields=("partition", "offset"), fsync=False)
    errors = run_txid(sink, 1, 1, batch([0, 1, 2]), pa.Table.from_batches([batch([0, 1], partition=1)]))
    assert errors.emitted == []
    want = [{"user": f"u{o}", "amount": o / 2, "partition": p, "offset": o, "at": T0, "txid": 1}
            for p, offs in ((0, [0, 1, 2]), (1, [0, 1])) for o in offs]
    assert rows(tmp_path) == want
    assert DatasetLayout(tmp_path).read_manifest(1).source == {"0": [0, 2], "1": [0, 1]}
    # a replay of a committed txid changes nothing; the next txid adds its rows
    run_txid(sink, 1, 2, batch([0, 1, 2]), batch([0, 1], partition=1))
    run_txid(sink, 2, 3, batch([3, 4]))
    assert committed_txids(tmp_path) == [1, 2]
    assert rows(tmp_path) == sorted([*want, *({"user": f"u{o}", "amount": o / 2, "partition": 0, "offset": o,
                                                "at": T0, "txid": 2} for o in (3, 4))],
                                    key=lambda r: (r["partition"], r["offset"]))


@pytest.mark.parametrize("bad, says", [
    (batch([5]).drop_columns(["amount"]), "no columns ['amount']"),
    (batch([5], user=pa.array([[1]])), "column 'user' (list<item: int64>) cannot be cast"),
    (batch([5], offset=pa.array([2.5])), "column 'offset' (double) cannot be cast to int64"),
    (batch([5], user=pa.array([None], pa.string())), "column 'user' holds 1 nulls"),
])
def test_a_batch_that_does_not_fit_goes_to_errors_whole_and_the_others_are_committed(tmp_path, bad, says):
    sink = ParquetBatchSink(tmp_path, SCHEMA, fsync=False)
    errors = run_txid(sink, 1, 1, batch([0, 1]), bad)
    [(values, stream)] = errors.emitted
    assert stream == "errors"
    attempt, sent, reason = values
    assert attempt == TransactionAttempt(1, 1) and sent is bad
    assert says in reason and "'kafka'" in reason
    assert [r["offset"] for r in rows(tmp_path)] == [0, 1]


def test_batches_and_rows_of_one_txid_land_together(tmp_path):
    sink = ParquetBatchSink(tmp_path, SCHEMA, partition_by=["partition"], fsync=False)
    collector = Collector()
    tx = TransactionAttempt(1, 1)
    sink.prepare({}, None, collector, tx)  # type: ignore[arg-type]
    sink.execute(test_tuple([tx, "row", 9.0, 7, 1, None]))
    sink.execute(test_tuple([tx, batch([2, 3], partition=7)]))
    sink.finish_batch()
    assert [(r["user"], r["partition"], r["offset"]) for r in rows(tmp_path)] == [
        ("row", 7, 1), ("u2", 7, 2), ("u3", 7, 3)]
