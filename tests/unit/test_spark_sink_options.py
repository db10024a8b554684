"""ParquetBatchSink's options are checked when the topology is built; importing storm_py.spark pulls no extras."""

from __future__ import annotations

import subprocess
import sys

import pytest

from storm_py.spark import ParquetBatchSink, committed_txids
from storm_py.spark.jobs import JobError
from storm_py.spark.schema import SchemaError
from storm_py.testing import test_tuple
from storm_py.transactional import TransactionAttempt

SCHEMA = {"p": "int64", "o": "int64", "day": "string", "x": "float64?"}


def test_options_are_checked_at_construction(tmp_path):
    sink = ParquetBatchSink(tmp_path, SCHEMA, ["day"], source_fields=("p", "o"))
    assert sink.source_index == (0, 1) and sink.partition_by == ("day",)
    with pytest.raises(SchemaError, match="partition column 'x'"):
        ParquetBatchSink(tmp_path, SCHEMA, ["x"])
    with pytest.raises(SchemaError, match="no field 'partition'"):
        ParquetBatchSink(tmp_path, SCHEMA, source_fields=("partition", "o"))
    with pytest.raises(JobError, match="job_output"):
        ParquetBatchSink(tmp_path, SCHEMA, job="mod:fn")
    with pytest.raises(JobError, match="job_every_txids"):
        ParquetBatchSink(tmp_path, SCHEMA, job="mod:fn", job_output=tmp_path / "o", job_every_txids=0)
    with pytest.raises(ValueError, match="max_rows_per_file"):
        ParquetBatchSink(tmp_path, SCHEMA, max_rows_per_file=0)


def test_refused_rows_leave_on_the_declared_stream_naming_their_field(tmp_path):
    """A batch's rows the schema refuses are emitted, not written: on the stream the sink declares, one value per
    declared field, the reason naming the field at fault; the good rows are committed."""

    class Declarer:
        def __init__(self):
            self.streams = {}

        def declare_stream(self, stream, fields, direct=False):
            self.streams[stream] = list(fields)

    class Collector:
        def __init__(self):
            self.emitted = []

        def emit(self, values, stream="default"):
            self.emitted.append((stream, values))

    sink = ParquetBatchSink(tmp_path, SCHEMA, fsync=False)
    declared = Declarer()
    sink.declare_output_fields(declared)
    collector = Collector()
    attempt = TransactionAttempt(1, 0)
    sink.prepare({}, None, collector, attempt)
    for row in ([1, 10, "mon", 0.5], ["seven", 11, "mon", None], [2, 12, None, 1.0]):
        sink.execute(test_tuple([attempt, *row]))
    sink.finish_batch()

    assert [stream for stream, _ in collector.emitted] == [next(iter(declared.streams))] * 2
    refused = [dict(zip(declared.streams[stream], values, strict=True)) for stream, values in collector.emitted]
    assert [(r["attempt"], r["values"]) for r in refused] == [(attempt, ["seven", 11, "mon", None]),
                                                              (attempt, [2, 12, None, 1.0])]
    assert "'p'" in refused[0]["reason"] and "'day'" in refused[1]["reason"]
    assert committed_txids(tmp_path) == [1]


def test_importing_storm_py_and_the_sink_does_not_pull_pyspark():
    # pyarrow is an install requirement (columnar streams); pyspark is only for Spark jobs and readers
    code = ("import sys, storm_py, storm_py.spark, storm_py.cli.main; "
            "print(sorted(m for m in ('pyspark',) if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
