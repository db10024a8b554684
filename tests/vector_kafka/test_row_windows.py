"""The row-window core: the rows of batches in a window manager, batches done once every row expired, the
batches a window holds rows of, and a window's rows as runs of one batch each."""

from __future__ import annotations

from typing import Any

from storm_py.windowing.events import Activation, Expiry, Step
from storm_py.windowing.rows import BatchEntry, RowRef, add_rows, anchors, expire, runs
from storm_py.windowing.spec import (
    LENGTH_COUNT,
    LENGTH_DURATION,
    MAX_LAG,
    SLIDING_COUNT,
    SLIDING_DURATION,
    WindowSpec,
)


def spec(event_time: bool = False, **conf: Any) -> WindowSpec:
    return WindowSpec.from_conf(conf, event_time=event_time)


def windows(steps: list[Step[RowRef]]) -> list[list[tuple[str, int]]]:
    return [[(r.entry.token, r.index) for r in s.values] for s in steps if isinstance(s, Activation)]


def acked(steps: list[Step[RowRef]]) -> list[Any]:
    return [token for s in steps if isinstance(s, Expiry) for token in expire(s.values)]


def test_a_tumbling_count_window_counts_rows_and_a_batch_is_done_once_all_its_rows_left():
    manager = spec(**{LENGTH_COUNT: 3, SLIDING_COUNT: 3}).manager()
    a, b, c = BatchEntry("a", None, 2), BatchEntry("b", None, 4), BatchEntry("c", None, 3)
    steps: list[Step[RowRef]] = []
    for entry in (a, b, c):
        out, late = add_rows(manager, entry, [0] * entry.remaining)
        assert late == []
        steps += out
    # rows of one batch fall in different windows
    assert windows(steps) == [[("a", 0), ("a", 1), ("b", 0)], [("b", 1), ("b", 2), ("b", 3)],
                              [("c", 0), ("c", 1), ("c", 2)]]
    assert acked(steps) == ["a", "b"]  # c's rows are still in the last window
    assert a.remaining == b.remaining == 0 and c.remaining == 3


def test_a_sliding_window_keeps_a_batch_until_its_last_row_slid_out():
    manager = spec(**{LENGTH_COUNT: 4, SLIDING_COUNT: 2}).manager()
    entries = [BatchEntry(n, None, 2) for n in "abcd"]
    steps: list[Step[RowRef]] = []
    for e in entries:
        steps += add_rows(manager, e, [0, 0])[0]
    assert [anchors(w.values) for w in steps if isinstance(w, Activation)] == [["a"], ["a", "b"], ["b", "c"],
                                                                             ["c", "d"]]
    assert acked(steps) == ["a", "b"]


def test_event_time_rows_go_to_the_windows_of_their_timestamps_and_late_rows_are_gone_at_once():
    manager = spec(event_time=True, **{LENGTH_DURATION: 10, SLIDING_DURATION: 10, MAX_LAG: 15}).manager()
    first = BatchEntry("first", None, 4)
    steps, late = add_rows(manager, first, [1, 15, 3, 12])
    assert (steps, late) == ([], [])
    steps = manager.add_watermark(20)
    assert windows(steps) == [[("first", 0), ("first", 2)], [("first", 1), ("first", 3)]]
    assert acked(steps) == []  # the second window's rows have not expired yet
    second = BatchEntry("second", None, 3)
    steps, late = add_rows(manager, second, [25, 4, 19], late_before=20)
    assert late == [1, 2] and second.remaining == 1
    steps = manager.add_watermark(40)
    assert windows(steps) == [[("second", 0)]]
    assert acked(steps) == ["first", "second"]


def test_all_rows_late_leaves_the_batch_with_nothing_to_wait_for():
    manager = spec(event_time=True, **{LENGTH_DURATION: 10, SLIDING_DURATION: 10}).manager()
    entry = BatchEntry("x", None, 2)
    assert add_rows(manager, entry, [1, 2], late_before=5) == ([], [0, 1])
    assert entry.remaining == 0


def test_runs_cut_a_window_into_slices_of_consecutive_rows():
    a, b = BatchEntry("a", None, 5), BatchEntry("b", None, 5)
    refs = [RowRef(a, 1), RowRef(a, 2), RowRef(b, 0), RowRef(a, 4), RowRef(a, 5), RowRef(b, 2)]
    assert [(e.token, s, t) for e, s, t in runs(refs)] == [("a", 1, 3), ("b", 0, 1), ("a", 4, 6), ("b", 2, 3)]
    assert anchors(refs) == ["a", "b"]
    assert [(s, t) for _, s, t in runs([RowRef(a, 0), RowRef(a, 2), RowRef(a, 3)])] == [(0, 1), (2, 4)]
    assert runs([]) == []
