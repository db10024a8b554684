"""The spout's pending map (storm_py/runtime/pending.py) on a fake clock: add, complete, reset, rotate(now)."""

from __future__ import annotations

import gc
from importlib.machinery import EXTENSION_SUFFIXES

from storm_py.runtime import pending as pending_module
from storm_py.runtime.pending import PendingEntry, PendingMap

TIMEOUT = 30.0


def seen(entry: PendingEntry | None) -> tuple[object, ...] | None:
    """A pending entry with its stamp's time in place of the stamp."""
    if entry is None:
        return None
    return entry.task, entry.msg_id, entry.stamp.at, entry.size


def seen_all(entries: dict[int, PendingEntry]) -> dict[int, tuple[object, ...] | None]:
    return {root: seen(e) for root, e in entries.items()}


def test_a_completed_tuple_leaves_the_map_with_its_entry() -> None:
    pending = PendingMap(TIMEOUT, now=100.0)
    pending.add(7, task=3, msg_id="m7", now=100.5)
    assert 7 in pending and len(pending) == 1
    assert seen(pending.complete(7)) == (3, "m7", 100.5, 1)
    assert 7 not in pending and len(pending) == 0
    assert pending.complete(7) is None  # a second answer for the same tree is ignored


def test_compiled_a_pending_entry_is_never_in_the_collectors_walks() -> None:
    """Under a stateful bolt a checkpoint interval of trees stays open: the collector must neither walk them nor
    count them toward its threshold."""
    pending = PendingMap(TIMEOUT, now=0.0)
    pending.add(7, task=3, msg_id=12345, now=0.5)
    (entry,) = pending.buckets()[0].values()
    compiled = pending_module.__file__.endswith(tuple(EXTENSION_SUFFIXES))
    assert gc.is_tracked(entry) is not compiled  # interpreted, the entry is an ordinary object
    assert gc.is_tracked(entry.stamp) is not compiled


def test_rotate_does_nothing_before_it_is_due() -> None:
    pending = PendingMap(TIMEOUT, now=0.0)
    pending.add(1, 0, "a", 0.0)
    assert pending.next_rotate == TIMEOUT
    assert pending.rotate(TIMEOUT - 0.001) == {}
    assert pending.rotate(TIMEOUT) == {}  # first rotation: the tuple moves to the older bucket
    assert 1 in pending
    assert pending.next_rotate == 2 * TIMEOUT


def test_a_tuple_expires_on_the_second_rotation_after_it_was_added() -> None:
    pending = PendingMap(TIMEOUT, now=0.0)
    pending.add(1, 0, "a", 0.0)
    pending.rotate(30.0)
    pending.add(2, 0, "b", 31.0)
    expired = pending.rotate(60.0)
    assert seen_all(expired) == {1: (0, "a", 0.0, 1)}
    assert 1 not in pending and 2 in pending
    assert seen_all(pending.rotate(90.0)) == {2: (0, "b", 31.0, 1)}
    assert len(pending) == 0


def test_a_tuple_completed_from_the_older_bucket_does_not_expire() -> None:
    pending = PendingMap(TIMEOUT, now=0.0)
    pending.add(1, 0, "a", 0.0)
    pending.rotate(30.0)
    assert seen(pending.complete(1)) == (0, "a", 0.0, 1)
    assert pending.rotate(60.0) == {}


def test_reset_moves_a_tuple_back_to_the_newer_bucket() -> None:
    pending = PendingMap(TIMEOUT, now=0.0)
    pending.add(1, 0, "a", 0.0)
    pending.rotate(30.0)
    assert pending.reset(1) is True
    assert pending.rotate(60.0) == {}  # would have expired without the reset
    assert seen_all(pending.rotate(90.0)) == {1: (0, "a", 0.0, 1)}
    assert pending.reset(1) is False  # gone


def test_rotation_is_late_not_lost_when_the_loop_was_busy() -> None:
    pending = PendingMap(TIMEOUT, now=0.0)
    pending.add(1, 0, "a", 0.0)
    pending.rotate(45.0)  # due at 30, seen at 45: the next one is due a timeout later
    assert pending.next_rotate == 75.0
    assert pending.rotate(74.0) == {}
    assert seen_all(pending.rotate(75.0)) == {1: (0, "a", 0.0, 1)}


def test_without_a_timeout_nothing_ever_expires() -> None:
    pending = PendingMap(None, now=0.0)
    pending.add(1, 0, "a", 0.0)
    for t in (1e3, 1e6, 1e9):
        assert pending.rotate(t) == {}
    assert 1 in pending
