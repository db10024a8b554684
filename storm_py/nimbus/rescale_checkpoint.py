"""This module owns nimbus's decisions on the checkpoint a rescale of the tasks takes first: when to ask for it, how
long to wait for its commit, and when the rescale goes on (with it, or from the last committed checkpoint when it
does not come in time).  Pure: it takes the request, the checkpoint spout's gauges as nimbus read them and ``now``
(wall-clock seconds), and returns decisions; :class:`~storm_py.nimbus.core.Nimbus` drives it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from storm_py.cluster_state.checkpoint_request import SERVED_GAUGE, CheckpointRequest
from storm_py.metrics.reports import CHECKPOINT_TXID

#: how often nimbus reads the heartbeats while it waits for the checkpoint's commit (seconds)
POLL_SECS: Final = 0.1


@dataclass(frozen=True)
class CheckpointReading:
    """What the checkpoint spout's heartbeat gauges say: the last committed txid (-1: none) and the last request
    whose checkpoint committed (``None``: none)."""

    txid: int = -1
    served: int | None = None


def reading_of(gauges: Iterable[Mapping[str, float]]) -> CheckpointReading:
    """The reading of the first executor's gauges that carry a checkpoint txid (the checkpoint spout has one
    task); none found: nothing known."""
    for g in gauges:
        if CHECKPOINT_TXID in g:
            served = g.get(SERVED_GAUGE)
            return CheckpointReading(int(g[CHECKPOINT_TXID]), None if served is None else int(served))
    return CheckpointReading()


def new_request(reading: CheckpointReading, wait_secs: float, timeout_secs: float, now: float) -> CheckpointRequest:
    """The request of a rescale commanded at ``now``: its id is the command's wall-clock milliseconds, and it is
    waited for as long as the rebalance's wait or the message timeout, the longer (a checkpoint whose tuples are
    not done within the message timeout has failed)."""
    return CheckpointRequest(max(1, int(now * 1000)), now, now + max(wait_secs, timeout_secs), reading.txid)


@dataclass(frozen=True)
class CheckpointDecision:
    """Whether the rescale goes on now; if so whether the checkpoint asked for was taken (else it goes on from the
    last committed one) and its txid; if not, in how many seconds to look again."""

    proceed: bool
    taken: bool = False
    txid: int = -1
    recheck_secs: float = 0.0

    def describe(self, request: CheckpointRequest) -> str:
        """What happened, for the log and the topology's errors."""
        if self.taken:
            return f"the checkpoint asked for the rescale committed as txid {self.txid}"
        return (f"no checkpoint asked for the rescale committed within {request.until - request.asked_at:.0f}s: "
                f"the new tasks restore the last committed one (txid {self.txid}) and the spouts replay from it")


def decide(request: CheckpointRequest, due_at: float, reading: CheckpointReading, now: float) -> CheckpointDecision:
    """The rescale's decision at ``now``: it goes on once the rebalance's wait is over (``due_at``) and the
    checkpoint asked for committed, or once the wait for that checkpoint ran out (``request.until``)."""
    taken = reading.served == request.id
    if taken or now >= request.until:
        if now >= due_at:
            return CheckpointDecision(True, taken, reading.txid)
        return CheckpointDecision(False, recheck_secs=due_at - now)
    return CheckpointDecision(False, recheck_secs=min(POLL_SECS, request.until - now))
