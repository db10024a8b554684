"""The stateful windowed bolt's decisions (Storm's StatefulWindowedBoltExecutor and PersistentWindowedBoltExecutor
expectations): saved marks, a replay that skips what was evaluated, held acks, rollback after a raising window,
the persisted window, and the bad input; a recording collector instead of a cluster."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py import BaseStatefulWindowedBolt, Count, Duration, KeyValueState, TopologyBuilder
from storm_py.clock import SimulatedClock
from storm_py.stateful.at_least_once.bolt_wrappers import StatefulBoltExecutor
from storm_py.stateful.at_least_once.checkpoint import CHECKPOINT_COMPONENT_ID, COMMIT, INITSTATE, PREPARE, ROLLBACK
from storm_py.stateful.state.key_value import MemoryStore
from storm_py.stateful.windowed_runner import (
    DROP,
    HOLD,
    LAST,
    MESSAGE_ID_FIELD,
    PROCESS,
    REPLAY,
    ReplayTracker,
    StatefulWindowedBolt,
)
from storm_py.testing import test_tuple
from tests.unit.test_stateful_executors import Recorder, checkpoint, context

SOURCE = (3, "numbers", "default")


class WindowSum(BaseStatefulWindowedBolt):
    """Adds each window's new values to ``total`` and remembers every window it saw."""

    raise_on: int | None = None

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.windows: list[list[int]] = []

    def init_state(self, state):
        self.state = state

    def execute(self, window):
        values = [t.values[1] for t in window.get()]
        self.windows.append(values)
        if self.raise_on in values:
            self.raise_on = None
            raise RuntimeError("window sum broke")
        self.state.put("total", self.state.get("total", 0) + sum(t.values[1] for t in window.get_new()))
        self.collector.emit([sum(values)])

    def declare_output_fields(self, declarer):
        declarer.declare(["sum"])


def number(i: int):
    return test_tuple([i, i], component="numbers", fields=["id", "value"], task=3)


def run(persistent: bool = False, window_store: MemoryStore | None = None, state_store: MemoryStore | None = None,
        partition: int | None = None):
    bolt = WindowSum().with_tumbling_window(Count.of(3))
    if persistent:
        bolt.with_persistence()
    else:
        bolt.with_message_id_field("id")
    if partition is not None:
        bolt.with_max_events_in_memory(partition)
    adapter = bolt.topology_bolt()
    ex = StatefulBoltExecutor(adapter, [CHECKPOINT_COMPONENT_ID])
    rec = Recorder()
    ctx = context(sources={"numbers": [3]})
    conf = dict(adapter.get_component_configuration() or {})
    window_state = KeyValueState(window_store or MemoryStore())
    # the executor prepares the adapter with the tracking collector; the adapter takes its window state here
    adapter.prepare = lambda c, cx, col: adapter.prepare_with_window_state(c, cx, col, window_state)  # type: ignore
    ex.prepare_with_state(conf, ctx, rec, KeyValueState(state_store or MemoryStore()))
    ex.execute(checkpoint(0, INITSTATE))
    rec.take()
    return ex, adapter, bolt, rec, window_state


def feed(ex: StatefulBoltExecutor, ids: range) -> None:
    for i in ids:
        ex.execute(number(i))


def numbers(log: list[tuple[str, Any]], action: str) -> list[int]:
    """The numbers (not checkpoints) ``action`` was done to, in order."""
    return [v[0] for what, v in log if what == action and isinstance(v, list) and len(v) == 2 and v[0] == v[1]]


def test_tracker_drops_expired_replays_evaluated_and_holds_new_tuples_until_every_input_recovered():
    other = (4, "numbers", "default")
    tracker = ReplayTracker()
    tracker.restore({SOURCE: (3, 6), other: (None, 2)})
    assert tracker.decide(SOURCE, 2) == DROP
    assert tracker.decide(SOURCE, 4) == REPLAY
    assert tracker.decide(SOURCE, 6) == LAST
    tracker.recovered(SOURCE)
    assert tracker.decide(SOURCE, 7) == HOLD  # the other input still replays
    assert tracker.decide(other, 5) == PROCESS  # beyond its last evaluated one: recovered, nothing else recovers
    assert not tracker.is_recovering()
    tracker.update([(SOURCE, 6)], [(SOURCE, 9), (SOURCE, 8)])
    assert tracker.saved()[SOURCE] == (6, 9)


