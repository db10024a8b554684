"""Stream API semantics in a LocalCluster with simulated time: running aggregations, windows activated once per
window (and sliding windows re-running the operations), a windowed count merged across tasks with punctuation,
outer joins and co-groups, and a raising user function failing its tuple while processing goes on."""

from __future__ import annotations

from collections import Counter

from storm_py import Count, Duration
from storm_py.clock import wait_until
from storm_py.streams import PairValueMapper, SlidingWindows, StreamBuilder, TumblingWindows, ValueMapper
from storm_py.testing import AckFailMapTracker, tracked_wait
from tests.streams.kit import Record, feeder, running


def test_unwindowed_aggregations_emit_the_result_after_every_value_even_across_tasks():
    spout = feeder(["n"])
    sums, counts, groups, maxima = Record(), Record(), Record(), Record()
    builder = StreamBuilder()
    numbers = builder.new_stream(spout, ValueMapper(0)).repartition(2)
    numbers.aggregate(0, lambda acc, v: acc + v, lambda a, b: a + b).for_each(sums)  # global grouping to 1 task
    numbers.count().for_each(counts)
    numbers.map_to_pair(lambda n: (n % 2, n)).group_by_key().for_each(groups)
    numbers.reduce(max).for_each(maxima)
    with running(builder.build()) as run:
        for n in (3, 1, 4, 1, 5):
            spout.feed([n])
        tracked_wait(run.tracked, 5)
        assert len(sums.snapshot()) == 5 and max(sums.snapshot()) == 14  # running sums in arrival order
        assert sorted(counts.snapshot()) == [1, 2, 3, 4, 5]
        assert max(maxima.snapshot()) == 5 and len(maxima.snapshot()) == 5
        last = {key: values for key, values in groups.snapshot()}
        assert sorted(last[1]) == [1, 1, 3, 5] and last[0] == [4]


def test_a_sliding_window_runs_each_value_through_the_operations_once_per_window():
    spout = feeder(["n"])
    seen, sums = Record(), Record()
    builder = StreamBuilder()
    (builder.new_stream(spout, ValueMapper(0)).window(SlidingWindows.of(Count.of(4), Count.of(2)))
     .peek(seen).reduce(lambda a, b: a + b).for_each(sums))
    with running(builder.build()) as run:
        for n in range(1, 7):
            spout.feed([n])
        tracked_wait(run.tracked, 6)
        assert sums.snapshot() == [3, 10, 18]  # [1, 2], [1..4], [3..6]
        assert seen.snapshot() == [1, 2, 1, 2, 3, 4, 3, 4, 5, 6]


def test_duration_windows_on_the_simulated_clock_merge_partial_counts_across_tasks():
    spout = feeder(["word"])
    out = Record()
    builder = StreamBuilder()
    (builder.new_stream(spout, ValueMapper(0)).repartition(2).window(TumblingWindows.of(Duration.seconds(10)))
     .map_to_pair(lambda w: (w, 1)).count_by_key().for_each(out))
    with running(builder.build()) as run:
        run.cluster.advance_cluster_time(1)
        words = ["a", "b"] * 10 + ["c"]
        for word in words:
            spout.feed([word])
        tracked_wait(run.tracked, len(words))
        assert out.snapshot() == []  # the window has not ended
        run.cluster.advance_cluster_time(10)
        wait_until(lambda: len(out.snapshot()) == 3, 10, what="one merged count per word")
        assert sorted(out.snapshot()) == [("a", 10), ("b", 10), ("c", 1)]
        for word in ["a", "a", "b", "b"]:
            spout.feed([word])
        tracked_wait(run.tracked, 4)
        run.cluster.advance_cluster_time(10)
        wait_until(lambda: len(out.snapshot()) == 5, 10, what="the next window's counts")
        assert sorted(out.snapshot()[3:]) == [("a", 2), ("b", 2)]  # afresh for the next window


