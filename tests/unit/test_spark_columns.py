"""The sink's compiled per-value passes decide exactly what the general schema check decides (pure, no pyarrow).

Run in both builds: the compiled one tests the extension, the pure one the same source interpreted.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storm_py.spark import schema as schema_module
from storm_py.spark.columns import INT64_MAX, INT64_MIN, checked_columns, epoch_micros
from storm_py.spark.schema import Schema, transpose

SCHEMA = {"s": "string", "n": "int64", "x": "float64?", "ok": "bool", "at": "timestamp", "raw": "binary?"}
UTC = dt.UTC
CET = dt.timezone(dt.timedelta(hours=1))


class Text(str):
    pass


class Stamp(dt.datetime):
    pass


AT = dt.datetime(2026, 1, 1, 12, 30, tzinfo=UTC)
# per column: values that fit, and values that do not (wrong type, a subclass, out of range, null where not allowed)
GOOD: dict[str, list[Any]] = {
    "s": ["", "a", "ü"], "n": [0, -1, INT64_MIN, INT64_MAX, 2**61, -(2**61)], "x": [1.5, 2, None, -0.0],
    "ok": [True, False], "at": [AT, dt.datetime(1970, 1, 1)], "raw": [b"", b"\x00", None],
}
BAD: dict[str, list[Any]] = {
    "s": [Text("a"), b"a", None, 1], "n": [True, 1.0, "1", None, INT64_MAX + 1, INT64_MIN - 1, 2**70],
    "x": ["1", True, b"1"], "ok": [1, None, "true"], "at": [Stamp(2026, 1, 1), "2026-01-01", dt.date(2026, 1, 1)],
    "raw": [bytearray(b"1"), "x"],
}
NAMES = list(SCHEMA)


good_row = st.tuples(*(st.sampled_from(GOOD[n]) for n in NAMES)).map(list)


@st.composite
def one_bad_cell(draw: st.DrawFn) -> list[Any]:
    r = draw(good_row)
    name = draw(st.sampled_from(NAMES))
    r[NAMES.index(name)] = draw(st.sampled_from(BAD[name]))
    return r


row = st.one_of(
    good_row,
    good_row,
    one_bad_cell(),
    good_row.map(tuple),  # a tuple row: fits, but not the compiled pass's
    st.lists(st.sampled_from(GOOD["s"]), max_size=8),  # wrong width
)


@settings(max_examples=400, deadline=None)
@given(st.lists(row, min_size=1, max_size=12))
def test_the_compiled_pass_takes_a_batch_exactly_when_every_row_fits(rows: list[Any]) -> None:
    schema = Schema.from_dict(SCHEMA)
    every_row_fits = all(schema.row_problem(r) is None for r in rows)
    checked = checked_columns(rows, len(NAMES), schema._slots, schema._int64)
    if every_row_fits and all(type(r) is list for r in rows):
        assert checked == transpose(rows, len(NAMES))
    else:
        assert checked is None


@settings(max_examples=200, deadline=None)
@given(st.lists(row, min_size=0, max_size=12))
def test_check_batch_answers_the_same_with_and_without_the_compiled_pass(rows: list[Any]) -> None:
    schema = Schema.from_dict(SCHEMA)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(schema_module, "COMPILED", False)
        general = schema.check_batch(rows)
        mp.setattr(schema_module, "COMPILED", True)
        one_pass = schema.check_batch(rows)
    assert one_pass == general


def test_slots_compare_types_by_identity() -> None:
    schema = Schema.from_dict({"x": "float64?", "n": "int64"})
    assert [set(s) for s in schema._slots] == [{float, int, type(None)}, {int}]
    assert checked_columns([[1, True]], 2, schema._slots, schema._int64) is None  # bool is not an int64
    assert checked_columns([[True, 1]], 2, schema._slots, schema._int64) is None  # nor a float64


def reference_micros(d: dt.datetime) -> int:
    naive = d if d.tzinfo is None else d.astimezone(UTC).replace(tzinfo=None)
    return (naive - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.datetimes(), st.datetimes(timezones=st.just(UTC))), max_size=20))
def test_epoch_micros_are_microseconds_since_1970_utc(values: list[Any]) -> None:
    assert epoch_micros(values) == [None if v is None else reference_micros(v) for v in values]


def test_epoch_micros_at_the_ends_of_the_calendar() -> None:
    values = [dt.datetime.min, dt.datetime.max.replace(tzinfo=UTC), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
              dt.datetime(2000, 2, 29, tzinfo=UTC), dt.datetime(1900, 3, 1)]
    assert epoch_micros(values) == [reference_micros(v) for v in values]
    assert epoch_micros([dt.datetime(1970, 1, 1, tzinfo=UTC)]) == [0]


def test_epoch_micros_leaves_other_time_zones_to_the_general_conversion() -> None:
    assert epoch_micros([AT, dt.datetime(2026, 1, 1, tzinfo=CET)]) is None
