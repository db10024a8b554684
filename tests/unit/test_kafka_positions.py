"""The Kafka spout's position under exactly_once: the next offset to emit per partition, saved and read back."""

from __future__ import annotations

import pytest

from storm_py.kafka.offsets import PartitionOffsets, RetryPolicy
from storm_py.kafka.positions import from_saved, positions, to_saved


def manager(fetched_to: int) -> PartitionOffsets:
    m = PartitionOffsets(0, 100, RetryPolicy())
    m.fetched_to = fetched_to
    return m


def test_the_first_waiting_record_is_the_position_else_the_fetch_position():
    managers = {("t", 0): manager(50), ("t", 1): manager(7)}
    waiting = [("t", 0, 42, None, b"x"), ("t", 0, 43, None, b"y"), ("u", 0, 1, None, b"z")]
    assert positions(managers, waiting) == {("t", 0): 42, ("t", 1): 7}
    saved = to_saved(positions(managers, waiting))
    assert saved == [["t", 0, 42], ["t", 1, 7]]
    assert from_saved(saved) == {("t", 0): 42, ("t", 1): 7}
    assert from_saved(None) == {}
    with pytest.raises(ValueError, match=r"\['t', '0', 4\] is not \[topic, partition, offset\]"):
        from_saved([["t", "0", 4]])


def test_a_restored_partition_not_assigned_yet_keeps_its_restored_position():
    restored = {("t", 0): 7, ("t", 1): 4}
    assert positions({}, [], restored) == restored  # a checkpoint before the spout looked up its partitions
    managers = {("t", 0): manager(50)}
    assert positions(managers, [("t", 0, 42, None, b"x")], restored) == {("t", 0): 42, ("t", 1): 4}
    assert positions(managers, []) == {("t", 0): 50}
