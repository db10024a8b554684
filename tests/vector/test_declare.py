"""Declaring columnar streams and the fit check of a batch against its stream."""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa
import pytest

from storm_py import Bolt, InvalidTopologyException, ReportedFailedException, Spout, TopologyBuilder
from storm_py.api.components import OutputFieldsDeclarer
from storm_py.api.topology import validate_topology
from storm_py.vector import SchemaMismatchException
from storm_py.vector.batches import check_fit, gather_batch, row_values, to_record_batch

SCHEMA = pa.schema([("word", pa.string()), ("n", pa.int64())])


def test_a_schema_declares_a_columnar_stream_with_its_names_and_types() -> None:
    d = OutputFieldsDeclarer()
    d.declare(SCHEMA)
    d.declare_stream("names", ["a", "b"], columnar=True)
    d.declare_stream("plain", ["a"])
    assert d.streams["default"][0].to_list() == ["word", "n"]
    assert d.columnar == {"default": SCHEMA, "names": None}
    assert "plain" not in d.columnar


def test_a_schema_with_columnar_false_is_refused_naming_the_component() -> None:
    class Bad(Spout):
        def declare_output_fields(self, declarer: Any) -> None:
            declarer.declare(SCHEMA, columnar=False)

    builder = TopologyBuilder()
    builder.set_spout("the-spout", Bad())
    with pytest.raises(InvalidTopologyException, match="the-spout") as err:
        builder.create_topology()
    assert "columnar=False" in str(err.value)


def test_groupings_name_columns_and_the_submit_check_applies_to_them() -> None:
    class S(Spout):
        def declare_output_fields(self, declarer: Any) -> None:
            declarer.declare(SCHEMA)

    builder = TopologyBuilder()
    builder.set_spout("s", S())
    builder.set_bolt("b", Bolt()).fields_grouping("s", ["nope"])
    with pytest.raises(InvalidTopologyException, match="nope"):
        validate_topology(builder.create_topology(), system=True)


def test_the_fit_check() -> None:
    batch = pa.record_batch({"word": ["a"], "n": pa.array([1], pa.int64())})
    check_fit(batch, ["word", "n"], SCHEMA, "c", "s")
    check_fit(batch, ["word", "n"], None, "c", "s")
    # nullability and metadata are not compared
    loose = pa.schema([pa.field("word", pa.string(), nullable=False), ("n", pa.int64())], metadata={b"k": b"v"})
    check_fit(batch, ["word", "n"], loose, "c", "s")
    with pytest.raises(SchemaMismatchException) as err:
        check_fit(batch.select(["n", "word"]), ["word", "n"], None, "counter", "counts")
    text = str(err.value)
    assert "counter" in text and "counts" in text and "['word', 'n']" in text and "n: int64, word: string" in text
    wrong_type = pa.record_batch({"word": ["a"], "n": pa.array([1], pa.int32())})
    with pytest.raises(SchemaMismatchException, match=r"n: int64.*n: int32"):
        check_fit(wrong_type, ["word", "n"], SCHEMA, "c", "s")
    assert isinstance(err.value, ReportedFailedException)


def test_what_an_emit_takes_becomes_one_batch() -> None:
    batch = pa.record_batch({"a": [1, 2]})
    assert to_record_batch(batch, "c", "s") is batch
    table = pa.Table.from_batches([pa.record_batch({"a": [1]}), pa.record_batch({"a": [2, 3]})])
    assert to_record_batch(table, "c", "s").to_pylist() == [{"a": 1}, {"a": 2}, {"a": 3}]
    frame = pl.DataFrame({"a": [4, 5]})
    assert to_record_batch(frame, "c", "s").column("a").to_pylist() == [4, 5]
    with pytest.raises(SchemaMismatchException, match="component 'c' emitted list on columnar stream 's'"):
        to_record_batch([1, 2], "c", "s")


def test_rows_and_gathering() -> None:
    batch = pa.record_batch({"a": [1, None], "b": ["x", "y"]})
    assert row_values(batch) == [[1, "x"], [None, "y"]]
    gathered = gather_batch([[1, "x"], [2, None]], ["a", "b"], "g", "s")
    assert gathered.schema.names == ["a", "b"] and gathered.column("a").type == pa.int64()
    with pytest.raises(SchemaMismatchException, match=r"'g'.*column 'b'"):
        gather_batch([[1, "x"], [2, 3]], ["a", "b"], "g", "s")


@pytest.mark.parametrize(("key", "value"), [("topology.vector.batch.size", 0), ("topology.vector.batch.size", 1.5),
                                            ("topology.vector.batch.linger.ms", -1)])
def test_an_invalid_gathering_key_of_a_component_is_refused_naming_key_and_component(key: str, value: Any) -> None:
    class S(Spout):
        def declare_output_fields(self, declarer: Any) -> None:
            declarer.declare(SCHEMA)

    builder = TopologyBuilder()
    builder.set_spout("s", S())
    builder.set_bolt("gatherer", Bolt()).shuffle_grouping("s").add_configuration(key, value)
    with pytest.raises(InvalidTopologyException) as err:
        validate_topology(builder.create_topology())
    assert "'gatherer'" in str(err.value) and key in str(err.value)
