"""Workers in cgroups (storm.resource.isolation.plugin.enable): the pure core (limits, control files, the kernel's
verdict), the supervisor round with an isolation, and the driver on this host's real cgroups (run as root)."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.clock import SimulatedClock, wait_until
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import ACTIVE, Assignment, StormBase
from storm_py.errors import ConfigError
from storm_py.supervisor.cgroups import (
    ASSIGNED_MEMORY,
    HIERARCHY_KEY,
    V1,
    V2,
    CgroupManager,
    WorkerLimits,
    cpu_shares,
    detect_version,
    killed_for_memory,
    limit_files,
    worker_limits,
    worker_path,
)
from storm_py.supervisor.core import Supervisor
from storm_py.supervisor.daemon import SupervisorDaemon
from storm_py.supervisor.slots import kernel_memory_error
from tests.tenants.test_memory_limit import FakeWorker, HeavyLauncher

REPO_SRC = str(Path(__file__).resolve().parents[2])
ON = {"storm.resource.isolation.plugin.enable": True, "storm.cgroup.memory.enforcement.enable": True}
RAS = {**ON, "storm.scheduler": "resource_aware"}


def _base(conf: dict[str, object] | None = None) -> StormBase:
    return StormBase(
        "t", ACTIVE, 0.0, 1, component_executors={"spout": 1, "bolt": 2}, component_tasks={"bolt": 4},
        topology_conf={"topology.component.resources.onheap.memory.mb": 100.0,
                       "topology.component.resources.offheap.memory.mb": 20.0,
                       "topology.component.cpu.pcore.percent": 50.0, **(conf or {})},
        component_resources={"bolt": {"topology.component.resources.onheap.memory.mb": 200.0,
                                      "topology.component.cpu.pcore.percent": 30.0}},
    )


# executors of _base: bolt (1, 2), bolt (3, 4), spout (5, 5)


def test_a_workers_limits_are_its_executors_resources_under_the_resource_aware_scheduler() -> None:
    limits = worker_limits(RAS, _base(), [(1, 2), (5, 5)])
    assert limits == WorkerLimits(220.0 + 120.0, 80.0, ASSIGNED_MEMORY)  # bolt 200 + 20 off-heap; spout 100 + 20
    assert worker_limits(RAS, _base(), [(1, 2), (3, 4)]).memory_mb == 440.0
    assert worker_limits(RAS, _base(), [(9, 9)]) == WorkerLimits(None, 0.0, ASSIGNED_MEMORY)  # no known executor


def test_otherwise_the_memory_is_the_heap_size_key_and_without_enforcement_none() -> None:
    heap = _base({"topology.worker.max.heap.size.mb": 150})
    assert worker_limits(ON, heap, [(5, 5)]) == WorkerLimits(150.0, 50.0, "topology.worker.max.heap.size.mb")
    assert worker_limits(ON, _base(), [(5, 5)]) == WorkerLimits(None, 50.0)  # no heap size: no memory limit
    no_memory = {"storm.resource.isolation.plugin.enable": True}
    assert worker_limits(no_memory, heap, [(5, 5)]) == WorkerLimits(None, 50.0)
    assert worker_limits({**RAS, "storm.cgroup.memory.enforcement.enable": False}, heap, [(5, 5)]).memory_mb is None


def test_the_control_files_of_cgroup_v1_and_v2() -> None:
    limits = WorkerLimits(150.0, 80.0, "k")
    mib150 = str(150 * 1024 * 1024)
    v1 = limit_files(V1, limits)
    assert v1 == {"memory": {"memory.limit_in_bytes": mib150, "memory.memsw.limit_in_bytes": mib150},
                  "cpu": {"cpu.shares": "80"}}
    assert list(v1["memory"]) == ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]  # memsw >= the limit
    assert limit_files(V2, limits) == {"": {"memory.max": mib150, "memory.swap.max": "0", "cpu.weight": "3"}}
    assert limit_files(V2, WorkerLimits(None, 100.0)) == {"": {"cpu.weight": "4"}}
    assert limit_files(V1, WorkerLimits(None, 0.0)) == {"memory": {}, "cpu": {}}
    assert cpu_shares(0.5) == 2 and cpu_shares(250.2) == 251 and cpu_shares(0.0) is None


def test_a_cgroup_path_is_made_of_plain_names_only() -> None:
    assert str(worker_path("host-1a2b", "f00d")) == "storm-py/host-1a2b/f00d"
    for sid, wid in (("..", "w"), ("s", "../../etc"), ("s", "a/b"), ("", "w")):
        with pytest.raises(ValueError, match="cannot name a cgroup"):
            worker_path(sid, wid)


def test_whether_the_kernel_killed_a_worker_for_its_memory() -> None:
    oom = "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"
    assert killed_for_memory(V1, {"memory.oom_control": oom, "memory.failcnt": "12\n"}, -9)
    assert not killed_for_memory(V1, {"memory.oom_control": oom.replace("oom_kill 1", "oom_kill 0"),
                                      "memory.failcnt": "12\n"}, -9)  # hit its limit, reclaimed, killed by someone
    old_kernel = "oom_kill_disable 0\nunder_oom 0\n"
    assert killed_for_memory(V1, {"memory.oom_control": old_kernel, "memory.failcnt": "3"}, -9)
    assert not killed_for_memory(V1, {"memory.oom_control": old_kernel, "memory.failcnt": "3"}, 1)
    assert not killed_for_memory(V1, {"memory.oom_control": old_kernel, "memory.failcnt": "0"}, -9)
    events = "low 0\nhigh 0\nmax 40\noom 1\noom_kill 1\noom_group_kill 0\n"
    assert killed_for_memory(V2, {"memory.events": events}, -9)
    assert not killed_for_memory(V2, {"memory.events": events.replace("oom_kill 1", "oom_kill 0")}, -9)
    assert not killed_for_memory(V2, {}, -9) and not killed_for_memory(V1, {}, -9)


def test_a_hierarchy_without_the_controllers_is_refused_naming_the_key_and_the_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"{tmp_path}.*{HIERARCHY_KEY}.*memory, cpu"):
        detect_version(tmp_path)
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io pids\n", encoding="ascii")
    with pytest.raises(ConfigError, match=f"v2 hierarchy {tmp_path} \\({HIERARCHY_KEY}\\) offers no memory"):
        detect_version(tmp_path)
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n", encoding="ascii")
    assert detect_version(tmp_path) == V2


def test_a_hierarchy_it_cannot_write_is_refused_at_start(tmp_path: Path) -> None:
    for controller in ("memory", "cpu"):
        (tmp_path / controller).mkdir()
        (tmp_path / controller / "cgroup.procs").write_text("", encoding="ascii")
    assert detect_version(tmp_path) == V1
    (tmp_path / "memory" / "storm-py").write_text("not a folder", encoding="ascii")
    conf = {**ON, HIERARCHY_KEY: str(tmp_path)}
    with pytest.raises(ConfigError, match=f"storm.resource.isolation.plugin.enable is on but this supervisor cannot "
                                          f"make cgroups under {tmp_path} \\({HIERARCHY_KEY}\\)") as err:
        CgroupManager(conf, "s1", lambda _tid: None)
    assert err.value.fields["key"] == HIERARCHY_KEY
    with pytest.raises(ConfigError, match=re.escape("storm.resource.isolation.plugin names 'com.example.Docker'")):
        CgroupManager({**conf, "storm.resource.isolation.plugin": "com.example.Docker"}, "s1", lambda _tid: None)


# ------------------------------------------------------------------------------------------ the supervisor round


class KilledIsolation:
    """Says the kernel killed every worker it is told of, and remembers them."""

    def __init__(self) -> None:
        self.ended_workers: list[FakeWorker] = []

    def ended(self, worker: FakeWorker) -> str | None:
        self.ended_workers.append(worker)
        return kernel_memory_error(6700, 150.0, "topology.worker.max.heap.size.mb")


def _round(conf: dict[str, object], isolation: KilledIsolation | None, rss: float = 300.0):
    state = ClusterState(MemoryStorage(MemoryStore()))
    state.set_storm_base("t-1-1", StormBase("t", ACTIVE, 0.0, 1, topology_conf={
        "topology.worker.max.heap.size.mb": 150}))
    state.set_assignment("t-1-1", Assignment({"s1": "h"}, {(1, 1): ("s1", 6700)}, {(1, 1): 0.0}))
    reports: list[str] = []
    launcher = HeavyLauncher(rss)
    sup = Supervisor({"supervisor.slots.ports": [6700], **conf}, state, launcher, SimulatedClock(), "s1",
                     report_error=lambda _t, _p, _e, text: reports.append(text), isolation=isolation)
    return sup, launcher, reports


def test_a_worker_the_kernel_killed_puts_its_limit_on_the_topologys_errors_and_its_cgroup_is_released() -> None:
    isolation = KilledIsolation()
    sup, launcher, reports = _round(ON, isolation, rss=10.0)
    sup.sync()
    launcher.workers[0].dead = True  # the kernel killed it
    sup.sync()
    assert isolation.ended_workers == [launcher.workers[0]]
    assert reports == ["worker on port 6700 was killed by the kernel: its memory passed the limit of its cgroup "
                       "(storm.cgroup.memory.enforcement.enable), topology.worker.max.heap.size.mb = 150 MiB"]
    assert len(launcher.workers) == 2  # relaunched
    sup.shutdown()
    assert isolation.ended_workers == launcher.workers


def test_while_the_kernel_holds_the_memory_the_rss_watch_stands_aside() -> None:
    sup, launcher, reports = _round(ON, None)
    sup.sync()
    sup.sync()
    assert not launcher.workers[0].dead and reports == []
    sup, launcher, reports = _round({"storm.resource.isolation.plugin.enable": True}, None)  # CPU only: RSS watch
    sup.sync()
    sup.sync()
    assert launcher.workers[0].dead and "resident memory 300 MiB" in reports[0]


# ------------------------------------------------------------------------------- the driver on this host's cgroups


@pytest.fixture
def manager() -> Iterator[CgroupManager]:
    """A manager of this host's cgroups under a supervisor id of this test; every cgroup it made is gone after."""
    sid = f"test-{uuid.uuid4().hex[:8]}"
    heap = _base({"topology.worker.max.heap.size.mb": 64})
    made = CgroupManager(ON, sid, lambda tid: heap if tid == "t-1-1" else None)
    try:
        yield made
    finally:
        made.close()
        leftovers = [str(root) for root in made.roots.values() if root.exists()]
        for root in made.roots.values():
            for folder in sorted(root.glob("*"), reverse=True):
                if folder.is_dir():
                    folder.rmdir()
            if root.exists():
                root.rmdir()
            if root.parent.exists() and not any(p.is_dir() for p in root.parent.iterdir()):
                root.parent.rmdir()  # the shared root, when no other supervisor uses it
        assert not leftovers, f"cgroups left: {leftovers}"


