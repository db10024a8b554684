"""ParquetBatchSink's options are checked when the topology is built; importing storm_py.spark pulls no extras."""

from __future__ import annotations

import subprocess
import sys

import pytest

from storm_py.spark import ParquetBatchSink
from storm_py.spark.jobs import JobError
from storm_py.spark.schema import SchemaError

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


def test_declares_the_errors_stream():
    class Declarer:
        def __init__(self):
            self.streams = {}

        def declare_stream(self, stream, fields, direct=False):
            self.streams[stream] = list(fields)

    d = Declarer()
    ParquetBatchSink("/nowhere", SCHEMA).declare_output_fields(d)
    assert d.streams == {"errors": ["attempt", "values", "reason"]}


def test_importing_storm_py_and_the_sink_pulls_neither_pyarrow_nor_pyspark():
    code = ("import sys, storm_py, storm_py.spark, storm_py.cli.main; "
            "print(sorted(m for m in ('pyarrow', 'pyspark') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
