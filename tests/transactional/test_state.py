"""Persisted transactional state: Storm's rotating-state test, reloading, and JSON normalisation."""

from __future__ import annotations

import pytest

from storm_py.transactional.state import (
    RotatingTransactionalState,
    TransactionalState,
    TransactionalStateError,
    json_value,
)
from tests.transactional.helpers import memory_state


def test_rotating_transactional_state():
    """Ports transactional_test.clj test-rotating-transactional-state: strict and non-strict ordering."""
    store = memory_state()
    state = TransactionalState.user_state(store, "id1")
    strict = RotatingTransactionalState(state, "strict", True)
    unstrict = RotatingTransactionalState(state, "unstrict", False)
    init = {"value": 10}

    def initializer(txid, last):
        return init["value"]

    assert strict.get_state(1, initializer) == 10
    assert strict.get_state(2, initializer) == 10
    init["value"] = 20
    assert strict.get_state(3, initializer) == 20
    assert strict.get_state(1, initializer) == 10

    with pytest.raises(TransactionalStateError):
        strict.get_state(5, initializer)
    assert strict.get_state(4, initializer) == 20
    assert len(state.list("strict")) == 4
    strict.cleanup_before(3)
    assert len(state.list("strict")) == 2

    assert strict.get_state_or_create(5, initializer) is None
    assert strict.get_state_or_create(5, initializer) == 20
    assert strict.get_state_or_create(6, initializer) is None
    strict.cleanup_before(6)
    assert len(state.list("strict")) == 1

    assert unstrict.get_state(10, initializer) == 20
    assert unstrict.get_state(20, initializer) == 20
    assert unstrict.get_state(12, initializer) is None
    assert unstrict.get_state(19, initializer) is None
    assert unstrict.get_state(12, initializer) is None
    assert unstrict.get_state(21, initializer) == 20


def test_strict_state_needs_txid_1_first():
    state = TransactionalState.coordinator_state(memory_state(), "t")
    strict = RotatingTransactionalState(state, "meta", True)
    with pytest.raises(TransactionalStateError, match="previous transaction"):
        strict.get_state(2, lambda t, last: 1)


def test_rotating_state_reloads_from_the_store():
    store = memory_state()
    state = TransactionalState.user_state(store, "t")
    rot = RotatingTransactionalState(state, "0")
    rot.get_state(3, lambda t, last: {"index": 0, "amt": 2})
    rot.get_state(4, lambda t, last: {"index": last["index"] + last["amt"], "amt": 1})
    rot.override_state(7, (1, 2))
    again = RotatingTransactionalState(TransactionalState.user_state(store, "t"), "0")
    assert again.txids() == [3, 4, 7]
    assert again.get_state(4, lambda t, last: None) == {"index": 2, "amt": 1}
    assert again.get_last_state() == [1, 2]  # what was cached is what reads back
    assert rot.get_last_state() == [1, 2]
    again.remove_state(7)
    assert again.get_last_state() == {"index": 2, "amt": 1}
    assert store.transactional_children("t", "user", "0") == ["3", "4"]


def test_metadata_must_be_json():
    assert json_value({"a": (1, 2)}) == {"a": [1, 2]}
    with pytest.raises(TransactionalStateError, match="JSON"):
        json_value(object())


def test_empty_transactional_id_is_rejected():
    with pytest.raises(TransactionalStateError):
        TransactionalState(memory_state(), "", "user")
