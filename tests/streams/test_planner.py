"""The topology ``StreamBuilder.build`` makes (Storm's StreamBuilderTest): which operations share a bolt, the
groupings between bolts, component and stream ids, and the errors of bad input, raised while declaring."""

from __future__ import annotations

import pytest

from storm_py import Count, Duration, Spout
from storm_py.api.topology import Grouping
from storm_py.streams import (
    CombinerAggregator,
    Consumer,
    Function,
    Pair,
    PairValueMapper,
    Predicate,
    SlidingWindows,
    StreamBuilder,
    TumblingWindows,
    TupleValueMappers,
    ValueMapper,
    ValuesMapper,
    aggregators,
)
from storm_py.streams.operations import as_function
from storm_py.testing import TestWordSpout, test_tuple


class TwoFieldSpout(Spout):
    def declare_output_fields(self, declarer):
        declarer.declare(["key", "value"])


class NoDefaultSpout(Spout):
    def declare_output_fields(self, declarer):
        declarer.declare_stream("other", ["x"])


def kinds(spec) -> dict:
    return {key: grouping.kind for key, grouping in spec.inputs.items()}


def keep(x):
    return True


def test_repartitions_and_a_global_aggregate_make_four_bolts():
    """StreamBuilderTest: repartition(3).filter.repartition(2).filter.aggregate is four bolts: 1, 3, 2, global."""
    builder = StreamBuilder()
    (builder.new_stream(TestWordSpout(), ValueMapper(0)).repartition(3).filter(keep).repartition(2).filter(keep)
     .aggregate(aggregators.Count()))
    topo = builder.build()
    assert list(topo.spouts) == ["spout1"]
    assert {cid: spec.parallelism for cid, spec in topo.bolts.items()} == {
        "bolt1": 1, "bolt2": 3, "bolt3": 2, "bolt4": 1}
    assert kinds(topo.bolts["bolt2"]) == {("bolt1", "s1"): "shuffle"}
    assert kinds(topo.bolts["bolt4"]) == {("bolt3", "s3"): "global"}


def test_map_to_pair_reduce_by_key_and_print_at_parallelism_one_are_one_bolt():
    builder = StreamBuilder()
    (builder.new_stream(TestWordSpout(), ValueMapper(0)).map_to_pair(lambda w: (w, 1))
     .reduce_by_key(lambda a, b: a + b).print())
    topo = builder.build()
    assert list(topo.bolts) == ["bolt1"]
    assert kinds(topo.bolts["bolt1"]) == {("spout1", "default"): "shuffle"}


def test_key_aggregations_repartition_by_key_only_when_needed():
    builder = StreamBuilder()
    pairs = builder.new_stream(TestWordSpout(), ValueMapper(0), parallelism=2).map_to_pair(lambda w: (w, 1))
    counted = pairs.count_by_key()
    counted.map_values(str).reduce_by_key(lambda a, b: a + b)  # already partitioned by key: same bolt
    topo = builder.build()
    assert list(topo.bolts) == ["bolt1", "bolt2"]
    grouping: Grouping = topo.bolts["bolt2"].inputs[("bolt1", "s1")]
    assert grouping.kind == "fields" and grouping.fields.to_list() == ["key"]
    assert topo.bolts["bolt1"].streams["s1"][0].to_list() == ["key", "value"]


def test_update_state_by_key_always_repartitions_and_state_query_joins_its_bolt():
    builder = StreamBuilder()
    state = builder.new_stream(TestWordSpout(), ValueMapper(0)).map_to_pair(lambda w: (w, 1)).update_state_by_key(
        0, lambda s, v: s + v)
    builder.new_stream(TestWordSpout(), ValueMapper(0)).state_query(state).print()
    topo = builder.build()
    stateful = topo.bolts["bolt2"]
    assert stateful.inputs[("bolt1", "s1")].fields.to_list() == ["key"]
    assert stateful.inputs[("bolt3", "s2")].fields.to_list() == ["value"]
    assert "$checkpointspout" in topo.spouts  # managed state is wired as for any stateful bolt


