"""The dataset schema: which rows fit, why the others do not, and a stable fingerprint (pure, no pyarrow)."""

from __future__ import annotations

import datetime as dt

import pytest

from storm_py.spark.schema import Schema, SchemaError

SCHEMA = {"day": "string", "n": "int64", "x": "float64", "ok": "bool", "at": "timestamp", "raw": "binary?"}
AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def good(n: int = 1) -> list:
    return ["2026-01-01", n, 1.5, True, AT, b"\x00"]


def test_clean_batch_passes_whole():
    schema = Schema.from_dict(SCHEMA)
    rows = [good(i) for i in range(100)] + [["d", 2, 3, False, AT, None]]  # int widens into float64; null ok
    assert schema.check_rows(rows) == (rows, [])
    assert schema.check_rows([]) == ([], [])


@pytest.mark.parametrize(("row", "reason"), [
    (["2026-01-01", 1], "missing fields ['x', 'ok', 'at', 'raw']: 2 values for 6 fields"),
    ([*good(), "extra"], "7 values for 6 fields ['day', 'n', 'x', 'ok', 'at', 'raw']"),
    (["d", "1", 1.0, True, AT, None], "field 'n': expected int64, got str '1'"),
    (["d", True, 1.0, True, AT, None], "field 'n': expected int64, got bool True"),
    (["d", 2**63, 1.0, True, AT, None], "field 'n': 9223372036854775808 is outside the int64 range"),
    (["d", 1, "1.5", True, AT, None], "field 'x': expected float64, got str '1.5'"),
    (["d", 1, 1.0, 1, AT, None], "field 'ok': expected bool, got int 1"),
    (["d", 1, 1.0, True, "2026-01-01", None], "field 'at': expected timestamp, got str '2026-01-01'"),
    ([None, 1, 1.0, True, AT, None], "field 'day': null in a non-null string field"),
])
def test_bad_rows_are_split_out_with_their_reason(row, reason):
    schema = Schema.from_dict(SCHEMA)
    rows = [good(1), row, good(2)]
    ok, bad = schema.check_rows(rows)
    assert ok == [good(1), good(2)]
    assert bad == [(row, reason)]


def test_fingerprint_depends_on_names_types_order_and_nullability():
    fp = Schema.from_dict(SCHEMA).fingerprint()
    assert fp == Schema.from_dict(dict(SCHEMA)).fingerprint()
    assert fp != Schema.from_dict({**SCHEMA, "raw": "binary"}).fingerprint()
    assert fp != Schema.from_dict(dict(reversed(SCHEMA.items()))).fingerprint()
    assert Schema.from_dict(SCHEMA).to_dict() == SCHEMA


@pytest.mark.parametrize(("spec", "message"), [
    ({}, "at least one field"),
    ({"a": "int32"}, "unknown type 'int32'"),
    ({"txid": "int64"}, "'txid' is reserved"),
    ({"_a": "int64"}, "not usable"),
    ({"a": 5}, "type must be a string"),
])
def test_bad_schemas_are_refused_naming_the_field(spec, message):
    with pytest.raises(SchemaError, match=message):
        Schema.from_dict(spec)


def test_partition_columns_must_be_simple_non_null_fields():
    schema = Schema.from_dict(SCHEMA)
    assert schema.check_partition_by(["day", "ok"]) == ("day", "ok")
    with pytest.raises(SchemaError, match="partition column 'x'"):
        schema.check_partition_by(["x"])
    with pytest.raises(SchemaError, match="no field 'nope'"):
        schema.check_partition_by(["nope"])
