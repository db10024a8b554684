"""Rows of a batch tuple as tuples anchored to it, the data-frame views, and batches on the wire."""

from __future__ import annotations

import builtins
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from storm_py.api.tuple import Fields, Tuple
from storm_py.errors import CodecError
from storm_py.protocol.codec import decode, encode
from storm_py.runtime.ids import IdSource
from storm_py.runtime.transfer.frames import FrameDecoder, FrameTargets, encode_entries
from storm_py.vector import as_pandas, as_polars
from storm_py.vector.rows import row_tuples

BATCH = pa.record_batch({"word": ["a", "b", None], "n": pa.array([1, 2, 3], pa.int32())})


def test_rows_are_tuples_anchored_to_the_batch_tuple() -> None:
    tup = Tuple([BATCH], Fields("word", "n"), "split", "default", 7, None, 99, 5)
    rows = row_tuples(tup, IdSource(5))
    assert [r.values for r in rows] == [["a", 1], ["b", 2], [None, 3]]
    assert all(r.source_component == "split" and r.source_task == 7 and r["word"] == r.values[0] for r in rows)
    assert all(r._root == 99 for r in rows)
    # the batch tuple's ack value holds every row's edge: acked, its tree then waits for every row
    acc = 0
    for r in rows:
        acc ^= r._edge
    assert tup._ack_val == acc and acc
    several = Tuple([BATCH], Fields("word", "n"), "split", "default", 7, {1: 2, 3: 4})
    rows = row_tuples(several, IdSource(5))
    assert all(set(r._ids or {}) == {1, 3} for r in rows)
    unanchored = row_tuples(Tuple([BATCH], Fields("word", "n"), "s", "default", 1, None), IdSource(5))
    assert all(r._root is None and r._ids is None for r in unanchored)


def test_views() -> None:
    frame = as_pandas(BATCH)
    assert isinstance(frame, pd.DataFrame) and list(frame["n"]) == [1, 2, 3]
    polars_frame = as_polars(pa.Table.from_batches([BATCH]))
    assert isinstance(polars_frame, pl.DataFrame) and polars_frame["word"].to_list() == ["a", "b", None]


@pytest.mark.parametrize(("view", "package"), [(as_pandas, "pandas"), (as_polars, "polars")])
def test_a_missing_library_is_named(monkeypatch: pytest.MonkeyPatch, view: Any, package: str) -> None:
    real = builtins.__import__

    def refuse(name: str, *args: Any, **kw: Any) -> Any:
        if name == package or name.startswith(package + "."):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", refuse)
    monkeypatch.delitem(__import__("sys").modules, package)
    with pytest.raises(ImportError, match=f"install the package '{package}'"):
        view(BATCH)


def test_batches_and_tables_cross_the_codec_equal_names_and_types_included() -> None:
    typed = pa.record_batch({"t": pa.array([1, 2], pa.timestamp("ms", tz="UTC")), "l": pa.array([[1], []]),
                             "d": pa.array(["x", "x"]).dictionary_encode()})
    back = decode(encode([typed, "other"]))
    assert back[0].equals(typed) and back[0].schema == typed.schema and back[1] == "other"
    table = pa.Table.from_batches([BATCH, BATCH])
    assert decode(encode({"t": table}))["t"].equals(table)
    assert decode(encode(BATCH.slice(0, 0))).num_rows == 0


def test_the_frame_decoder_takes_one_batch_per_tuple_of_a_columnar_stream() -> None:
    fields = Fields("word", "n")
    targets = FrameTargets(frozenset(), frozenset(), {2: frozenset({("split", "default")})}, frozenset())
    decoder = FrameDecoder({1: "split", 2: "count"}, {"split": {"default": fields}}, targets,
                           frozenset({("split", "default")}))
    good = encode_entries("w1", [(2, [Tuple([BATCH], fields, "split", "default", 1, None, 5, 6)])])
    assert good.frame is not None
    _, entries, count = decoder.decode(good.frame)
    assert count == 1 and entries[0][1][0].values[0].equals(BATCH) and entries[0][1][0]._root == 5
    for bad in ([["a", 1]], [pa.record_batch({"other": [1], "n": [2]})], [BATCH, BATCH]):
        frame = encode_entries("w1", [(2, [Tuple(bad, fields, "split", "default", 1, None)])]).frame
        assert frame is not None
        with pytest.raises(CodecError, match="columnar stream split/default"):
            decoder.decode(frame)