def test_windowed_aggregation_across_a_repartition_is_partial_then_merged_with_punctuation():
    builder = StreamBuilder()
    (builder.new_stream(TestWordSpout(), ValueMapper(0), parallelism=2).window(TumblingWindows.of(Count.of(4)))
     .map_to_pair(lambda w: (w, 1)).count_by_key().print())
    topo = builder.build()
    merge = topo.bolts["bolt3"]
    assert kinds(merge) == {("bolt2", "s2"): "fields", ("bolt2", "s2__punctuation"): "all"}
    assert "s2__punctuation" in topo.bolts["bolt2"].streams


def test_to_right_after_new_stream_reads_the_spouts_own_tuples():
    from tests.streams.kit import CaptureBolt, Record

    builder = StreamBuilder()
    builder.new_stream(TestWordSpout()).to(CaptureBolt(Record()), 3)
    topo = builder.build()
    assert topo.bolts["bolt1"].parallelism == 3
    assert kinds(topo.bolts["bolt1"]) == {("spout1", "default"): "shuffle"}


def test_every_declared_operation_is_built_and_building_again_gives_the_same_ids():
    builder = StreamBuilder()
    stream = builder.new_stream(TestWordSpout(), ValueMapper(0))
    stream.map(str.upper)  # nothing consumes it: still built
    first = builder.build()
    second = builder.build()
    assert list(first.bolts) == list(second.bolts) == ["bolt1"]
    stream.repartition(2).print()
    assert list(builder.build().bolts) == ["bolt1", "bolt2"]


def test_interface_objects_are_called_through_their_method():
    class Upper(Function):
        def apply(self, value):
            return value.upper()

        def __call__(self, value):  # never used when apply exists
            raise AssertionError

    class Odd(Predicate):
        def test(self, value):
            return value % 2 == 1

    seen = []

    class Keep(Consumer):
        def accept(self, value):
            seen.append(value)

    assert as_function(Upper(), "apply", "map", "function")("a") == "A"
    assert as_function(Odd(), "test", "filter", "predicate")(3)
    as_function(Keep(), "accept", "peek", "consumer")(1)
    assert seen == [1]
    assert as_function(str.upper, "apply", "map", "function")("b") == "B"


def test_mappers_pairs_and_aggregators():
    t = test_tuple(["a", 1, 2.5])
    assert ValueMapper(1)(t) == 1
    assert PairValueMapper(0, 1)(t) == ("a", 1)
    assert TupleValueMappers.of(0, 1, 2)(t) == ("a", 1, 2.5)
    assert ValuesMapper(2, 0)(t) == [2.5, "a"]
    pair = Pair.of("a", 1)
    assert pair == ("a", 1) and pair.first == "a" and pair.value2 == 1 and pair.get_second() == 1
    total = aggregators.LongSum()
    assert total.result(total.merge(total.apply(total.init(), 2), 3)) == 5
    acc = CombinerAggregator.of([], lambda a, v: [*a, v], lambda a, b: a + b)
    first = acc.init()
    first.append("x")
    assert acc.init() == []  # the initial value is copied for every start


@pytest.mark.parametrize(("declare", "error", "words"), [
    (lambda s: s.map(42), TypeError, ["map", "function"]),
    (lambda s: s.filter("x"), TypeError, ["filter", "predicate"]),
    (lambda s: s.peek(None), TypeError, ["peek", "consumer"]),
    (lambda s: s.for_each(1), TypeError, ["for_each", "consumer"]),
    (lambda s: s.flat_map(3), TypeError, ["flat_map"]),
    (lambda s: s.reduce(1), TypeError, ["reduce", "reducer"]),
    (lambda s: s.aggregate(Count(3)), TypeError, ["aggregate", "CombinerAggregator"]),
    (lambda s: s.window(Count(3)), TypeError, ["window", "TumblingWindows"]),
    (lambda s: s.to(object()), TypeError, ["to", "Bolt"]),
    (lambda s: s.to(None), TypeError, ["to"]),
    (lambda s: s.state_query("state"), TypeError, ["state_query", "StreamState"]),
    (lambda s: s.repartition(0), ValueError, ["repartition", "parallelism"]),
    (lambda s: s.branch(1), TypeError, ["branch", "predicate"]),
])
def test_bad_input_is_refused_while_declaring_with_the_operation_named(declare, error, words):
    builder = StreamBuilder()
    stream = builder.new_stream(TestWordSpout(), ValueMapper(0))
    with pytest.raises(error) as info:
        declare(stream)
    for word in words:
        assert word in str(info.value)


