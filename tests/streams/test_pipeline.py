"""One generated bolt's fused chain (the pipeline) driven directly: how input tuples become values, what leaves
on which stream, windows ended by a flush."""

from __future__ import annotations

from typing import Any

from storm_py import Count
from storm_py.streams import StreamBuilder, TumblingWindows, ValueMapper
from storm_py.streams.planner import BoltPlan, plan
from storm_py.streams.processors import Pipeline
from storm_py.testing import TestWordSpout, test_tuple


class Host:
    def __init__(self) -> None:
        self.anchor: Any = None
        self.state: Any = None
        self.timestamp: int | None = None
        self.emitted: list[tuple[list[Any], str]] = []

    def emit(self, values: list[Any], anchors: Any, stream: str) -> list[int]:
        self.emitted.append((values, stream))
        return []


def bolts(builder: StreamBuilder) -> dict[str, BoltPlan]:
    return {c.id: c for c in plan(builder._graph.nodes).components if isinstance(c, BoltPlan)}


def test_a_key_that_crossed_the_wire_as_a_list_is_a_tuple_again():
    builder = StreamBuilder()
    (builder.new_stream(TestWordSpout(), ValueMapper(0), parallelism=2).map_to_pair(lambda w: ((w, len(w)), 1))
     .count_by_key().repartition(3).for_each(print))
    host = Host()
    pipeline = Pipeline(bolts(builder)["bolt2"], host.emit, host)
    entry = pipeline.entries[("bolt1", "s1")]
    for key in (["ab", 2], ["ab", 2], ["c", 1]):  # the codec turned the tuple keys into lists
        entry(test_tuple([key, 1], component="bolt1", stream="s1", fields=["key", "value"]))
    assert host.emitted == [([("ab", 2), 1], "s2"), ([("ab", 2), 2], "s2"), ([("c", 1), 1], "s2")]


def test_a_windowed_count_emits_on_flush_only_and_starts_afresh():
    builder = StreamBuilder()
    (builder.new_stream(TestWordSpout(), ValueMapper(0)).window(TumblingWindows.of(Count.of(3)))
     .map_to_pair(lambda w: (w, 1)).count_by_key().repartition(2).for_each(print))
    host = Host()
    window_bolt = bolts(builder)["bolt2"]
    pipeline = Pipeline(window_bolt, host.emit, host)
    entry = pipeline.entries[("bolt1", "s1")]
    for word in ["a", "b", "a"]:
        entry(test_tuple([word], component="bolt1", stream="s1", fields=["value"]))
    assert host.emitted == []
    pipeline.flush()
    assert sorted(host.emitted) == [(["a", 2], "s2"), (["b", 1], "s2")]
    host.emitted.clear()
    entry(test_tuple(["b"], component="bolt1", stream="s1", fields=["value"]))
    pipeline.flush()
    assert host.emitted == [(["b", 1], "s2")]
