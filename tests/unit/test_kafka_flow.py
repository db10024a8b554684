"""The Kafka spout's per-record loops (storm_py.kafka.flow): fetched records queued, waiting records emitted, acks."""

from __future__ import annotations

from collections import deque
from typing import Any

from storm_py.api.tuple import DEFAULT_STREAM
from storm_py.kafka.flow import ack_message, emit_waiting, emit_waiting_trees, take_fetched
from storm_py.kafka.offsets import PartitionOffsets, RetryPolicy
from storm_py.kafka.spout_metrics import KafkaSpoutStats

NO_BACKOFF = RetryPolicy(0.0, 2.0, 0.0, None)


def rec(partition: int, offset: int, topic: str = "t") -> tuple[Any, ...]:
    return (topic, partition, offset, b"k", f"v{offset}".encode(), 1)


def managers(*committed: int) -> dict[tuple[str, int], PartitionOffsets]:
    return {("t", p): PartitionOffsets(c, 1000, NO_BACKOFF) for p, c in enumerate(committed)}


class Emits:
    def __init__(self) -> None:
        self.out: list[tuple[list[Any], Any, str]] = []

    def __call__(self, values: list[Any], msg_id: Any, stream: str) -> None:
        self.out.append((values, msg_id, stream))


def test_fetched_records_of_owned_partitions_wait_and_move_the_fetch_position() -> None:
    ms = managers(0, 0)
    waiting: deque[Any] = deque()
    ends: dict[tuple[str, int], int] = {}
    records = [rec(0, 0), rec(0, 1), rec(1, 0), rec(9, 0), rec(0, 2), rec(0, 2, topic="other")]
    assert take_fetched(records, ms, waiting, ends) == []
    assert list(waiting) == [rec(0, 0), rec(0, 1), rec(1, 0), rec(0, 2)]  # partition 9, topic other: not ours
    assert (ms[("t", 0)].fetched_to, ms[("t", 1)].fetched_to) == (3, 1)
    assert ends == {("t", 0): 3, ("t", 1): 1}


def test_a_gap_and_a_reset_below_the_commit_are_returned_in_order() -> None:
    ms = managers(5)
    m = ms[("t", 0)]
    m.on_fetched(5)
    m.on_emit(5, rec(0, 5))
    events = take_fetched([rec(0, 6), rec(0, 9), rec(0, 2), rec(0, 3)], ms, deque(), None)
    assert events == [(("t", 0), 9, "gap", 2), (("t", 0), 2, "reset", 1)]
    assert (m.skipped, m.lost, m.committed, m.fetched_to) == (2, 1, 2, 4)


def test_emits_at_most_the_budget_with_the_record_as_message_id_and_pending_payload() -> None:
    ms = managers(0)
    waiting: deque[Any] = deque(rec(0, o) for o in range(5))
    emits = Emits()
    assert emit_waiting(waiting, ms, emits, True, 3) == 3
    assert emits.out == [(["t", 0, o, b"k", f"v{o}".encode()], ("t", 0, o), DEFAULT_STREAM) for o in range(3)]
    assert ms[("t", 0)].pending == {o: rec(0, o) for o in range(3)}
    assert len(waiting) == 2


def test_committed_emitted_acked_and_unowned_records_are_dropped_not_emitted() -> None:
    ms = managers(2)
    m = ms[("t", 0)]
    m.on_emit(3, rec(0, 3))  # in flight
    m.on_emit(4, rec(0, 4))
    m.on_ack(4)  # acked, not committed yet
    waiting: deque[Any] = deque([rec(0, 1), rec(0, 3), rec(0, 4), rec(7, 0), rec(0, 5)])
    emits = Emits()
    assert emit_waiting(waiting, ms, emits, True, 10) == 1
    assert [e[1] for e in emits.out] == [("t", 0, 5)]
    assert not waiting


def test_untracked_emits_carry_no_message_id_and_keep_nothing() -> None:
    ms = managers(0)
    emits = Emits()
    assert emit_waiting(deque([rec(0, 0), rec(0, 0)]), ms, emits, False, 10) == 2
    assert [e[1] for e in emits.out] == [None, None]
    assert ms[("t", 0)].pending == {}


