"""The supervisor's restarts: a dead worker is relaunched at once, workers that keep dying young back off."""

from __future__ import annotations

import pytest

from storm_py.clock import SimulatedClock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import Assignment
from storm_py.node.launch_report import launch_failures
from storm_py.supervisor.core import Supervisor
from storm_py.supervisor.slots import RestartBackoff

CONF = {
    "supervisor.worker.restart.min.uptime.secs": 10,
    "supervisor.worker.restart.backoff.secs": 1,
    "supervisor.worker.restart.backoff.max.secs": 8,
}


class FakeWorker:
    def __init__(self, topology_id: str, executors: list[tuple[int, int]]) -> None:
        self.topology_id = topology_id
        self.executors = executors
        self.dead = False

    @property
    def alive(self) -> bool:
        return not self.dead

    def refresh(self) -> bool:
        return True

    def stop(self) -> None:
        self.dead = True

    def silent_secs(self) -> float:
        return 0.0


class Launcher:
    def __init__(self) -> None:
        self.launches: list[float] = []
        self.workers: list[FakeWorker] = []
        self.broken = False
        self.clock: SimulatedClock | None = None

    def launch(self, supervisor_id, topology_id, port, executors):
        assert self.clock is not None
        self.launches.append(self.clock.now())
        if self.broken:
            raise RuntimeError("no such wheel")
        worker = FakeWorker(topology_id, executors)
        self.workers.append(worker)
        return worker


class Host:
    def __init__(self) -> None:
        self.clock = SimulatedClock()
        self.state = ClusterState(MemoryStorage(MemoryStore()), {})
        self.launcher = Launcher()
        self.launcher.clock = self.clock
        self.supervisor = Supervisor(CONF, self.state, self.launcher, self.clock, "s1", ports=[6700])

    def assign(self, topology_id: str, executors: list[tuple[int, int]]) -> None:
        self.state.set_assignment(
            topology_id,
            Assignment(node_host={"s1": "127.0.0.1"}, executor_node_port={e: ("s1", 6700) for e in executors}),
        )

    def crash_and_sync_for(self, secs: float, step: float = 0.25) -> None:
        """Kill every worker as soon as it runs, syncing every ``step`` seconds for ``secs``."""
        end = self.clock.now() + secs
        while self.clock.now() < end:
            for w in self.launcher.workers:
                w.dead = True
            self.supervisor.sync()
            self.clock.advance(step)


def test_first_death_relaunches_at_once_then_early_deaths_back_off_to_the_cap() -> None:
    host = Host()
    host.assign("t-1", [(1, 1)])
    host.supervisor.sync()
    assert host.launcher.launches == [0.0]
    host.crash_and_sync_for(30)
    gaps = [b - a for a, b in zip(host.launcher.launches, host.launcher.launches[1:], strict=False)]
    # the first relaunch comes with the next sync; then 1, 2, 4, 8, 8 ... seconds apart (rounded up to a sync)
    assert gaps[0] <= 0.25
    assert gaps[1:5] == pytest.approx([1.0, 2.0, 4.0, 8.0], abs=0.26)
    assert all(g == pytest.approx(8.0, abs=0.26) for g in gaps[5:])


def test_a_worker_that_lived_long_ends_the_streak() -> None:
    host = Host()
    host.assign("t-1", [(1, 1)])
    host.supervisor.sync()
    host.crash_and_sync_for(8)  # a streak of early deaths
    assert len(host.launcher.launches) >= 4
    host.clock.advance(8)
    host.supervisor.sync()  # the backoff has passed: a worker runs again
    n = len(host.launcher.launches)
    host.clock.advance(60)  # ... and lives long
    host.supervisor.sync()
    assert len(host.launcher.launches) == n
    host.launcher.workers[-1].dead = True
    host.supervisor.sync()  # relaunched at once: the streak is over
    assert len(host.launcher.launches) == n + 1


def test_a_failing_launch_backs_off_and_a_new_assignment_starts_afresh() -> None:
    host = Host()
    host.launcher.broken = True
    host.assign("t-1", [(1, 1)])
    host.crash_and_sync_for(20)
    assert 5 <= len(host.launcher.launches) <= 7  # 0, 0.25, 1.25, 3.25, 7.25, 15.25: not one per sync
    assert "no such wheel" in host.supervisor.launch_failures[6700]
    host.launcher.broken = False
    host.assign("t-2", [(1, 2)])  # another topology on the port: no waiting for the old one's backoff
    n = len(host.launcher.launches)
    host.supervisor.sync()
    assert len(host.launcher.launches) == n + 1 and host.supervisor.workers[6700].topology_id == "t-2"
    assert 6700 not in host.supervisor.launch_failures


def test_a_worker_stopped_because_its_assignment_moved_does_not_count() -> None:
    host = Host()
    host.assign("t-1", [(1, 1)])
    host.supervisor.sync()
    host.assign("t-1", [(1, 1), (2, 2)])  # rebalanced: the worker is replaced at once
    host.supervisor.sync()
    host.assign("t-1", [(1, 1)])
    host.supervisor.sync()
    assert host.launcher.launches == [0.0, 0.0, 0.0]


def test_backoff_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="restart backoff"):
        RestartBackoff(min_uptime_secs=10, base_secs=5, max_secs=1)


def test_a_failing_launch_is_reported_in_the_heartbeat_until_a_launch_succeeds_and_read_per_topology() -> None:
    host = Host()
    host.launcher.broken = True
    host.assign("t1", [(1, 1)])
    host.supervisor.sync()
    host.supervisor.heartbeat()
    metas = [(i.hostname, i.scheduler_meta) for i in host.state.supervisors().values()]
    assert launch_failures("t1", metas) == [{"host": "127.0.0.1", "error": "no such wheel"}]
    assert launch_failures("t2", metas) == []
    host.launcher.broken = False
    host.crash_and_sync_for(0)  # one more round before the backoff allows a launch: still reported
    host.clock.advance(10)
    host.supervisor.sync()
    host.supervisor.heartbeat()
    assert host.launcher.workers, "launched again once the backoff allowed"
    metas = [(i.hostname, i.scheduler_meta) for i in host.state.supervisors().values()]
    assert launch_failures("t1", metas) == []


def test_a_failed_launch_is_no_longer_reported_once_the_slot_is_unassigned() -> None:
    host = Host()
    host.launcher.broken = True
    host.assign("t1", [(1, 1)])
    host.supervisor.sync()
    host.state.remove_assignment("t1")
    host.supervisor.sync()
    host.supervisor.heartbeat()
    metas = [(i.hostname, i.scheduler_meta) for i in host.state.supervisors().values()]
    assert launch_failures("t1", metas) == []
