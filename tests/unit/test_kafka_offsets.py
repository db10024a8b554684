"""The Kafka spout's pure offset manager, retry policy and start-position rules (no broker)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from storm_py.kafka.offsets import (
    BEGINNING,
    END,
    PartitionOffsets,
    RetryPolicy,
    first_poll_position,
    zk_start_offset,
)

NO_BACKOFF = RetryPolicy(0.0, 2.0, 0.0, None)


def test_commits_only_the_contiguous_acked_prefix() -> None:
    m = PartitionOffsets(0, 100, NO_BACKOFF)
    for o in range(5):
        m.on_fetched(o)
        m.on_emit(o)
    for o in (0, 1, 3, 4):
        m.on_ack(o)
    assert m.commit_offset() == 2  # 2 is still in flight
    m.committed_to(2)
    m.on_ack(2)
    assert m.commit_offset() == 5


def test_gap_of_offsets_never_emitted_counts_as_done_once_acked_above() -> None:
    """STORM-2546: compacted or deleted offsets never block the commit; they are counted."""
    m = PartitionOffsets(10, 100, NO_BACKOFF)
    for o in (10, 11, 15, 16):  # 12..14 are gone from the log
        m.on_fetched(o)
        m.on_emit(o)
    assert m.skipped == 3
    for o in (10, 11, 15, 16):
        m.on_ack(o)
    assert m.commit_offset() == 17


def test_a_gap_before_the_first_pending_offset_is_committed_and_never_counted_as_uncommitted() -> None:
    m = PartitionOffsets(10, 100, NO_BACKOFF)
    for o in (13, 14, 20):  # 10..12 and 15..19 are gone from the log
        m.on_fetched(o)
    for o in (13, 14):
        m.on_emit(o)
    assert m.uncommitted == 2  # the gaps count nothing, nor does 20, fetched but not emitted
    assert m.commit_offset() == 13  # the first pending offset: nothing below it is left
    m.committed_to(13)
    m.on_ack(14)
    m.on_emit(20)
    assert m.uncommitted == 3
    m.on_ack(13)
    assert m.commit_offset() == 20
    m.committed_to(17)  # inside the second gap
    assert m.uncommitted == 1 and m.commit_offset() == 20


def test_a_tree_is_one_entry_until_it_fails_and_a_commit_past_part_of_it_splits_it() -> None:
    m = PartitionOffsets(5, 100, NO_BACKOFF, records_per_tree=4)
    for o in (5, 6, 8, 9, 10, 11, 12, 13):  # 7 is gone from the log
        m.on_fetched(o)
    m.on_tree_emit([5, 6, 8], ["a", "b", "c"])
    assert m.pending == {} and m.has_pending() and m.uncommitted == 3 and m.commit_offset() is None
    m.on_tree_emit([9, 10], ["d", "e"])
    assert m.on_tree_ack([9, 10]) == 2 and m.commit_offset() is None  # 5 is still in flight
    assert m.on_tree_fail([5, 6, 8], now=1.0) == 3
    assert m.pending == {5: "a", 6: "b", 8: "c"} and m.due_retries(1.0) == [5, 6, 8] and m.trees == {}
    m.on_tree_emit([11, 12, 13], ["f", "g", "h"])
    m.committed_to(12)  # after a forced reset: 11 is no longer ours, 12 and 13 wait on their own
    assert m.lost == 4 and m.pending == {12: "g", 13: "h"} and m.trees == {}
    assert m.on_tree_ack([11, 12, 13]) == 2 and m.ignored == 1
    assert not m.has_pending() and m.commit_offset() == 14


def test_max_retries_then_dead_and_acked_commit_moves_on() -> None:
    m = PartitionOffsets(0, 100, RetryPolicy(0.0, 2.0, 1.0, max_retries=2))
    m.on_fetched(0)
    m.on_emit(0)
    assert m.on_fail(0, 0.0) == "retry"
    assert m.due_retries(0.0) == [0]
    m.on_emit(0)
    assert m.on_fail(0, 1.0) == "retry"
    m.on_emit(0)
    assert m.on_fail(0, 2.0) == "dead"
    m.on_ack(0)  # the spout dead-letters it, then acks it
    assert m.commit_offset() == 1


def test_backoff_grows_and_is_capped() -> None:
    p = RetryPolicy(0.0, 2.0, 0.01, None)
    assert p.delay(1) == 0.0
    assert p.delay(2) == 0.004
    assert p.delay(60) == 0.01


def test_after_commit_records_below_are_not_emitted_again() -> None:
    """STORM-2666: buffered records below the committed offset are dropped."""
    m = PartitionOffsets(0, 100, NO_BACKOFF)
    for o in range(3):
        m.on_fetched(o)
        m.on_emit(o)
        m.on_ack(o)
    m.committed_to(m.commit_offset() or 0)
    assert not m.should_emit(1)
    assert m.should_emit(3)
    assert m.position_behind(2) and not m.position_behind(3)


def test_acks_and_fails_of_unknown_offsets_are_ignored_and_counted() -> None:
    m = PartitionOffsets(5, 100, NO_BACKOFF)
    assert not m.on_ack(3)
    assert m.on_fail(4, 0.0) == "ignored"
    assert m.ignored == 2


def test_limit_gates_new_records_but_not_due_retries() -> None:
    """STORM-2343/2549: a partition at max_uncommitted_offsets still retries its failed offset."""
    m = PartitionOffsets(0, 3, NO_BACKOFF)
    for o in range(3):
        m.on_fetched(o)
        m.on_emit(o)
    assert not m.pollable()
    m.on_fail(0, 0.0)
    assert m.due_retries(0.0) == [0]


def test_rebase_below_commit_counts_lost() -> None:
    m = PartitionOffsets(100, 10, NO_BACKOFF)
    m.on_fetched(100)
    m.on_emit(100)
    assert m.rebase(0) == 1
    assert m.lost == 1 and m.committed == 0 and m.should_emit(0)


def test_first_poll_strategies_follow_storm_kafka_client_table() -> None:
    assert first_poll_position("EARLIEST", 7, "topo-1", "topo-1") == 7
    assert first_poll_position("EARLIEST", 7, "other", "topo-1") == BEGINNING
    assert first_poll_position("EARLIEST", None, None, "topo-1") == BEGINNING
    assert first_poll_position("LATEST", 7, "topo-1", "topo-1") == 7
    assert first_poll_position("LATEST", 7, None, "topo-1") == END
    assert first_poll_position("UNCOMMITTED_EARLIEST", 7, "other", "topo-1") == 7
    assert first_poll_position("UNCOMMITTED_EARLIEST", None, None, "topo-1") == BEGINNING
    assert first_poll_position("UNCOMMITTED_LATEST", 7, None, "topo-1") == 7
    assert first_poll_position("UNCOMMITTED_LATEST", None, None, "topo-1") == END


def test_zk_start_honours_ignore_zk_offsets_only_for_a_new_topology_id() -> None:
    assert zk_start_offset(None, None, "t-2", False, 0, None).offset == 0
    assert zk_start_offset(40, "t-1", "t-2", False, 0, None).offset == 40
    assert zk_start_offset(40, "t-1", "t-2", True, 0, None).offset == 0  # new submission
    assert zk_start_offset(40, "t-2", "t-2", True, 0, None).offset == 40  # restarted worker, same topology
    behind = zk_start_offset(40, "t-1", "t-2", False, 1000, max_offset_behind=100)
    assert behind.offset == 1000 and behind.skipped == 960


# ----------------------------------------------------------------------------------------- property test
ops = st.lists(
    st.tuples(st.sampled_from(["fetch", "fetch_gap", "ack", "fail", "retry", "commit", "tick", "tree", "tree_ack",
                               "tree_fail"]),
              st.integers(min_value=0, max_value=40)),
    min_size=1, max_size=300,
)


@settings(max_examples=300, deadline=None)
@given(ops=ops, limit=st.integers(min_value=1, max_value=12), max_retries=st.one_of(st.none(), st.integers(0, 3)))
def test_never_commits_past_an_unacked_offset_and_never_stalls(
    ops: list[tuple[str, int]], limit: int, max_retries: int | None
) -> None:
    """Random emit/ack/fail/retry/commit orders with gaps, records alone and in trees: every commit lies at or
    below the first pending offset; a due retry is always offered (even at the limit); once everything is acked
    the commit reaches the end of what was fetched."""
    m = PartitionOffsets(0, limit, RetryPolicy(0.0, 2.0, 0.05, max_retries), records_per_tree=4)
    now = 0.0
    next_offset = 0
    emitted: set[int] = set()
    acked: set[int] = set()
    trees: list[list[int]] = []  # trees in flight: acked or failed only as a whole
    for op, arg in ops:
        in_trees = {o for t in trees for o in t}
        in_flight = sorted(m.pending.keys() - set(m.scheduled) - in_trees)
        if op == "tree" and m.pollable():
            tree = []
            for _ in range(1 + arg % m.tree_size):
                if arg % 2:
                    next_offset += 1  # a gap inside the tree
                m.on_fetched(next_offset)
                assert m.should_emit(next_offset)
                tree.append(next_offset)
                emitted.add(next_offset)
                next_offset += 1
            m.on_tree_emit(tree, [None] * len(tree))
            trees.append(tree)
        elif op == "tree_ack" and trees:
            tree = trees.pop(arg % len(trees))
            assert m.on_tree_ack(tree) == len(tree)
            acked.update(tree)
        elif op == "tree_fail" and trees:
            tree = trees.pop(arg % len(trees))
            assert m.on_tree_fail(tree, now) == len(tree)
            assert 1 <= m.tree_size <= m.records_per_tree
        elif op in ("fetch", "fetch_gap") and m.pollable():
            if op == "fetch_gap":
                next_offset += 1 + arg % 3  # offsets the broker no longer has
            m.on_fetched(next_offset)
            assert m.should_emit(next_offset)
            m.on_emit(next_offset)
            emitted.add(next_offset)
            next_offset += 1
        elif op == "ack" and in_flight:
            o = in_flight[arg % len(in_flight)]
            assert m.on_ack(o)
            acked.add(o)
        elif op == "fail" and in_flight:
            o = in_flight[arg % len(in_flight)]
            if m.on_fail(o, now) == "dead":
                m.on_ack(o)
                acked.add(o)
        elif op == "retry":
            for o in m.due_retries(now):
                m.on_emit(o)
        elif op == "commit":
            c = m.commit_offset()
            if c is not None:
                unacked = emitted - acked
                assert not unacked or c <= min(unacked), "committed past an unacked offset"
                m.committed_to(c)
        else:
            now += arg / 100.0
        # the max_uncommitted_offsets gate counts the emitted offsets not committed yet, and no gap
        assert m.uncommitted == len([o for o in emitted if o >= m.committed])
        # never stalls: any scheduled retry whose time has come is offered, whatever the limit
        due = {o for o, t in m.scheduled.items() if t <= now}
        assert set(m.due_retries(now)) == due
    # drain: retry and ack everything; the commit must reach the end of what was fetched
    for tree in trees:
        m.on_tree_ack(tree)
        acked.update(tree)
    for _ in range(100):
        now += 1.0
        for o in m.due_retries(now):
            m.on_emit(o)
        for o in sorted(m.pending.keys() - set(m.scheduled)):
            m.on_ack(o)
            acked.add(o)
        if not m.pending:
            break
    assert not m.pending and not m.trees
    c = m.commit_offset()
    if c is not None:
        m.committed_to(c)
    assert m.committed == (max(emitted) + 1 if emitted else 0)