def test_marks_are_saved_with_the_checkpoint_and_expired_tuples_acked_when_it_commits():
    ex, _, bolt, rec, window_state = run()
    feed(ex, range(1, 8))
    assert bolt.windows == [[1, 2, 3], [4, 5, 6]]
    assert not numbers(rec.log, "ack")  # expired tuples' acks are held
    ex.execute(checkpoint(0, PREPARE))
    ex.execute(checkpoint(0, COMMIT))
    assert numbers(rec.take(), "ack") == [1, 2, 3]
    assert window_state.get(list(SOURCE)) == [3, 6]
    assert bolt.state.get("total") == 21


def test_a_replay_skips_the_windows_evaluated_before_the_failure():
    window_store, state_store = MemoryStore(), MemoryStore()
    ex, _, _, _, _ = run(window_store=window_store, state_store=state_store)
    feed(ex, range(1, 8))
    ex.execute(checkpoint(0, PREPARE))
    ex.execute(checkpoint(0, COMMIT))
    # the task restarts: everything not acked (4..7) is replayed, 1..3 may come again too
    ex2, _, bolt2, rec2, _ = run(window_store=window_store, state_store=state_store)
    assert bolt2.state.get("total") == 21
    feed(ex2, range(1, 10))
    assert bolt2.windows == [[7, 8, 9]]  # [4, 5, 6] was evaluated before: not again
    assert bolt2.state.get("total") == 45  # every number once
    ex2.execute(checkpoint(1, PREPARE))
    ex2.execute(checkpoint(1, COMMIT))
    # 1..3 expired before the failure (acked, dropped), 4..6 expired at the window [7, 8, 9]
    assert numbers(rec2.take(), "ack") == [1, 2, 3, 4, 5, 6]


def test_a_window_that_raises_fails_the_next_checkpoint_and_the_rollback_replays_from_the_last_commit():
    ex, adapter, bolt, rec, _ = run()
    feed(ex, range(1, 4))
    ex.execute(checkpoint(0, PREPARE))
    ex.execute(checkpoint(0, COMMIT))
    rec.take()
    bolt.raise_on = 5
    feed(ex, range(4, 8))
    assert ("error", "window sum broke") in rec.take()
    ex.execute(checkpoint(1, PREPARE))
    log = rec.take()
    assert ("fail", [1, PREPARE]) in log  # the checkpoint failed: the topology recovers
    assert any(what == "error" and "raised in execute" in str(v) for what, v in log)
    ex.execute(checkpoint(1, ROLLBACK))
    # the held acks (1..3 expired since the commit) and what is in the window (4..7) fail: all is replayed
    assert sorted(numbers(rec.take(), "fail")) == [1, 2, 3, 4, 5, 6, 7]
    assert bolt.state.get("total") == 6  # the committed state
    ex.execute(checkpoint(1, INITSTATE))
    evaluated = len(bolt.windows)
    feed(ex, range(1, 10))  # the replay: [1, 2, 3] was evaluated in the committed state, so not again
    assert bolt.windows[evaluated:] == [[4, 5, 6], [7, 8, 9]]
    assert bolt.state.get("total") == 45
    assert adapter.broken is None


def test_a_persisted_window_is_restored_with_what_the_last_evaluation_saw():
    window_store, state_store = MemoryStore(), MemoryStore()
    ex, _, bolt, rec, window_state = run(persistent=True, window_store=window_store, state_store=state_store,
                                         partition=2)
    feed(ex, range(1, 5))
    assert bolt.windows == [[1, 2, 3]]
    ex.execute(checkpoint(0, PREPARE))
    ex.execute(checkpoint(0, COMMIT))
    assert sorted(numbers(rec.take(), "ack")) == [1, 2, 3, 4]  # all, at commit
    assert window_state.get("$partitions") == 2  # 4 events in partitions of 2
    ex2, _, bolt2, rec2, _ = run(persistent=True, window_store=window_store, state_store=state_store, partition=2)
    feed(ex2, range(5, 7))
    assert bolt2.windows == [[4, 5, 6]]
    assert bolt2.state.get("total") == 21  # 4 is new in this window, 1..3 were counted before
    assert not numbers(rec2.log, "ack")  # inputs are acked when their checkpoint commits


