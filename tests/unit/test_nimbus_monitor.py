"""Nimbus's pure monitor: dead slots from heartbeats and supervisor records, and where executors go next."""

from __future__ import annotations

from storm_py.cluster_state.models import Assignment, StormBase, SupervisorInfo, WorkerHeartbeat
from storm_py.nimbus.monitor import SlotMonitor, Timeouts, plan_assignment

TIMEOUTS = Timeouts(task=30, launch=120, supervisor=60)
A, B = ("sup-a", 6700), ("sup-b", 6700)


def assignment(start: float = 0.0) -> Assignment:
    return Assignment(
        node_host={"sup-a": "host-a", "sup-b": "host-b"},
        executor_node_port={(1, 1): A, (2, 2): B},
        executor_start_time_secs={(1, 1): start, (2, 2): start},
    )


def beat(t: float) -> WorkerHeartbeat:
    return WorkerHeartbeat("t-1", [(1, 1)], time_secs=t)


def test_supervisors_whose_record_went_stale_lose_their_slots() -> None:
    m = SlotMonitor(TIMEOUTS, watch_start=0)
    sups = {"sup-a": SupervisorInfo("host-a", time_secs=100, ports=[6700, 6701]),
            "sup-b": SupervisorInfo("host-b", time_secs=50, ports=[6700])}
    slots, hosts = m.alive_slots(sups, wall=100)
    assert slots == [("sup-a", 6700), ("sup-a", 6701), ("sup-b", 6700)] and set(hosts) == {"sup-a", "sup-b"}
    slots, hosts = m.alive_slots(sups, wall=111)  # b last heard of 61 s ago
    assert slots == [("sup-a", 6700), ("sup-a", 6701)] and hosts == {"sup-a": "host-a"}


def test_a_heartbeat_that_stops_changing_kills_its_slot_after_the_task_timeout() -> None:
    m = SlotMonitor(TIMEOUTS, watch_start=-1000)
    beats = {A: beat(5), B: beat(5)}
    assert m.dead_slots("t-1", assignment(), beats, {A, B}, wall=10, now=0) == set()
    beats[B] = beat(40)  # B keeps beating, A is stuck at 5
    assert m.dead_slots("t-1", assignment(), beats, {A, B}, wall=40, now=30) == set()
    assert m.dead_slots("t-1", assignment(), beats, {A, B}, wall=41, now=30.5) == {A}


def test_a_worker_that_never_beats_is_dead_after_the_launch_timeout() -> None:
    m = SlotMonitor(TIMEOUTS, watch_start=-1000)
    assert m.dead_slots("t-1", assignment(start=0), {B: beat(1)}, {A, B}, wall=120, now=0) == set()
    assert m.dead_slots("t-1", assignment(start=0), {B: beat(1)}, {A, B}, wall=121, now=0) == {A}


def test_slots_of_a_vanished_supervisor_are_dead_once_nimbus_has_watched_long_enough() -> None:
    m = SlotMonitor(TIMEOUTS, watch_start=0)
    beats = {A: beat(1), B: beat(1)}
    assert m.dead_slots("t-1", assignment(), beats, {A}, wall=59, now=0) == set()  # settling: may re-register
    assert m.dead_slots("t-1", assignment(), beats, {A}, wall=61, now=0) == {B}


def test_reset_gives_every_worker_a_full_timeout_again() -> None:
    m = SlotMonitor(TIMEOUTS, watch_start=-1000)
    beats = {A: beat(5), B: beat(5)}
    m.dead_slots("t-1", assignment(), beats, {A, B}, wall=10, now=0)
    m.reset(wall=100)
    assert m.dead_slots("t-1", assignment(), beats, {A, B}, wall=100, now=31) == set()
    assert m.dead_slots("t-1", assignment(), beats, {A, B}, wall=170, now=62) == {A, B}


def base(workers: int = 2) -> StormBase:
    return StormBase(name="t", status="active", launch_time=0, num_workers=workers,
                     component_executors={"spout": 1, "bolt": 1}, component_tasks={"spout": 1, "bolt": 1})


def test_a_plan_spreads_over_supervisors_and_stamps_start_times() -> None:
    slots = [("sup-a", 6700), ("sup-a", 6701), ("sup-b", 6700)]
    plan = plan_assignment(base(), None, slots, {"sup-a": "host-a", "sup-b": "host-b"}, set(), wall=7)
    assert plan is not None
    assert set(plan.executor_node_port.values()) == {A, B}
    assert plan.node_host == {"sup-a": "host-a", "sup-b": "host-b"}
    assert set(plan.executor_start_time_secs.values()) == {7}


def test_a_reassignment_keeps_live_executors_and_their_start_times_and_avoids_dead_and_used_slots() -> None:
    slots = [A, B, ("sup-c", 6700), ("sup-d", 6700)]
    current = assignment(start=3)
    hosts = {"sup-a": "a", "sup-b": "b", "sup-c": "c", "sup-d": "d"}
    plan = plan_assignment(base(), current, slots, hosts, used={("sup-c", 6700)}, wall=50, dead={B})
    assert plan is not None
    moved = {r for r, s in plan.executor_node_port.items() if s != current.executor_node_port[r]}
    assert set(plan.executor_node_port.values()) == {A, ("sup-d", 6700)}
    assert all(plan.executor_start_time_secs[r] == (50 if r in moved else 3) for r in plan.executor_node_port)


def test_no_slot_left_gives_no_plan() -> None:
    assert plan_assignment(base(), assignment(), [A], {}, used=set(), wall=0, dead={A}) is None
