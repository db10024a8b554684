"""Tracked topologies: wait until a number of spout emits happened and the cluster went quiet."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from storm_py.api.topology import StormTopology
from storm_py.clock import SYSTEM_CLOCK, Clock, Deadline, SimulatedClock
from storm_py.errors import WaitTimeoutError

if TYPE_CHECKING:
    from storm_py.worker.core import Worker


class Cluster(Protocol):
    """What tracking reads of the cluster running the topology (:class:`storm_py.local.LocalCluster`)."""

    @property
    def clock(self) -> Clock: ...

    def workers(self, topology_id: str | None = None) -> Sequence[Worker]: ...

    def wait_idle(self, timeout: float = 30.0) -> None: ...


class TrackedTopology:
    """A topology whose spout emits a test can wait for (submit it through ``cluster.submit_topology``)."""

    def __init__(self, topology: StormTopology, cluster: Cluster) -> None:
        self.topology = topology
        self.cluster = cluster
        self.topology_id: str | None = None
        self.last_spout_emit = 0

    def spout_emitted(self) -> int:
        """Spout emits so far across the topology's workers."""
        return sum(w.runtime.spout_emitted for w in self.cluster.workers(self.topology_id) if w.runtime is not None)


def tracked_wait(tracked: TrackedTopology, n: int = 1, timeout_secs: float = 60) -> None:
    """Wait until ``n`` more spout emits happened and the cluster is idle (advancing simulated time)."""
    if tracked.topology_id is None:
        raise ValueError("tracked topology was not submitted")
    target = tracked.last_spout_emit + n
    cluster = tracked.cluster
    deadline = Deadline(timeout_secs)
    while tracked.spout_emitted() < target:
        if deadline.expired():
            raise WaitTimeoutError(
                f"tracked topology emitted {tracked.spout_emitted()} of {target} spout tuples in {timeout_secs}s"
            )
        SYSTEM_CLOCK.sleep(0.001)
        if isinstance(cluster.clock, SimulatedClock) and tracked.spout_emitted() < target:
            # nothing can move without time passing (e.g. a spout pacing itself by the clock)
            cluster.wait_idle(max(0.1, deadline.remaining()))
            if tracked.spout_emitted() < target:
                cluster.clock.advance(0.1)
    cluster.wait_idle(max(0.1, deadline.remaining()))
    tracked.last_spout_emit = target
