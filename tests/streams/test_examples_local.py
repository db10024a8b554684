"""storm-starter's Stream API examples (examples/streams_*.py) in a LocalCluster with simulated time: the exact
results of word count to a bolt, stateful word count with its state query, windowed word count, join, branch,
aggregate and typed tuples."""

from __future__ import annotations

from collections import Counter

from examples.streams_aggregate import aggregate
from examples.streams_branch import branch
from examples.streams_join import join
from examples.streams_stateful_word_count import stateful_word_count
from examples.streams_typed_tuples import typed_tuples
from examples.streams_windowed_word_count import windowed_word_count
from examples.streams_word_count import word_count
from storm_py import Count
from storm_py.clock import wait_until
from storm_py.streams import StreamBuilder, TumblingWindows
from storm_py.testing import AckFailMapTracker, tracked_wait
from tests.streams.kit import CaptureBolt, Record, feeder, running

SENTENCES = ["the cow jumped over the moon", "an apple a day", "the moon and the cow", "a day"]


def latest(pairs: list[list]) -> dict:
    """The highest count each word reached (running counts only grow)."""
    best: dict = {}
    for word, count in pairs:
        best[word] = max(best.get(word, 0), count)
    return best


def test_word_count_to_a_bolt_gives_exact_counts_and_acks_every_sentence():
    tracker = AckFailMapTracker()
    spout, out = feeder(["sentence"], tracker), Record()
    builder = StreamBuilder()
    word_count(builder, spout, CaptureBolt(out), parallelism=2)
    with running(builder.build()) as run:
        for i, sentence in enumerate(SENTENCES * 3):
            spout.feed([sentence], i)
        tracked_wait(run.tracked, len(SENTENCES) * 3)
        expected = Counter(w for s in SENTENCES * 3 for w in s.split())
        assert latest(out.snapshot()) == dict(expected)
        assert len(out.snapshot()) == sum(expected.values())  # one running count per word seen
        wait_until(lambda: all(tracker.is_acked(i) for i in range(len(SENTENCES) * 3)), 10, what="acks")


def test_stateful_word_count_answers_state_queries_from_the_state():
    words, queries = feeder(["word"]), feeder(["word"])
    counts, answers = Record(), Record()
    builder = StreamBuilder()
    stateful_word_count(builder, words, queries, counts, answers)
    with running(builder.build()) as run:
        for word in ["a", "b", "a", "c", "a", "b"]:
            words.feed([word])
        tracked_wait(run.tracked, 6)
        assert counts.snapshot() == [("a", 1), ("b", 1), ("a", 2), ("c", 1), ("a", 3), ("b", 2)]
        for word in ("a", "b", "zebra", "c"):
            queries.feed([word])
        tracked_wait(run.tracked, 4)
        assert sorted(answers.snapshot()) == [("a", 3), ("b", 2), ("c", 1)]  # no state for zebra: no answer


def test_windowed_word_count_counts_each_window_afresh():
    spout, out = feeder(["sentence"]), Record()
    builder = StreamBuilder()
    windowed_word_count(builder, spout, out, TumblingWindows.of(Count.of(2)), at_least=1)
    with running(builder.build()) as run:
        for sentence in SENTENCES:
            spout.feed([sentence])
        tracked_wait(run.tracked, len(SENTENCES))
        # window 1: the first two sentences, window 2 the last two; only "the" is seen twice in each
        assert out.snapshot() == [("the", 2), ("the", 2)]


def test_join_combines_the_pairs_of_one_window():
    evens, odds, out = feeder(["key", "val"]), feeder(["key", "val"]), Record()
    builder = StreamBuilder()
    join(builder, evens, odds, out, TumblingWindows.of(Count.of(6)))
    with running(builder.build()) as run:
        for key, value in ((1, 10), (2, 20), (3, 30)):
            evens.feed([key, value])
        tracked_wait(run.tracked, 3)
        for key, value in ((2, 200), (3, 300), (3, 301)):
            odds.feed([key, value])
        tracked_wait(run.tracked, 3)
        assert sorted(out.snapshot()) == [(2, (20, 200)), (3, (30, 300)), (3, (30, 301))]


def test_branch_sends_each_value_to_its_first_matching_branch():
    spout, evens, odds = feeder(["value", "ts", "msgid"]), Record(), Record()
    builder = StreamBuilder()
    branch(builder, spout, evens, odds)
    with running(builder.build()) as run:
        for i in range(10):
            spout.feed([i, 0, i])
        tracked_wait(run.tracked, 10)
        assert evens.snapshot() == [0, 2, 4, 6, 8]
        assert odds.snapshot() == [1, 3, 5, 7, 9]


def test_aggregate_averages_the_positive_values_of_each_window():
    spout, out = feeder(["value", "ts", "msgid"]), Record()
    builder = StreamBuilder()
    aggregate(builder, spout, out, TumblingWindows.of(Count.of(4)))
    with running(builder.build()) as run:
        for i, value in enumerate([4, -1, 2, 0, 10, 20, 30, 41]):
            spout.feed([value, 0, i])
        tracked_wait(run.tracked, 8)
        assert out.snapshot() == [3.0, 25.25]


def test_typed_tuples_group_per_key_in_count_windows():
    spout, out = feeder(["value", "ts", "msgid"]), Record()
    builder = StreamBuilder()
    typed_tuples(builder, spout, out, length=4)
    with running(builder.build()) as run:
        for i, ts in enumerate([1000, 12000, 5000, 19999, 20000, 20001, 35000, 36000]):
            spout.feed([i, ts, i])
        tracked_wait(run.tracked, 8)
        assert out.snapshot() == [(0, [0, 2]), (1, [1, 3]), (2, [4, 5]), (3, [6, 7])]
