"""The supervisor's slot decisions (pure): which worker slots to stop and which to (re)launch.

Each slot is a port.  A slot runs the worker the assignments want there; a worker whose topology, executors or
liveness no longer match is stopped, and a wanted slot with no live worker is launched.
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


@dataclass(frozen=True)
class SlotActions:
    """Ports to stop, then ports to launch."""

    stop: tuple[int, ...]
    launch: tuple[int, ...]


def reconcile(
    wanted: Mapping[int, WantedSlot], running: Mapping[int, RunningSlot], worker_timeout_secs: float
) -> SlotActions:
    """Compare wanted and running slots: stop mismatched, dead or silent workers; launch what is missing."""
    stop: list[int] = []
    launch: list[int] = []
    for port, run in running.items():
        want = wanted.get(port)
        if (
            want is None
            or want.topology_id != run.topology_id
            or want.executors != run.executors
            or not run.alive
            or run.silent_secs > worker_timeout_secs
        ):
            stop.append(port)
    for port in wanted:
        if port not in running or port in stop:
            launch.append(port)
    return SlotActions(tuple(sorted(stop)), tuple(sorted(launch)))
