"""This module owns a worker's load-aware shuffling: reading its tasks' loads and refreshing the choosers with them.

The thin driver of :mod:`storm_py.runtime.load_aware` (the arithmetic): the worker runtime registers each
:class:`~storm_py.runtime.groupers.LoadAwareShuffle` it builds and calls :meth:`WorkerLoads.refresh` from its loop
when :attr:`WorkerLoads.at` comes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol

from storm_py.config import defaults_of
from storm_py.runtime.groupers import LoadAwareShuffle
from storm_py.runtime.load_aware import REFRESH_SECS, task_load

#: the keys of load-aware messaging: off switch, then the locality bounds (lower, higher)
LOAD_KEYS: Final = ("topology.disable.loadaware.messaging", "topology.localityaware.lower.bound",
                    "topology.localityaware.higher.bound")


class LoadedExecutor(Protocol):
    """What the loads are read from: an executor's tasks, its inbox and its execute times per input."""

    task_ids: list[int]
    component_id: str

    @property
    def inbox(self) -> Iterable[tuple[int, list[Any]]]: ...

    @property
    def busy_secs(self) -> float: ...


def locality_bounds(conf: Mapping[str, Any]) -> tuple[float, float] | None:
    """The locality bounds (lower, higher) of load-aware shuffling, or None when the topology turns it off."""
    values = {**defaults_of(LOAD_KEYS), **{k: v for k, v in conf.items() if k in LOAD_KEYS}}
    if values[LOAD_KEYS[0]]:
        return None
    return float(values[LOAD_KEYS[1]]), float(values[LOAD_KEYS[2]])


class WorkerLoads:
    """The load-aware choosers of one worker and the figures their last refresh read."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.choosers: list[LoadAwareShuffle] = []
        #: when the next refresh is due (never while there is no chooser)
        self.at = float("inf")
        self._last = 0.0
        self._busy: dict[int, float] = {}  # seconds each executor (by id) had spent executing at the last refresh

    def add(self, chooser: LoadAwareShuffle, now: float) -> None:
        """Follow a new chooser."""
        if not self.choosers:
            self._last = now
            self.at = now + REFRESH_SECS
        self.choosers.append(chooser)

    def task_loads(self, executors: Iterable[LoadedExecutor], task_to_worker: Mapping[int, str],
                   peer_backlog: Callable[[str], int] | None, elapsed: float) -> dict[int, float]:
        """Every task's load in [0, 1].

        This worker's tasks: the larger of their executor's queue (against ``capacity``) and how much more of the
        last ``elapsed`` seconds it spent executing than the least busy executor of its component in this worker
        (one loop thread runs every executor and a bolt step drains its inbox, so a slow task shows as busy time
        rather than as a queue; counting only the excess keeps a worker whose tasks are all busy from looking more
        loaded than its peers, whose busy time it cannot see).  Other workers' tasks: what waits to be sent to
        their worker, refused by its full queue (its backpressure)."""
        capacity = self.capacity
        busy_before = self._busy
        shares: list[tuple[LoadedExecutor, float, float]] = []
        least: dict[str, float] = {}
        for ex in executors:
            busy = ex.busy_secs
            key = id(ex)
            share = (busy - busy_before.get(key, busy)) / elapsed if elapsed > 0 else 0.0
            busy_before[key] = busy
            share = min(1.0, max(0.0, share))
            least[ex.component_id] = min(share, least.get(ex.component_id, 1.0))
            queued = sum(len(items) for _, items in ex.inbox)
            shares.append((ex, share, task_load(queued, capacity)))
        loads: dict[int, float] = {}
        for ex, share, queue in shares:
            load = max(queue, share - least[ex.component_id])
            for t in ex.task_ids:
                loads[t] = load
        if peer_backlog is not None:
            by_worker: dict[str, float] = {}
            for task, worker in task_to_worker.items():
                if task not in loads:
                    known = by_worker.get(worker)
                    if known is None:
                        known = by_worker[worker] = task_load(peer_backlog(worker), capacity)
                    loads[task] = known
        return loads

    def refresh(self, now: float, executors: Iterable[LoadedExecutor], task_to_worker: Mapping[int, str],
                peer_backlog: Callable[[str], int] | None) -> None:
        """Rebuild the choosers' tables from the current loads; the next refresh is ``REFRESH_SECS`` later."""
        loads = self.task_loads(executors, task_to_worker, peer_backlog, now - self._last)
        self._last = now
        self.at = now + REFRESH_SECS
        for chooser in self.choosers:
            chooser.refresh(loads)