def _child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def test_a_process_in_its_cgroup_is_killed_by_the_kernel_past_its_limit_and_the_cgroup_is_removed(
        manager: CgroupManager) -> None:
    assert manager.version == V1  # this host mounts cgroup v1
    cgroup = manager.create("t-1-1", uuid.uuid4().hex, [(5, 5)])
    assert (cgroup.dirs["memory"] / "memory.limit_in_bytes").read_text().strip() == str(64 * 1024 * 1024)
    assert (cgroup.dirs["memory"] / "memory.memsw.limit_in_bytes").read_text().strip() == str(64 * 1024 * 1024)
    assert (cgroup.dirs["cpu"] / "cpu.shares").read_text().strip() == "50"
    proc = _child("import sys; sys.stdin.read(); b = bytearray(b'x') * 400_000_000")
    try:
        manager.join(cgroup, proc.pid)
        for folder in cgroup.dirs.values():
            assert str(proc.pid) in (folder / "cgroup.procs").read_text().split()
        assert proc.stdin is not None
        proc.stdin.close()  # now it grows past 64 MiB
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == -9
    assert manager.memory_killed(cgroup, code)
    assert manager.remove(cgroup)
    assert not any(folder.exists() for folder in cgroup.dirs.values())


def test_a_process_that_ends_by_itself_was_not_killed_for_its_memory_and_a_busy_cgroup_stays_until_empty(
        manager: CgroupManager) -> None:
    cgroup = manager.create("t-1-1", uuid.uuid4().hex, [(5, 5)])
    proc = _child("import sys; sys.stdin.read()")
    try:
        manager.join(cgroup, proc.pid)
        assert not manager.remove(cgroup)  # something runs in it: it stays, and is retried
        assert manager.leftovers == [cgroup] and cgroup.dirs["memory"].exists()
        assert proc.stdin is not None
        proc.stdin.close()
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0 and not manager.memory_killed(cgroup, code)
    wait_until(lambda: manager.remove(cgroup), 30, interval=0.1, what="the emptied cgroup removed")
    assert manager.leftovers == [] and not cgroup.dirs["cpu"].exists()


