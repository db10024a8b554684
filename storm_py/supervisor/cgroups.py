"""This module owns the cgroup file system: each worker's cgroup, its memory and CPU limits, and what the kernel
says of it once the worker is gone (``storm.resource.isolation.plugin.enable``).

The pure core: :func:`worker_limits` (a worker's limits from its executors' resources and the conf, as Storm's
``CgroupManager`` takes them), :func:`limit_files` (the control files and values that hold them, cgroup v1 or v2),
:func:`worker_path` (where the cgroup lives under the hierarchy) and :func:`killed_for_memory` (whether the kernel
killed the worker for its memory, from the cgroup's counters).  The driver, :class:`CgroupManager`, makes
``storm-py/<supervisor id>/<worker id>`` under each controller (v1: ``memory/`` and ``cpu/``; v2: the unified
hierarchy), writes the limits, puts the worker's process in it and removes it when the worker is gone.  Every path
of the cgroup file system is in this module.
"""

from __future__ import annotations

import errno
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from storm_py.cluster_state.models import StormBase
from storm_py.config.keys import setting
from storm_py.errors import ConfigError, StormPyError
from storm_py.scheduler.resource_aware import RESOURCE_AWARE_NAMES, component_request
from storm_py.supervisor.slots import MEMORY_LIMIT_KEY
from storm_py.ui.api_views import task_components

log = logging.getLogger(__name__)

ENABLE_KEY = "storm.resource.isolation.plugin.enable"
PLUGIN_KEY = "storm.resource.isolation.plugin"
HIERARCHY_KEY = "storm.cgroup.hierarchy.dir"
MEMORY_KEY = "storm.cgroup.memory.enforcement.enable"
#: the folder under each controller holding every supervisor's workers' cgroups
ROOT = "storm-py"
#: the names ``storm.resource.isolation.plugin`` takes for this isolation
PLUGIN_NAMES = frozenset(
    {"org.apache.storm.container.cgroup.CgroupManager", "storm_py.supervisor.cgroups.CgroupManager"}
)
V1_CONTROLLERS = ("memory", "cpu")
V1, V2 = 1, 2
#: where a cgroup's limits of the unified hierarchy (v2) live: no controller folder
UNIFIED = ""
#: what a RAS worker's memory limit is called in its error
ASSIGNED_MEMORY = "its assigned on-heap + off-heap memory"
#: control files a host has only with swap accounting: written when present (else swap cannot pass the limit)
SWAP_FILES = frozenset({"memory.memsw.limit_in_bytes", "memory.swap.max"})

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_MIB = 1024 * 1024


@dataclass(frozen=True)
class WorkerLimits:
    """A worker's limits: ``memory_mb`` (None: none) named by ``memory_source``, ``cpu_percent`` (0: none)."""

    memory_mb: float | None
    cpu_percent: float
    memory_source: str = ""


def kernel_enforces_memory(conf: Mapping[str, Any]) -> bool:
    """Whether workers' cgroups hold their memory (the supervisor's RSS watch then stands aside)."""
    return bool(setting(conf, ENABLE_KEY)) and bool(setting(conf, MEMORY_KEY))


def worker_limits(conf: Mapping[str, Any], base: StormBase, executors: Iterable[tuple[int, int]]) -> WorkerLimits:
    """The limits of a worker running ``executors`` of ``base``: its CPU is the sum of its executors'
    ``topology.component.cpu.pcore.percent``; its memory, with ``storm.cgroup.memory.enforcement.enable``, the sum
    of their on-heap + off-heap memory under the resource aware scheduler, else the topology's
    ``topology.worker.max.heap.size.mb`` (unset: none)."""
    tasks = task_components(base)
    memory = cpu = 0.0
    for start, _end in executors:
        component = tasks.get(start)
        if component is None:
            continue
        request = component_request(component, {**base.topology_conf, **base.component_resources.get(component, {})})
        memory += request.memory
        cpu += request.cpu
    if not setting(conf, MEMORY_KEY):
        return WorkerLimits(None, cpu)
    if setting(conf, "storm.scheduler") in RESOURCE_AWARE_NAMES:
        return WorkerLimits(memory if memory > 0 else None, cpu, ASSIGNED_MEMORY)
    heap = base.topology_conf.get(MEMORY_LIMIT_KEY)
    if isinstance(heap, (int, float)) and not isinstance(heap, bool) and heap > 0:
        return WorkerLimits(float(heap), cpu, MEMORY_LIMIT_KEY)
    return WorkerLimits(None, cpu)


def cpu_shares(cpu_percent: float) -> int | None:
    """cgroup v1 ``cpu.shares`` of a CPU percent (100: one core), as Storm sets them; None when no CPU is asked."""
    return max(2, math.ceil(cpu_percent)) if cpu_percent > 0 else None


