"""The pure cores of exactly_once: the coordinator's decisions, a spout task's steps, a bolt task's alignment."""

from __future__ import annotations

from storm_py.stateful.exactly_once.aligned_bolt import DROP, HOLD, RUN, Alignment
from storm_py.stateful.exactly_once.coordinator import (
    COMMITTED,
    INITIAL,
    PREPARING,
    RESTARTING,
    ExactlyOnceCoordinator,
    Published,
    Report,
    SpoutView,
)


def publish(core: ExactlyOnceCoordinator, reports: dict[int, Report], now: float) -> Published | None:
    decision = core.decide(reports, now)
    if decision is not None:
        core.published(decision, now)
    return decision


def test_coordinator_restarts_first_then_prepares_and_commits_when_every_spout_reports():
    core = ExactlyOnceCoordinator(Published(4, PREPARING, 2, 3), 1.0, 30.0, now=0.0)
    # opened with txid 4 only prepared: restart generation 3 from the last committed txid, 3
    assert publish(core, {}, 0.0) == Published(3, RESTARTING, 3, 3)
    assert publish(core, {0: Report(restarted=3), 1: Report(restarted=2)}, 0.1) is None
    assert publish(core, {0: Report(restarted=3), 1: Report(restarted=3)}, 0.2) == Published(3, COMMITTED, 3, 3)
    assert publish(core, {}, 0.3) == Published(4, PREPARING, 3, 3)
    assert publish(core, {0: Report(prepared=4), 1: Report(prepared=3)}, 0.4) is None
    assert publish(core, {0: Report(prepared=4), 1: Report(prepared=4)}, 0.5) == Published(4, COMMITTED, 3, 4)
    assert core.committed_at == 0.5
    assert publish(core, {}, 1.2) is None  # the interval runs from the last prepare
    assert publish(core, {}, 1.31) == Published(5, PREPARING, 3, 4)


def test_coordinator_restarts_on_a_reported_failure_and_on_a_stuck_phase():
    core = ExactlyOnceCoordinator(INITIAL, 1.0, 30.0, now=0.0)
    publish(core, {}, 0.0)
    publish(core, {0: Report(restarted=1)}, 0.0)
    assert publish(core, {0: Report(restarted=1)}, 0.0) == Published(0, PREPARING, 1, -1)
    assert publish(core, {0: Report(restarted=1, failed=1)}, 0.1) == Published(-1, RESTARTING, 2, -1)
    assert publish(core, {0: Report(restarted=1, failed=1)}, 0.2) is None  # an old failure: no new restart
    assert publish(core, {0: Report(restarted=1, failed=1)}, 30.3) == Published(-1, RESTARTING, 3, -1)


def test_coordinator_retries_a_decision_it_could_not_save_after_a_pause():
    core = ExactlyOnceCoordinator(INITIAL, 1.0, 30.0, now=0.0)
    assert core.decide({}, 0.0) == Published(-1, RESTARTING, 1, -1)
    core.publish_failed(0.0)
    assert core.decide({}, 0.05) is None
    assert core.decide({}, 0.1) == Published(-1, RESTARTING, 1, -1)


def test_spout_view_restarts_prepares_commits_and_asks_for_a_restart_when_it_joins_alone():
    view = SpoutView()
    joined = view.step(Published(5, COMMITTED, 2, 5))
    assert joined.request_restart and not joined.restart
    assert view.step(Published(5, COMMITTED, 2, 5)).request_restart is False  # asked once per generation
    step = view.step(Published(5, RESTARTING, 3, 5))
    assert step.restart and step.commit is None and view.generation == 3 and view.prepared == 5
    assert view.step(Published(6, PREPARING, 3, 5)).prepare == 6
    assert view.step(Published(6, PREPARING, 3, 5)).prepare is None  # once
    assert view.step(Published(6, COMMITTED, 3, 6)).commit == 6
    view.step(Published(7, PREPARING, 3, 6))
    step = view.step(Published(7, RESTARTING, 4, 7))  # txid 7 was decided before the restart: commit it first
    assert step.commit == 7 and step.restart


def test_alignment_holds_the_channels_that_delivered_the_barrier_and_fences_after_a_restart():
    a = Alignment(frozenset({1, 2, 3}))
    assert a.data(1) == DROP  # not initialised by a restart marker yet
    assert a.arrive(1, 0, 1) == "fail"
    assert a.restart(1, 1) is True
    assert a.data(1) == RUN and a.data(2) == DROP  # channel 2's data before its marker is stale
    assert a.restart(2, 1) is False and a.restart(3, 1) is False
    assert a.arrive(1, 0, 1) == "wait"
    assert a.data(1) == HOLD and a.data(2) == RUN
    assert a.arrive(2, 0, 1) == "wait"
    assert a.arrive(3, 0, 1) == "prepare"
    assert a.data(1) == RUN
    assert a.arrive(1, 1, 0) == "fail"  # a barrier of an old generation
    a.broken = True
    assert a.arrive(1, 1, 1) == "fail"
    assert a.restart(3, 2) is True and not a.broken


def test_aligned_executor_holds_until_aligned_prepares_and_fences_after_a_restart():
    from storm_py import KeyValueState
    from storm_py.stateful.exactly_once.aligned_bolt import AlignedBoltExecutor
    from storm_py.stateful.exactly_once.coordinator import BARRIER_STREAM_ID
    from storm_py.testing import test_tuple
    from tests.unit.test_stateful_executors import Counter, Recorder, context

    def marker(action, txid, gen, committed, task):
        return test_tuple([txid, action, gen, committed], component="words", stream=BARRIER_STREAM_ID,
                          fields=["txid", "action", "generation", "committed"], task=task)

    def word(w, task):
        return test_tuple([w], component="words", fields=["word"], task=task)

    ex = AlignedBoltExecutor(Counter(), ["words"], stateful=True)
    rec = Recorder()
    ex.prepare({}, context(sources={"words": [2, 3]}), rec)
    state = KeyValueState()
    ex.state = state
    ex.execute(word("a", 2))  # before any restart marker: dropped
    ex.execute(marker("RESTART", -1, 1, -1, 2))
    assert rec.take() == [("ack", ["a"]), ("emit", (BARRIER_STREAM_ID, [-1, "RESTART", 1, -1])),
                          ("ack", [-1, "RESTART", 1, -1])]
    ex.execute(word("b", 3))  # channel 3 is fenced until its own marker
    ex.execute(marker("RESTART", -1, 1, -1, 3))
    ex.execute(word("c", 3))
    assert dict(state) == {"c": 1}
    ex.execute(marker("PREPARE", 0, 1, -1, 2))
    ex.execute(word("d", 2))  # channel 2 delivered barrier 0: held
    assert state.get("d") is None
    rec.take()
    ex.execute(marker("PREPARE", 0, 1, -1, 3))
    assert state.prepared_txid() == 0 and state.get("d") == 1  # prepared, then the held input ran
    assert rec.take()[:2] == [("emit", (BARRIER_STREAM_ID, [0, "PREPARE", 1, -1])), ("ack", [0, "PREPARE", 1, -1])]
    ex.execute(marker("PREPARE", 1, 1, 0, 2))
    ex.execute(marker("PREPARE", 1, 1, 0, 3))  # barrier 1 says 0 is committed: 0 is committed before 1 prepares
    assert state.committed_txid() == 0 and state.prepared_txid() == 1
    ex.alignment.broken = True  # as after a raise: the next barrier fails
    ex.execute(marker("PREPARE", 2, 1, 1, 2))
    assert rec.take()[-1] == ("fail", [2, "PREPARE", 1, 1])
