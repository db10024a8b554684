"""The groupings of a columnar stream: the vectorized fields split sends each row where the per-tuple fields
grouping sends a tuple of its values; the other groupings move whole batches or ask per row."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from storm_py.api.components import CustomStreamGrouping
from storm_py.api.topology import ALL, CUSTOM, FIELDS, GLOBAL, PARTIAL_KEY, SHUFFLE, Grouping
from storm_py.api.tuple import Fields
from storm_py.runtime.groupers import make_grouper, values_hash
from storm_py.vector.routing import ColumnarRoute, row_hashes

TARGETS = [3, 5, 8, 11, 12]


def grouper(kind: str, out: list[str], keys: list[str] | None = None, custom: Any = None, targets: Any = None) -> Any:
    return make_grouper(Grouping(kind, Fields(keys) if keys is not None else None, custom), list(targets or TARGETS),
                        Fields(out), set(), random.Random(1), lambda g, t: g.prepare(None, None, t))


def rows_by_task(parts: list[tuple[int, list[Any]]]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for task, values in parts:
        assert task not in out, "one batch per task"
        assert len(values) == 1 and isinstance(values[0], pa.RecordBatch)
        out[task] = values[0].to_pylist()
    return out


def per_tuple(batch: pa.RecordBatch, keys: list[str], targets: list[int] | None = None) -> dict[int, list[dict]]:
    chooser = grouper(FIELDS, batch.schema.names, keys, targets=targets)
    out: dict[int, list[dict]] = {}
    for row in batch.to_pylist():
        (task,) = chooser.choose(0, [row[n] for n in batch.schema.names])
        out.setdefault(task, []).append(row)
    return out


ints = st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1))
floats = st.one_of(st.none(), st.floats(allow_nan=False))
bools = st.one_of(st.none(), st.booleans())
texts = st.one_of(st.none(), st.text(max_size=6))
blobs = st.one_of(st.none(), st.binary(max_size=6))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_key_goes_to_the_task_the_per_tuple_fields_grouping_picks(data: st.DataObject) -> None:
    n = data.draw(st.integers(min_value=1, max_value=40))
    columns = {
        "i": pa.array(data.draw(st.lists(ints, min_size=n, max_size=n)), pa.int64()),
        "f": pa.array(data.draw(st.lists(floats, min_size=n, max_size=n)), pa.float64()),
        "b": pa.array(data.draw(st.lists(bools, min_size=n, max_size=n)), pa.bool_()),
        "s": pa.array(data.draw(st.lists(texts, min_size=n, max_size=n)), pa.string()),
        "y": pa.array(data.draw(st.lists(blobs, min_size=n, max_size=n)), pa.binary()),
    }
    batch = pa.record_batch(columns)
    keys = data.draw(st.lists(st.sampled_from(list(columns)), min_size=1, max_size=3, unique=True))
    targets = data.draw(st.sampled_from([TARGETS, [7], [1, 2]]))
    route = ColumnarRoute("c", "s", batch.schema.names, None, [grouper(FIELDS, batch.schema.names, keys,
                                                                        targets=targets)])
    assert rows_by_task(route.parts(0, batch)) == per_tuple(batch, keys, targets)


def test_row_hashes_are_values_hash_of_each_rows_keys() -> None:
    batch = pa.record_batch({"a": pa.array([1, None, 1, 2**40], pa.int64()), "b": ["x", "y", None, "x"],
                             "c": pa.array([1.5, 2.0, None, -0.0])})
    got = row_hashes(batch, [0, 1, 2]).tolist()
    assert got == [values_hash(list(r.values())) for r in batch.to_pylist()]
    dictionary = pa.record_batch({"d": pa.array(["p", "q", None, "p"]).dictionary_encode()})
    assert row_hashes(dictionary, [0]).tolist() == [values_hash([v]) for v in ["p", "q", None, "p"]]
    nested = pa.record_batch({"l": pa.array([[1, 2], None, [3]])})  # a type dictionary encoding refuses
    assert row_hashes(nested, [0]).tolist() == [values_hash([v]) for v in [[1, 2], None, [3]]]


def test_rows_keep_their_order_per_task_and_a_task_without_rows_gets_nothing() -> None:
    batch = pa.record_batch({"k": [f"w{i % 7}" for i in range(200)], "i": list(range(200))})
    route = ColumnarRoute("c", "s", ["k", "i"], None, [grouper(FIELDS, ["k", "i"], ["k"])])
    parts = rows_by_task(route.parts(0, batch))
    for rows in parts.values():
        assert [r["i"] for r in rows] == sorted(r["i"] for r in rows)
        assert rows
    assert sum(len(r) for r in parts.values()) == 200


def test_whole_batch_groupings() -> None:
    batch = pa.record_batch({"k": [1, 2, 3]})
    for kind, want in [(ALL, TARGETS), (GLOBAL, [3])]:
        parts = ColumnarRoute("c", "s", ["k"], None, [grouper(kind, ["k"], [] if kind == GLOBAL else None)]).parts(
            0, batch)
        assert [t for t, _ in parts] == want and all(v[0] is batch for _, v in parts)
    shuffle = ColumnarRoute("c", "s", ["k"], None, [grouper(SHUFFLE, ["k"])])
    seen = set()
    for _ in range(10):
        ((task, values),) = shuffle.parts(0, batch)
        assert values[0] is batch
        seen.add(task)
    assert seen == set(TARGETS)  # round robin over the targets
    assert shuffle.parts(0, batch.slice(0, 0)) == []  # no rows: nothing is sent


def test_partial_key_and_custom_ask_per_row_in_order() -> None:
    batch = pa.record_batch({"k": ["a", "b", "a", "c", "a", "a"]})
    chooser = grouper(PARTIAL_KEY, ["k"], ["k"])
    twin = grouper(PARTIAL_KEY, ["k"], ["k"])
    want: dict[int, list[str]] = {}
    for row in batch.to_pylist():
        (t,) = twin.choose(0, [row["k"]])
        want.setdefault(t, []).append(row["k"])
    got = {t: [r["k"] for r in rows] for t, rows in rows_by_task(
        ColumnarRoute("c", "s", ["k"], None, [chooser]).parts(0, batch)).items()}
    assert got == want

    class ByLength(CustomStreamGrouping):
        def prepare(self, context: Any, stream: Any, target_tasks: list[int]) -> None:
            self.targets = target_tasks

        def choose_tasks(self, task_id: int, values: list[Any]) -> list[int]:
            return self.targets[: len(values[0])]

    words = pa.record_batch({"k": ["a", "bbb", "cc"]})
    route = ColumnarRoute("c", "s", ["k"], None, [grouper(CUSTOM, ["k"], custom=ByLength())])
    got = rows_by_task(route.parts(0, words))
    assert got == {3: [{"k": "a"}, {"k": "bbb"}, {"k": "cc"}], 5: [{"k": "bbb"}, {"k": "cc"}], 8: [{"k": "bbb"}]}