def limit_files(version: int, limits: WorkerLimits) -> dict[str, dict[str, str]]:
    """Controller folder (:data:`UNIFIED` under v2) -> control file -> the value that holds ``limits``, in the
    order they are written (memory and swap together under v1's memsw limit: no swapping past the limit)."""
    shares = cpu_shares(limits.cpu_percent)
    memory = None if limits.memory_mb is None else str(math.ceil(limits.memory_mb * _MIB))
    if version == V1:
        out: dict[str, dict[str, str]] = {"memory": {}, "cpu": {}}
        if memory is not None:
            out["memory"]["memory.limit_in_bytes"] = memory
            out["memory"]["memory.memsw.limit_in_bytes"] = memory
        if shares is not None:
            out["cpu"]["cpu.shares"] = str(shares)
        return out
    unified: dict[str, str] = {}
    if memory is not None:
        unified["memory.max"] = memory
        unified["memory.swap.max"] = "0"
    if shares is not None:  # the kernel's own mapping of v1 shares [2, 262144] onto v2 weights [1, 10000]
        unified["cpu.weight"] = str(1 + ((min(shares, 262144) - 2) * 9999) // 262142)
    return {UNIFIED: unified}


def worker_path(supervisor_id: str, worker_id: str) -> PurePosixPath:
    """A worker's cgroup relative to each controller's folder; an id that is not a plain name is refused."""
    for what, name in (("supervisor id", supervisor_id), ("worker id", worker_id)):
        if not _NAME.match(name) or name in (".", ".."):
            raise ValueError(f"{what} {name!r} cannot name a cgroup (letters, digits, '_', '.', '-')")
    return PurePosixPath(ROOT, supervisor_id, worker_id)


def _counts(text: str) -> dict[str, int]:
    """``name value`` lines (``memory.oom_control``, ``memory.events``) as numbers; other lines are skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def killed_for_memory(version: int, counters: Mapping[str, str], exit_code: int | None) -> bool:
    """Whether the kernel killed the worker of a cgroup for its memory, from the cgroup's counters read after the
    worker died (file name -> text): v2 ``memory.events`` or v1 ``memory.oom_control`` count an ``oom_kill``;
    an older v1 kernel without that count: ``memory.failcnt`` counts hits of the limit and the worker died of
    SIGKILL."""
    if version == V2:
        return _counts(counters.get("memory.events", "")).get("oom_kill", 0) > 0
    oom = _counts(counters.get("memory.oom_control", ""))
    if "oom_kill" in oom:
        return oom["oom_kill"] > 0
    failcnt = counters.get("memory.failcnt", "").strip()
    return failcnt.isdigit() and int(failcnt) > 0 and exit_code == -9


def detect_version(hierarchy: Path) -> int:
    """Which cgroup file system is mounted at ``hierarchy``: v2 (a unified hierarchy offering memory and cpu) or
    v1 (a folder per controller); neither raises :class:`ConfigError` naming the key and the directory."""
    controllers = hierarchy / "cgroup.controllers"
    if controllers.is_file():
        offered = set(controllers.read_text(encoding="ascii", errors="replace").split())
        missing = sorted({"memory", "cpu"} - offered)
        if missing:
            raise ConfigError(f"{ENABLE_KEY} is on but the cgroup v2 hierarchy {hierarchy} ({HIERARCHY_KEY}) offers "
                              f"no {' and no '.join(missing)} controller", key=HIERARCHY_KEY)
        return V2
    missing = [c for c in V1_CONTROLLERS if not (hierarchy / c / "cgroup.procs").is_file()]
    if missing:
        raise ConfigError(
            f"{ENABLE_KEY} is on but {hierarchy} ({HIERARCHY_KEY}) holds neither a cgroup v2 hierarchy nor the "
            f"cgroup v1 controllers {', '.join(missing)} (mounted as {hierarchy}/<controller>)", key=HIERARCHY_KEY)
    return V1


class CgroupError(StormPyError):
    """A worker's cgroup could not be made, filled or read."""

    code = "cgroup_failed"


@dataclass
class WorkerCgroup:
    """One worker's cgroup: its folder under each controller and its limits."""

    worker_id: str
    dirs: dict[str, Path]
    limits: WorkerLimits


#: A live topology's storm base by id (None when it is gone).
BaseOf = Callable[[str], StormBase | None]


class CgroupManager:
    """The cgroups of one supervisor's workers (see the module docstring); made at supervisor start, where a
    hierarchy it cannot use raises :class:`ConfigError` naming the key and the directory."""

    def __init__(self, conf: Mapping[str, Any], supervisor_id: str, base_of: BaseOf) -> None:
        self.conf = dict(conf)
        self.base_of = base_of
        plugin = setting(conf, PLUGIN_KEY)
        if plugin not in PLUGIN_NAMES:
            raise ConfigError(f"{PLUGIN_KEY} names {plugin!r}, not an isolation this supervisor has (one of "
                              f"{', '.join(sorted(PLUGIN_NAMES))})", key=PLUGIN_KEY)
        self.hierarchy = Path(str(setting(conf, HIERARCHY_KEY)))
        self.version = detect_version(self.hierarchy)
        self.supervisor_id = supervisor_id
        own = worker_path(supervisor_id, "_").parent
        folders = [UNIFIED] if self.version == V2 else list(V1_CONTROLLERS)
        self.roots = {c: self.hierarchy / c / own for c in folders}
        #: cgroups whose removal failed (something still runs in them): retried at each removal
        self.leftovers: list[WorkerCgroup] = []
        try:
            for root in self.roots.values():
                root.mkdir(parents=True, exist_ok=True)
                for stale in sorted(p for p in root.iterdir() if p.is_dir()):  # of this supervisor's last run
                    self._rmdir(WorkerCgroup(stale.name, {"": stale}, WorkerLimits(None, 0.0)))
            if self.version == V2:  # a child gets a controller its parent hands down
                for folder in (self.hierarchy, self.hierarchy / ROOT, self.roots[UNIFIED]):
                    (folder / "cgroup.subtree_control").write_text("+memory +cpu", encoding="ascii")
        except OSError as err:
            raise ConfigError(f"{ENABLE_KEY} is on but this supervisor cannot make cgroups under {self.hierarchy} "
                              f"({HIERARCHY_KEY}): {err}", key=HIERARCHY_KEY) from err

    def create(self, topology_id: str, worker_id: str, executors: list[tuple[int, int]]) -> WorkerCgroup:
        """Make the cgroup of a worker about to start and write its limits."""
        base = self.base_of(topology_id)
        limits = worker_limits(self.conf, base, executors) if base is not None else WorkerLimits(None, 0.0)
        relative = worker_path(self.supervisor_id, worker_id)
        cgroup = WorkerCgroup(worker_id, {c: self.hierarchy / c / relative for c in self.roots}, limits)
        try:
            for folder, files in limit_files(self.version, limits).items():
                cgroup.dirs[folder].mkdir(exist_ok=True)
                for name, value in files.items():
                    if name not in SWAP_FILES or (cgroup.dirs[folder] / name).exists():
                        (cgroup.dirs[folder] / name).write_text(value, encoding="ascii")
        except OSError as err:
            self.remove(cgroup)
            raise CgroupError(f"cannot make the cgroup of worker {worker_id} of {topology_id} under "
                              f"{self.hierarchy}: {err}", topology=topology_id) from err
        log.info("worker %s of %s gets cgroup %s (memory %s, cpu %s%%)", worker_id, topology_id, relative,
                 "unlimited" if limits.memory_mb is None else f"{limits.memory_mb:g} MiB", f"{limits.cpu_percent:g}")
        return cgroup

    def join(self, cgroup: WorkerCgroup, pid: int) -> None:
        """Put process ``pid`` in ``cgroup`` (under every controller)."""
        try:
            for folder in cgroup.dirs.values():
                (folder / "cgroup.procs").write_text(str(pid), encoding="ascii")
        except OSError as err:
            raise CgroupError(f"cannot put worker {cgroup.worker_id} (pid {pid}) in its cgroup: {err}") from err

    def memory_killed(self, cgroup: WorkerCgroup, exit_code: int | None) -> bool:
        """Whether the kernel killed the worker of ``cgroup`` for its memory (read before its removal)."""
        folder = cgroup.dirs[UNIFIED if self.version == V2 else "memory"]
        names = ("memory.events",) if self.version == V2 else ("memory.oom_control", "memory.failcnt")
        counters: dict[str, str] = {}
        for name in names:
            try:
                counters[name] = (folder / name).read_text(encoding="ascii", errors="replace")
            except OSError:
                continue
        return killed_for_memory(self.version, counters, exit_code)

    def remove(self, cgroup: WorkerCgroup) -> bool:
        """Remove the (empty) cgroup of a worker that is gone, and any left over before; False when it stays (a
        process still runs in it: it is logged and tried again at the next removal)."""
        pending = [c for c in self.leftovers if c is not cgroup] + [cgroup]
        self.leftovers = [c for c in pending if not self._rmdir(c)]
        return cgroup not in self.leftovers

    def _rmdir(self, cgroup: WorkerCgroup) -> bool:
        gone = True
        for folder in cgroup.dirs.values():
            try:
                folder.rmdir()
            except FileNotFoundError:
                continue
            except OSError as err:
                if err.errno != errno.ENOENT:
                    log.warning("cgroup %s stays (a process still runs in it?): %s", folder, err)
                    gone = False
        return gone

    def close(self) -> None:
        """Remove this supervisor's folders (and the shared root when nobody else uses it) once its workers are
        gone; what stays is logged."""
        for cgroup in list(self.leftovers):
            self.remove(cgroup)
        for root in self.roots.values():
            for folder in (root, root.parent):
                try:
                    folder.rmdir()
                except FileNotFoundError:
                    continue
                except OSError as err:
                    if folder == root:
                        log.warning("cgroup folder %s stays: %s", folder, err)
                    break  # the shared root stays while another supervisor uses it