def test_ack_ends_a_pending_offset_and_ignores_what_is_not_tracked() -> None:
    ms = managers(0)
    m = ms[("t", 0)]
    m.on_emit(0, rec(0, 0))
    m.on_emit(1, rec(0, 1))
    assert m.on_fail(1, 0.0) == "retry"
    stats = KafkaSpoutStats()
    ack_message(ms, stats, ("t", 0, 0))
    ack_message(ms, stats, ("t", 0, 1))  # a failed offset acked on its retry: no longer scheduled
    assert (m.pending, m.fails, m.scheduled, m.uncommitted) == ({}, {}, {}, 2)
    assert (stats.acked, stats.ignored_acks) == (2, 0)
    ack_message(ms, stats, ("t", 0, 0))  # twice
    ack_message(ms, stats, ("t", 5, 0))  # a partition no longer ours
    ack_message(ms, stats, ("t", 5, [7, 8]))  # a tree of a partition no longer ours
    assert (stats.acked, stats.ignored_acks) == (2, 4)
    assert m.ignored == 1
    assert m.commit_offset() == 2


def test_trees_hold_consecutive_records_of_one_partition_up_to_its_tree_size_and_the_budget() -> None:
    ms = {("t", p): PartitionOffsets(0, 1000, NO_BACKOFF, records_per_tree=3) for p in (0, 1)}
    waiting: deque[Any] = deque([rec(0, 0), rec(0, 1), rec(0, 1), rec(0, 2), rec(0, 3), rec(0, 4), rec(1, 0),
                                 rec(9, 0), rec(0, 5), rec(0, 6)])  # offset 1 fetched twice: emitted once
    emits = Emits()
    assert emit_waiting_trees(waiting, ms, emits, 7) == 7
    assert [(e[1], len(e[0])) for e in emits.out] == [
        (("t", 0, [0, 1, 2]), 3), (("t", 0, [3, 4]), 2), (("t", 1, [0]), 1), (("t", 0, [5]), 1)]
    assert emits.out[0][0][2] == ["t", 0, 2, b"k", b"v2"]
    assert ms[("t", 0)].pending == {}
    assert {first: offsets for first, (offsets, _) in ms[("t", 0)].trees.items()} == {0: [0, 1, 2], 3: [3, 4], 5: [5]}
    assert ms[("t", 0)].trees[3][1] == [rec(0, 3), rec(0, 4)]
    assert ms[("t", 0)].emitted_to == 6 and ms[("t", 1)].emitted_to == 1
    assert list(waiting) == [rec(0, 6)]


def test_a_failed_tree_halves_the_tree_size_and_its_records_are_due_alone_at_once() -> None:
    m = PartitionOffsets(0, 1000, NO_BACKOFF, records_per_tree=8)
    for o in range(4):
        m.on_emit(o, rec(0, o))
    assert m.on_tree_fail([0, 1, 2], now=5.0) == 3
    assert m.tree_size == 4 and m.fails == {}
    assert m.due_retries(5.0) == [0, 1, 2]
    assert m.on_tree_ack([3]) == 1 and m.tree_size == 8
    m.on_emit(0)
    assert m.on_fail(0, 5.0) == "retry" and m.fails == {0: 1}  # alone again: its own failures count


def test_trees_drop_committed_emitted_and_acked_records() -> None:
    ms = {("t", 0): PartitionOffsets(5, 1000, NO_BACKOFF, records_per_tree=10)}
    m = ms[("t", 0)]
    m.on_emit(5, rec(0, 5))
    m.on_emit(6, rec(0, 6))  # in flight
    m.on_emit(7, rec(0, 7))
    m.on_ack(5)
    m.on_ack(7)  # acked, not committed yet
    emits = Emits()
    waiting: deque[Any] = deque(rec(0, o) for o in range(3, 10))  # fetched again from below the commit
    assert emit_waiting_trees(waiting, ms, emits, 100) == 2
    assert [e[1] for e in emits.out] == [("t", 0, [8, 9])]
    assert m.uncommitted == 5 and m.commit_offset() == 6
