"""Columns to Arrow arrays: the compiled build's own timestamp conversion gives what pyarrow's gives."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from storm_py.spark import arrow
from storm_py.spark.arrow import ARROW_TYPES, to_array
from storm_py.spark.schema import Schema

pytestmark = pytest.mark.spark

SCHEMA = Schema.from_dict({"at": "timestamp?", "s": "string", "n": "int64", "x": "float64", "ok": "bool",
                           "raw": "binary"})
UTC, CET = dt.UTC, dt.timezone(dt.timedelta(hours=1))
STAMPS = {
    "utc": [dt.datetime(2026, 1, 1, 12, tzinfo=UTC), None, dt.datetime(1, 1, 1, tzinfo=UTC)],
    "naive": [dt.datetime(2026, 1, 1, 12), dt.datetime.max, dt.datetime(1969, 12, 31, 23, 59, 59, 1)],
    "mixed": [dt.datetime(2026, 1, 1, 12), dt.datetime(2026, 1, 1, 12, tzinfo=UTC), None],
    "other zone": [dt.datetime(2026, 1, 1, 12, tzinfo=UTC), dt.datetime(2026, 1, 1, 13, tzinfo=CET)],
}


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("name", list(STAMPS))
def test_timestamps_convert_as_pyarrow_converts_them(monkeypatch, compiled: bool, name: str) -> None:
    monkeypatch.setattr(arrow, "COMPILED", compiled)
    col = STAMPS[name]
    got = to_array(SCHEMA.fields[0], col)
    assert got.type == ARROW_TYPES["timestamp"]
    assert got.equals(pa.array(col, type=ARROW_TYPES["timestamp"]))


@pytest.mark.parametrize("compiled", [False, True])
def test_other_types_are_pyarrows_conversion(monkeypatch, compiled: bool) -> None:
    monkeypatch.setattr(arrow, "COMPILED", compiled)
    for f, col in zip(SCHEMA.fields[1:], [["a", "b"], [1, 2**63 - 1], [1.5, 2], [True, False], [b"", b"x"]],
                      strict=True):
        assert to_array(f, col).equals(pa.array(col, type=ARROW_TYPES[f.type]))
