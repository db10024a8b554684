"""Gathering tuples into batches by size and by linger (the pure core, driven with ``now``)."""

from __future__ import annotations

import pytest

from storm_py.vector.gathering import Gatherer


def test_a_full_batch_is_handed_out_at_once() -> None:
    g: Gatherer[str, int] = Gatherer(3, 0.010)
    assert g.add("a", 1, 0.0) is None
    assert g.add("b", 10, 0.0) is None
    assert g.add("a", 2, 0.001) is None
    assert g.add("a", 3, 0.002) == [1, 2, 3]
    assert len(g) == 1 and g.add("a", 4, 0.003) is None  # a new batch of "a" starts


def test_a_batch_lingers_from_its_first_tuple() -> None:
    g: Gatherer[str, int] = Gatherer(100, 0.010)
    g.add("a", 1, 1.000)
    g.add("b", 2, 1.004)
    g.add("a", 3, 1.008)
    assert g.next_due() == pytest.approx(1.010)
    assert g.due(1.0099) == []
    assert g.due(1.010) == [("a", [1, 3])]
    assert g.next_due() == pytest.approx(1.014)
    assert g.due(1.020) == [("b", [2])]
    assert g.next_due() is None and len(g) == 0


def test_due_batches_come_oldest_first_and_bad_settings_are_refused() -> None:
    g: Gatherer[str, int] = Gatherer(100, 0.0)
    g.add("late", 1, 2.0)
    g.add("early", 2, 1.0)
    assert [k for k, _ in g.due(3.0)] == ["early", "late"]
    with pytest.raises(ValueError, match="at least one row"):
        Gatherer(0, 0.01)
    with pytest.raises(ValueError, match="negative"):
        Gatherer(1, -1)
