"""topology.worker.max.heap.size.mb: the pure slot check and the supervisor round that kills a worker over it
and tells its topology (a fake launcher reports the memory; no processes)."""

from __future__ import annotations

import os

from storm_py.clock import SimulatedClock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import ACTIVE, Assignment, StormBase
from storm_py.supervisor.core import Supervisor
from storm_py.supervisor.launcher import process_rss_mb
from storm_py.supervisor.slots import RunningSlot, WantedSlot, over_memory, reconcile

EXECS = ((1, 1),)


def test_the_pure_check() -> None:
    assert over_memory(300.0, 256.0) and not over_memory(200.0, 256.0)
    assert not over_memory(None, 256.0) and not over_memory(300.0, None)
    wanted = {6700: WantedSlot("t", EXECS), 6701: WantedSlot("u", EXECS)}
    running = {6700: RunningSlot("t", EXECS, True, 0.0, 300.0), 6701: RunningSlot("u", EXECS, True, 0.0, 300.0)}
    actions = reconcile(wanted, running, 30.0, {"t": 256.0})  # u has no limit
    assert actions.stop == (6700,) and actions.dead == (6700,) and actions.over_memory == (6700,)
    assert actions.launch == (6700,)  # relaunched (with the restart backoff)
    assert reconcile(wanted, running, 30.0).stop == ()


def test_this_process_has_a_resident_size() -> None:
    rss = process_rss_mb(os.getpid())
    assert rss is not None and rss > 1.0
    assert process_rss_mb(2**22 + 12345) is None  # no such process


class FakeWorker:
    def __init__(self, topology_id: str, executors: list[tuple[int, int]]) -> None:
        self.topology_id, self.executors, self.dead = topology_id, executors, False

    @property
    def alive(self) -> bool:
        return not self.dead

    def refresh(self) -> bool:
        return not self.dead

    def stop(self) -> None:
        self.dead = True

    def silent_secs(self) -> float:
        return 0.0


class HeavyLauncher:
    def __init__(self, rss: float) -> None:
        self.rss, self.workers = rss, list[FakeWorker]()

    def launch(self, supervisor_id, topology_id, port, executors):
        self.workers.append(FakeWorker(topology_id, executors))
        return self.workers[-1]

    def resident_mb(self, worker):
        return self.rss


def _supervisor(limit: float | None, rss: float):
    clock = SimulatedClock()
    state = ClusterState(MemoryStorage(MemoryStore()))
    conf = {} if limit is None else {"topology.worker.max.heap.size.mb": limit}
    state.set_storm_base("t-1-1", StormBase("t", ACTIVE, 0.0, 1, topology_conf=conf))
    state.set_assignment("t-1-1", Assignment({"s1": "h"}, {(1, 1): ("s1", 6700)}, {(1, 1): 0.0}))
    reports: list[tuple[str, int, str]] = []
    launcher = HeavyLauncher(rss)
    sup = Supervisor({"supervisor.slots.ports": [6700]}, state, launcher, clock, "s1",
                     report_error=lambda tid, port, _e, text: reports.append((tid, port, text)))
    return sup, launcher, reports


def test_a_worker_over_its_limit_is_killed_and_its_topology_told_the_limit() -> None:
    sup, launcher, reports = _supervisor(256, rss=300.0)
    sup.sync()  # launches
    assert len(launcher.workers) == 1 and not launcher.workers[0].dead
    sup.sync()  # measures, kills
    assert launcher.workers[0].dead
    assert [(t, p) for t, p, _ in reports] == [("t-1-1", 6700)]
    assert "topology.worker.max.heap.size.mb = 256 MiB" in reports[0][2] and "300 MiB" in reports[0][2]


def test_a_worker_under_its_limit_or_without_one_runs_on() -> None:
    for limit, rss in ((512, 300.0), (None, 10_000.0)):
        sup, launcher, reports = _supervisor(limit, rss)
        sup.sync()
        sup.sync()
        assert not launcher.workers[0].dead and reports == []