def test_a_plain_stream_has_no_pair_operations_and_branch_without_predicates_is_empty():
    stream = StreamBuilder().new_stream(TestWordSpout(), ValueMapper(0))
    assert not hasattr(stream, "count_by_key") and not hasattr(stream, "join")
    assert stream.branch() == []


def test_joins_need_a_pair_stream_and_a_window():
    builder = StreamBuilder()
    left = builder.new_stream(TwoFieldSpout(), PairValueMapper(0, 1))
    right = builder.new_stream(TwoFieldSpout(), PairValueMapper(0, 1))
    plain = builder.new_stream(TestWordSpout(), ValueMapper(0))
    with pytest.raises(TypeError, match=r"join.*PairStream"):
        left.window(TumblingWindows.of(Count.of(2))).join(plain)
    with pytest.raises(ValueError, match=r"co_group_by_key.*window"):
        left.co_group_by_key(right)
    with pytest.raises(ValueError, match=r"left_outer_join.*differently"):
        left.window(TumblingWindows.of(Count.of(2))).left_outer_join(right.window(TumblingWindows.of(Count.of(3))))


def test_windows_take_only_counts_and_durations():
    with pytest.raises(TypeError, match=r"TumblingWindows.of.*int"):
        TumblingWindows.of(5)
    with pytest.raises(TypeError, match=r"SlidingWindows.of.*str"):
        SlidingWindows.of(Duration.seconds(5), "1s")
    assert SlidingWindows.of(Count.of(4), Duration.seconds(1)).sliding == Duration.seconds(1)


def test_new_stream_checks_its_spout_parallelism_and_mapper():
    builder = StreamBuilder()
    with pytest.raises(TypeError, match=r"new_stream.*Spout"):
        builder.new_stream("spout")
    with pytest.raises(ValueError, match=r"new_stream.*parallelism"):
        builder.new_stream(TestWordSpout(), 0)
    with pytest.raises(ValueError, match=r"new_stream.*'default'"):
        builder.new_stream(NoDefaultSpout())
    with pytest.raises(TypeError, match=r"new_stream.*value mapper"):
        builder.new_stream(TestWordSpout(), "mapper")
    assert builder.new_stream(TestWordSpout(), 3)._node.parallelism == 3
    pairs = builder.new_stream(TwoFieldSpout(), PairValueMapper(0, 1))
    assert hasattr(pairs, "count_by_key")


def test_aggregations_and_state_updates_take_their_arguments_by_keyword_too():
    from storm_py.streams import StateUpdater

    stream = StreamBuilder().new_stream(TestWordSpout(), ValueMapper(0))
    stream.aggregate(initial_value=0, accumulator=lambda a, v: a + 1, combiner=lambda a, b: a + b)
    pairs = stream.map_to_pair(lambda w: (w, 1))
    pairs.aggregate_by_key(initial_value=[], accumulator=lambda a, v: [*a, v], combiner=lambda a, b: a + b)
    assert pairs.update_state_by_key(state_updater=StateUpdater.of(0, lambda s, v: s + v)).to_pair_stream()
    with pytest.raises(TypeError, match="update_state_by_key"):
        pairs.update_state_by_key()
    with pytest.raises(TypeError, match="aggregate_by_key"):
        pairs.aggregate_by_key(initial_value=0, accumulator=lambda a, v: a)
