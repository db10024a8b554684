"""This module owns nimbus's pure decisions about the cluster's health: which slots are dead, where executors go.

Nothing here reads the cluster state or a clock: :class:`SlotMonitor` is fed supervisor records, assignments,
heartbeats and the time, and answers which slots are dead (Storm's ``nimbus.task.timeout.secs``,
``nimbus.task.launch.secs``, ``nimbus.supervisor.timeout.secs``); :func:`plan_assignment` answers where a
topology's executors run, keeping what may stay and avoiding dead slots.  :class:`~storm_py.nimbus.core.Nimbus`
reads and writes the state around them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from storm_py.cluster_state.models import Assignment, StormBase, SupervisorInfo, WorkerHeartbeat
from storm_py.config.keys import setting
from storm_py.runtime.system_topology import layout_from_counts
from storm_py.scheduler import schedule_even

Slot = tuple[str, int]


@dataclass(frozen=True)
class Timeouts:
    """How long nimbus waits before it holds silence against a worker or a supervisor (seconds)."""

    task: float = 30.0  # nimbus.task.timeout.secs: a heartbeat that stopped changing
    launch: float = 120.0  # nimbus.task.launch.secs: no heartbeat since the executors were assigned
    supervisor: float = 60.0  # nimbus.supervisor.timeout.secs: a supervisor record that stopped changing

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> Timeouts:
        """The timeouts a nimbus configuration gives."""
        return cls(
            task=float(setting(conf, "nimbus.task.timeout.secs")),
            launch=float(setting(conf, "nimbus.task.launch.secs")),
            supervisor=float(setting(conf, "nimbus.supervisor.timeout.secs")),
        )


class SlotMonitor:
    """Tracks when each worker's heartbeat last changed and decides which slots are dead.

    Heartbeat times are the workers' wall clocks, so they are only compared with each other: a slot is dead
    when its heartbeat has not changed for ``timeouts.task`` seconds of nimbus's own (monotonic) time.

    Args:
        timeouts: the three timeouts.
        watch_start: the wall time from which this nimbus watches the cluster.
    """

    def __init__(self, timeouts: Timeouts, watch_start: float) -> None:
        self.timeouts = timeouts
        self.watch_start = watch_start
        # (topology id, node, port) -> (last heartbeat time seen, nimbus time it was first seen)
        self._seen: dict[tuple[str, str, int], tuple[float, float]] = {}

    def reset(self, wall: float) -> None:
        """Start watching afresh at ``wall``: every worker and supervisor gets a full timeout from now on."""
        self._seen.clear()
        self.watch_start = wall

    def forget(self, topology_id: str) -> None:
        """Drop what is known of a removed topology."""
        for key in [k for k in self._seen if k[0] == topology_id]:
            del self._seen[key]

    def alive_slots(self, supervisors: Mapping[str, SupervisorInfo], wall: float) -> tuple[list[Slot], dict[str, str]]:
        """The slots of live supervisors (in their order) and each live supervisor's hostname.

        A supervisor is live while its record is younger than the supervisor timeout, counted from when this
        nimbus started watching at the earliest.
        """
        slots: list[Slot] = []
        hosts: dict[str, str] = {}
        for sid, info in supervisors.items():
            if wall - max(info.time_secs, self.watch_start) > self.timeouts.supervisor:
                continue
            hosts[sid] = info.hostname
            slots.extend((sid, p) for p in info.ports)
        return slots, hosts

    def dead_slots(
        self,
        topology_id: str,
        assignment: Assignment,
        beats: Mapping[Slot, WorkerHeartbeat],
        alive: Collection[Slot],
        wall: float,
        now: float,
    ) -> set[Slot]:
        """The assigned slots whose executors must move.

        Args:
            topology_id: the topology.
            assignment: its current assignment.
            beats: its workers' heartbeats by slot.
            alive: the slots of live supervisors.
            wall: nimbus's wall time (compared with launch times and supervisor records).
            now: nimbus's monotonic time (measures how long a heartbeat has not changed).
        """
        # Right after this nimbus started watching (it just led or reconnected), a missing supervisor may only
        # be re-registering: it gets the supervisor timeout before its slots count as dead.
        settling = wall - self.watch_start < self.timeouts.supervisor
        dead: set[Slot] = set()
        for slot, executors in assignment.slots().items():
            if slot not in alive:
                if not settling:
                    dead.add(slot)
                continue
            key = (topology_id, slot[0], slot[1])
            hb = beats.get(slot)
            if hb is None:
                started = min(assignment.executor_start_time_secs.get(e, wall) for e in executors)
                if wall - started > self.timeouts.launch:
                    dead.add(slot)
                continue
            seen = self._seen.get(key)
            if seen is None or seen[0] != hb.time_secs:
                self._seen[key] = (hb.time_secs, now)
            elif now - seen[1] > self.timeouts.task:
                dead.add(slot)
        for slot in dead:
            self._seen.pop((topology_id, slot[0], slot[1]), None)
        return dead


def executors_of(base: StormBase) -> list[tuple[str, int, int]]:
    """The topology's executors as (component, start task, end task), from its task and executor counts."""
    counts = {c: (base.component_tasks.get(c, n), n) for c, n in base.component_executors.items()}
    return [(c, s, e) for c, (s, e) in layout_from_counts(counts).all_executors()]


def plan_assignment(
    base: StormBase,
    current: Assignment | None,
    slots: list[Slot],
    hosts: Mapping[str, str],
    used: Collection[Slot],
    wall: float,
    *,
    fresh: bool = False,
    dead: Collection[Slot] = frozenset(),
) -> Assignment | None:
    """Where the topology's executors run next; None when no slot is left to run them.

    Args:
        base: the topology (its executor and task counts, its number of workers).
        current: its assignment now (None before the first).
        slots: the slots of live supervisors.
        hosts: each live supervisor's hostname.
        used: slots other topologies hold.
        wall: the time recorded as the start of executors that move.
        fresh: schedule from scratch (submit, rebalance) instead of keeping executors where they are.
        dead: slots to leave (their executors move).
    """
    executors = executors_of(base)
    by_range = {(s, e): c for c, s, e in executors}
    alive = [s for s in slots if s not in dead]
    free = [s for s in alive if s not in used]
    existing = None
    if current is not None and not fresh:
        existing = {(by_range[r], r[0], r[1]): slot for r, slot in current.executor_node_port.items() if r in by_range}
    placed = schedule_even(executors, base.num_workers, free, existing, alive_slots=alive)
    return assignment_of(placed, current, hosts, wall, fresh)


def assignment_of(
    placed: Mapping[tuple[str, int, int], Slot],
    current: Assignment | None,
    hosts: Mapping[str, str],
    wall: float,
    fresh: bool = False,
) -> Assignment | None:
    """The assignment of a placement (None when empty); executors that stay keep their start times."""
    if not placed:
        return None
    start_times: dict[tuple[int, int], float] = {}
    for (_, s, e), slot in placed.items():
        kept = current is not None and not fresh and current.executor_node_port.get((s, e)) == slot
        start_times[(s, e)] = current.executor_start_time_secs.get((s, e), wall) if kept and current else wall
    return Assignment(
        node_host={node: hosts.get(node, node) for node, _ in placed.values()},
        executor_node_port={(s, e): slot for (_, s, e), slot in placed.items()},
        executor_start_time_secs=start_times,
    )