def test_a_persisted_processing_time_window_saves_epoch_ms_and_restores_on_another_clock():
    """Saved events carry epoch ms (the clock's wall time at arrival), so a worker whose monotonic clock has another
    origin (another host) restores them at the right distance from its own now."""
    window_store, state_store = MemoryStore(), MemoryStore()

    def start(clock: SimulatedClock):
        bolt = WindowSum().with_window(Duration.seconds(10)).with_persistence()
        adapter = bolt.topology_bolt()
        ex = StatefulBoltExecutor(adapter, [CHECKPOINT_COMPONENT_ID])
        ctx = context(sources={"numbers": [3]})
        ctx.clock = clock
        window_state = KeyValueState(window_store)
        adapter.prepare = lambda c, cx, col: adapter.prepare_with_window_state(c, cx, col, window_state)  # type: ignore
        ex.prepare_with_state(dict(adapter.get_component_configuration() or {}), ctx, Recorder(),
                              KeyValueState(state_store))
        ex.execute(checkpoint(0, INITSTATE))
        return ex, bolt, window_state

    first = SimulatedClock(start=100.0)
    ex, bolt, window_state = start(first)
    ex.execute(number(1))  # at t = 100 s of this clock
    assert bolt.windows == [[1]]
    arrived = round(first.wall() * 1000)
    first.advance(1.0)
    ex.execute(checkpoint(0, PREPARE))
    ex.execute(checkpoint(0, COMMIT))
    (image,) = window_state.get(["$partitions", 0])
    assert image[5] == arrived  # the event's time, in epoch ms
    # another host: its monotonic clock reads 5 s when the wall clock reads what the first one did at 102 s
    second = SimulatedClock(start=5.0, wall_zero=first.wall_at(102.0) - 5.0)
    ex2, bolt2, _ = start(second)
    ex2.execute(number(2))  # 2 s after 1: both in the 10 s window
    assert bolt2.windows[-1] == [1, 2]
    second.advance(8.5)  # 10.5 s after 1, 8.5 s after 2: 1 has left
    ex2.execute(number(3))
    assert bolt2.windows[-1] == [2, 3]


def test_a_stateful_windowed_bolt_without_message_id_field_is_rejected_naming_the_key():
    builder = TopologyBuilder()
    builder.set_spout("numbers", _Spout())
    builder.set_bolt("sum", WindowSum().with_tumbling_window(Count.of(3))).shuffle_grouping("numbers")
    with pytest.raises(ValueError, match=MESSAGE_ID_FIELD.replace(".", r"\.") + ".*with_message_id_field"):
        builder.create_topology()
    builder = TopologyBuilder()
    builder.set_spout("numbers", _Spout())
    builder.set_bolt("sum", WindowSum().with_tumbling_window(Count.of(3)).with_persistence()).shuffle_grouping(
        "numbers")
    topo = builder.create_topology()  # a persisted window needs no message id
    assert CHECKPOINT_COMPONENT_ID in topo.spouts


def test_a_tuple_without_the_message_id_field_raises_naming_it():
    _, adapter, *_ = run()
    with pytest.raises(ValueError, match="no message id field 'id'"):
        adapter.execute(test_tuple([1], component="numbers", fields=["value"], task=3))
    with pytest.raises(ValueError, match="max events in memory"):
        WindowSum().with_max_events_in_memory(0)
    assert isinstance(adapter, StatefulWindowedBolt)


class _Spout:
    def open(self, conf, context, collector):
        pass

    def next_tuple(self):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(["id", "value"])