def test_outer_joins_and_co_group_combine_both_sides_of_a_window():
    left_spout, right_spout = feeder(["k", "v"]), feeder(["k", "v"])
    results = {name: Record() for name in ("left", "right", "full", "co")}
    builder = StreamBuilder()
    left = builder.new_stream(left_spout, PairValueMapper(0, 1)).window(TumblingWindows.of(Count.of(4)))
    right = builder.new_stream(right_spout, PairValueMapper(0, 1))
    left.left_outer_join(right).for_each(results["left"])
    left.right_outer_join(right, lambda a, b: f"{a}+{b}").for_each(results["right"])
    left.full_outer_join(right).for_each(results["full"])
    left.co_group_by_key(right).for_each(results["co"])
    with running(builder.build()) as run:
        left_spout.feed(["x", 1])
        left_spout.feed(["y", 2])
        tracked_wait(run.tracked, 2)
        right_spout.feed(["y", 20])
        right_spout.feed(["z", 30])
        tracked_wait(run.tracked, 2)
        assert sorted(results["left"].snapshot()) == [("x", (1, None)), ("y", (2, 20))]
        assert sorted(results["right"].snapshot()) == [("y", "2+20"), ("z", "None+30")]
        assert sorted(results["full"].snapshot(), key=str) == [("x", (1, None)), ("y", (2, 20)), ("z", (None, 30))]
        assert sorted(results["co"].snapshot()) == [("x", ([1], [])), ("y", ([2], [20])), ("z", ([], [30]))]


def test_a_raising_function_fails_its_tuple_reports_the_error_and_processing_goes_on():
    tracker = AckFailMapTracker()
    spout, out = feeder(["n"], tracker), Record()
    builder = StreamBuilder()

    def invert(n):
        return 10 // n

    builder.new_stream(spout, ValueMapper(0)).map(invert).for_each(out)
    with running(builder.build()) as run:
        for i, n in enumerate([1, 0, 5]):
            spout.feed([n], i)
        tracked_wait(run.tracked, 3)
        assert out.snapshot() == [10, 2]
        wait_until(lambda: tracker.is_failed(1) and tracker.is_acked(0) and tracker.is_acked(2), 10,
                   what="the failed and the acked tuples")
        summary = run.cluster.get_topology_summary(run.name)
        bolt = next(b for b in summary["bolts"] if b["boltId"] == "bolt1")
        assert "ZeroDivisionError" in bolt["lastError"] and "invert" in bolt["lastError"]


def test_a_stateful_word_count_over_three_tasks_counts_exactly():
    spout, out = feeder(["word"]), Record()
    builder = StreamBuilder()
    (builder.new_stream(spout, ValueMapper(0)).repartition(3).map_to_pair(lambda w: (w, 1))
     .update_state_by_key(0, lambda s, v: s + v).to_pair_stream().for_each(out))
    words = ["a", "b", "c", "a", "b", "a", "d", "a"]
    with running(builder.build()) as run:
        for word in words:
            spout.feed([word])
        tracked_wait(run.tracked, len(words))
        best: dict = {}
        for word, count in out.snapshot():
            best[word] = max(best.get(word, 0), count)
        assert best == dict(Counter(words))


def test_event_time_windows_find_the_timestamp_behind_a_generated_bolt():
    """The value mapper runs in its own bolt: it carries each value's "ts" as a last field to the window."""
    spout, out = feeder(["word", "ts"]), Record()
    builder = StreamBuilder()
    window = TumblingWindows.of(Duration.seconds(10)).with_timestamp_field("ts").with_lag(Duration.seconds(1))
    (builder.new_stream(spout, ValueMapper(0)).window(window).map_to_pair(lambda w: (w, 1)).count_by_key()
     .for_each(out))
    topology = builder.build()
    assert topology.bolts["bolt1"].streams["s1"][0].to_list() == ["value", "ts"]
    with running(topology) as run:
        for word, ts in (("a", 1000), ("b", 2000), ("a", 5000), ("c", 15000), ("d", 25000)):
            spout.feed([word, ts])
        tracked_wait(run.tracked, 5)
        run.cluster.advance_cluster_time(2)  # watermarks: 24 s, windows [0, 10 s) and [10 s, 20 s) end
        wait_until(lambda: len(out.snapshot()) == 3, 10, what="two windows' counts")
        assert out.snapshot()[:2] in ([("a", 2), ("b", 1)], [("b", 1), ("a", 2)])
        assert out.snapshot()[2] == ("c", 1)


def test_branch_with_overlapping_predicates_takes_the_first_and_drops_the_rest():
    spout = feeder(["n"])
    high, middle = Record(), Record()
    builder = StreamBuilder()
    first, second = builder.new_stream(spout, ValueMapper(0)).branch(lambda x: x > 5, lambda x: x > 2)
    first.for_each(high)
    second.for_each(middle)
    with running(builder.build()) as run:
        for n in range(1, 9):
            spout.feed([n])
        tracked_wait(run.tracked, 8)
        assert high.snapshot() == [6, 7, 8]
        assert middle.snapshot() == [3, 4, 5]  # 1 and 2 satisfy neither: dropped

