"""This module owns the supervisor's slot decisions (pure): which worker slots to stop and which to (re)launch.

Each slot is a port.  A slot runs the worker the assignments want there; a worker whose topology, executors or
liveness no longer match is stopped, and a wanted slot with no live worker is launched.  A worker whose resident
memory passed its topology's ``topology.worker.max.heap.size.mb`` is stopped as dead (and relaunched, with the
restart backoff), and :func:`memory_error` is the error its topology is told.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

ExecutorIds = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class WantedSlot:
    """What the assignments want on one port."""

    topology_id: str
    executors: ExecutorIds


@dataclass(frozen=True)
class RunningSlot:
    """What runs on one port, as last observed."""

    topology_id: str
    executors: ExecutorIds
    alive: bool
    silent_secs: float = 0.0
    #: resident memory in MiB, when measured (only for a topology with a memory limit)
    rss_mb: float | None = None


@dataclass(frozen=True)
class SlotActions:
    """Ports to stop, then ports to launch; ``dead`` are the stopped ports whose worker died, went silent or
    passed its memory limit (``over_memory``)."""

    stop: tuple[int, ...]
    launch: tuple[int, ...]
    dead: tuple[int, ...] = ()
    over_memory: tuple[int, ...] = ()


#: The topology conf key limiting each worker's resident memory.
MEMORY_LIMIT_KEY = "topology.worker.max.heap.size.mb"


def over_memory(rss_mb: float | None, limit_mb: float | None) -> bool:
    """Whether a worker using ``rss_mb`` passed ``limit_mb`` (either unknown: no)."""
    return rss_mb is not None and limit_mb is not None and rss_mb > limit_mb


def memory_error(port: int, rss_mb: float, limit_mb: float) -> str:
    """What a topology is told when its worker on ``port`` was killed for its memory."""
    return (f"worker on port {port} was killed: its resident memory {rss_mb:.0f} MiB passed the limit "
            f"{MEMORY_LIMIT_KEY} = {limit_mb:g} MiB")


def kernel_memory_error(port: int, limit_mb: float, source: str) -> str:
    """What a topology is told when the kernel killed its worker on ``port`` for passing its cgroup's memory limit
    of ``limit_mb`` (``source``: the key or the resources it comes from)."""
    return (f"worker on port {port} was killed by the kernel: its memory passed the limit of its cgroup "
            f"(storm.cgroup.memory.enforcement.enable), {source} = {limit_mb:g} MiB")


def reconcile(
    wanted: Mapping[int, WantedSlot], running: Mapping[int, RunningSlot], worker_timeout_secs: float,
    memory_limits: Mapping[str, float] | None = None,
) -> SlotActions:
    """Compare wanted and running slots: stop mismatched, dead, silent or over-memory workers (``memory_limits``:
    MiB by topology id); launch what is missing."""
    stop: list[int] = []
    dead: list[int] = []
    launch: list[int] = []
    heavy: list[int] = []
    limits = memory_limits or {}
    for port, run in running.items():
        want = wanted.get(port)
        if run.alive and over_memory(run.rss_mb, limits.get(run.topology_id)):
            heavy.append(port)
        if not run.alive or run.silent_secs > worker_timeout_secs or port in heavy:
            dead.append(port)
            stop.append(port)
        elif want is None or want.topology_id != run.topology_id or want.executors != run.executors:
            stop.append(port)
    for port in wanted:
        if port not in running or port in stop:
            launch.append(port)
    return SlotActions(tuple(sorted(stop)), tuple(sorted(launch)), tuple(sorted(dead)), tuple(sorted(heavy)))


class RestartBackoff:
    """How long a port waits before launching again after its workers keep dying young (pure: give it ``now``).

    A worker that exits (or fails to launch) within ``min_uptime_secs`` of its launch lengthens its port's
    streak; one that lived longer ends the streak.  The first early death is relaunched at once, as Storm's
    supervisor does; each further one in a row waits ``base_secs``, then twice that, up to ``max_secs``, so a
    topology that crashes on start does not keep a core busy launching processes.
    """

    def __init__(self, min_uptime_secs: float = 10.0, base_secs: float = 1.0, max_secs: float = 30.0) -> None:
        if min_uptime_secs < 0 or base_secs < 0 or max_secs < base_secs:
            raise ValueError(
                f"bad restart backoff: min uptime {min_uptime_secs}, base {base_secs}, max {max_secs} "
                "(need min uptime >= 0 and 0 <= base <= max)"
            )
        self.min_uptime_secs = min_uptime_secs
        self.base_secs = base_secs
        self.max_secs = max_secs
        self._launched_at: dict[int, float] = {}
        self._streak: dict[int, int] = {}
        self._not_before: dict[int, float] = {}

    def may_launch(self, port: int, now: float) -> bool:
        """Whether ``port`` may launch a worker at ``now``."""
        return now >= self._not_before.get(port, float("-inf"))

    def launched(self, port: int, now: float) -> None:
        """A worker was launched on ``port``."""
        self._launched_at[port] = now

    def ended(self, port: int, now: float) -> float:
        """A worker of ``port`` died or could not launch; return the seconds until the port may launch again."""
        lived = now - self._launched_at.pop(port, now)
        if lived >= self.min_uptime_secs:
            self._streak[port] = 0
        streak = self._streak.get(port, 0) + 1
        self._streak[port] = streak
        delay = 0.0 if streak == 1 else min(self.base_secs * 2 ** (streak - 2), self.max_secs)
        self._not_before[port] = now + delay
        return delay

    def forget(self, port: int) -> None:
        """Start ``port`` afresh (it was stopped on purpose, or now runs something else)."""
        self._launched_at.pop(port, None)
        self._streak.pop(port, None)
        self._not_before.pop(port, None)