def test_the_cgroup_file_system_is_named_in_its_module_only() -> None:
    package = Path(REPO_SRC) / "storm_py"
    owners = {package / "supervisor" / "cgroups.py", package / "config" / "keys.py"}  # keys.py: the default
    names = ("/sys/fs/cgroup", "cgroup.procs", "memory.limit_in_bytes", "memory.oom_control", "memory.events",
             "cpu.shares", "cpu.weight", "subtree_control")
    found = [f"{path.relative_to(package)}: {name}" for path in sorted(package.rglob("*.py")) if path not in owners
             for name in names if name in path.read_text(encoding="utf-8")]
    assert not found, f"the cgroup file system named outside storm_py/supervisor/cgroups.py: {found}"


def test_a_restarted_supervisor_removes_the_empty_cgroups_of_its_last_run(manager: CgroupManager) -> None:
    cgroup = manager.create("t-1-1", uuid.uuid4().hex, [(5, 5)])
    assert all(folder.is_dir() for folder in cgroup.dirs.values())
    again = CgroupManager(ON, manager.supervisor_id, manager.base_of)
    assert not any(folder.exists() for folder in cgroup.dirs.values())
    assert again.roots == manager.roots


def test_a_supervisor_enabled_without_the_controllers_does_not_start(tmp_path: Path) -> None:
    conf = {**ON, HIERARCHY_KEY: str(tmp_path / "no-cgroups"), "storm.local.dir": str(tmp_path / "local"),
            "storm.log.dir": str(tmp_path / "logs")}
    with pytest.raises(ConfigError, match=f"{tmp_path / 'no-cgroups'} \\({HIERARCHY_KEY}\\) holds neither"):
        SupervisorDaemon(conf, storage=MemoryStorage(MemoryStore()))
