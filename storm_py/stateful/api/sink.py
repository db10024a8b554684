"""This module owns the contract of a sink that takes part in checkpoints under ``topology.state.guarantee:
exactly_once`` (:class:`CheckpointedSink`), the pure ledger such a sink keeps (:class:`SinkLedger`) and the
retry policy of a sink whose store is down (:class:`RetryBackoff`).

A sink writes each checkpoint's work to its store only once the checkpoint commits, together with the txid (so a
checkpoint already in the store is never written again).  Until then the work of checkpoint ``n`` is kept in the
sink's managed state, sealed at ``pre_prepare(n)``: prepared with the state, it survives a crash once ``n``
commits, and a rollback drops it with the state's uncommitted changes.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from storm_py.stateful.state.key_value import NO_TXID, KeyValueState


@runtime_checkable
class CheckpointedSink(Protocol):
    """A bolt the wiring treats as stateful under exactly_once when :meth:`takes_part_in_checkpoints` says so
    (its hooks are :class:`~storm_py.stateful.api.bolt.BaseStatefulBolt`'s); under at_least_once it is a plain bolt,
    unless :meth:`requires_exactly_once`: then a topology of another guarantee is refused at submit."""

    def takes_part_in_checkpoints(self) -> bool: ...

    def requires_exactly_once(self) -> bool: ...

    def init_state(self, state: KeyValueState) -> None: ...

    def pre_prepare(self, txid: int) -> None: ...

    def pre_commit(self, txid: int) -> None: ...

    def pre_rollback(self) -> None: ...


def takes_part(obj: object) -> bool:
    """Whether a bolt object is a :class:`CheckpointedSink` that takes part in checkpoints."""
    return isinstance(obj, CheckpointedSink) and obj.takes_part_in_checkpoints()


class SinkLedger:
    """One sink task's checkpoints: the items of the open checkpoint, the sealed ones (in managed state, keyed by
    txid) and the last committed txid.  :meth:`due` lists the sealed checkpoints to write, oldest first."""

    def __init__(self) -> None:
        self.open: list[Any] = []
        self.state: KeyValueState | None = None
        self.committed = NO_TXID

    def restore(self, state: KeyValueState) -> bool:
        """The state after a (re)start or rollback; True when it is empty (a first run, or a provider that lost
        everything): the store's record of written checkpoints must start over."""
        self.state = state
        self.open = []
        self.committed = state.committed_txid()
        return self.committed == NO_TXID and len(state) == 0

    def add(self, item: Any) -> None:
        self.open.append(item)

    def seal(self, txid: int) -> None:
        """Checkpoint ``txid`` is being prepared: its items go into the state (prepared with it)."""
        assert self.state is not None, "a sink's ledger is sealed before its state is restored"
        self.state.put(txid, self.open)
        self.open = []

    def commit(self, txid: int) -> None:
        self.committed = max(self.committed, txid)

    def rollback(self) -> None:
        self.open = []

    def due(self) -> list[tuple[int, list[Any]]]:
        """The sealed, committed checkpoints not yet written, oldest first."""
        if self.state is None:
            return []
        return sorted((k, list(v)) for k, v in self.state if isinstance(k, int) and k <= self.committed)

    def written(self, txid: int) -> None:
        """Checkpoint ``txid`` is in the store: forget its items (with the next prepare)."""
        assert self.state is not None
        self.state.delete(txid)


class RetryBackoff:
    """When to try a failed write again: from ``initial`` seconds, doubling, at most ``cap`` between attempts;
    a success resets it."""

    def __init__(self, initial: float = 0.1, cap: float = 5.0) -> None:
        self.initial = initial
        self.cap = cap
        self.delay = 0.0
        self.not_before = float("-inf")
        self.failures = 0

    def ready(self, now: float) -> bool:
        return now >= self.not_before

    def failed(self, now: float) -> float:
        """A write failed at ``now``: the delay before the next attempt."""
        self.failures += 1
        self.delay = min(self.cap, self.delay * 2 if self.delay else self.initial)
        self.not_before = now + self.delay
        return self.delay

    def succeeded(self) -> None:
        self.delay = 0.0
        self.failures = 0
        self.not_before = float("-inf")
