"""The transaction coordinator: a pure txid state machine and the single spout task that drives it.

:class:`TxCoordinator` holds the in-flight transactions (``txid -> attempt, PROCESSING | PROCESSED |
COMMITTING``) from the next transaction to commit (``current_txid``) on, at most ``max_active`` of them, and
turns inputs (``sync``/``ack``/``fail``, each with ``now``) into decisions:

* :class:`EmitBatch` — start (or restart) a transaction with a new attempt;
* :class:`EmitCommit` — the oldest transaction was processed: commit it (commits are strictly in txid order);
* :class:`Committed` — a commit was acked: ``current_txid`` moved on (persist it, drop older metadata).

A failed attempt of transaction ``N`` drops ``N`` and every later transaction; they restart with new attempt
ids.  Acks and fails of attempts that are no longer current are ignored.

:class:`TransactionalSpoutCoordinator` is the spout (parallelism 1) wrapping it: it persists ``currtx`` and
per-txid metadata under ``/transactional/<id>/coordinator/`` and emits the batch and commit streams with the
attempt as message id.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from storm_py.api.components import OutputFieldsDeclarer, Spout, SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.errors import FailedException
from storm_py.runtime.system_topology import num_ackers
from storm_py.transactional.attempt import TransactionAttempt, random_attempt_id
from storm_py.transactional.spouts import TransactionalCoordinator, TransactionalSpout
from storm_py.transactional.state import (
    INIT_TXID,
    RotatingTransactionalState,
    TransactionalState,
    TransactionalStateError,
    store_from_context,
)
from storm_py.transactional.streams import BATCH_FIELDS, BATCH_STREAM, COMMIT_FIELDS, COMMIT_STREAM

log = logging.getLogger(__name__)

CURRENT_TX = "currtx"
META_DIR = "meta"


class AttemptStatus(enum.Enum):
    """Where an in-flight transaction is."""

    PROCESSING = "processing"
    PROCESSED = "processed"
    COMMITTING = "committing"


@dataclass(frozen=True)
class EmitBatch:
    """Emit the batch tuple of ``attempt`` (a new transaction or a replay)."""

    attempt: TransactionAttempt


@dataclass(frozen=True)
class EmitCommit:
    """Emit the commit tuple of ``attempt``."""

    attempt: TransactionAttempt


@dataclass(frozen=True)
class Committed:
    """Transaction ``txid`` is committed; ``current_txid`` is now ``txid + 1``."""

    txid: int


Decision = EmitBatch | EmitCommit | Committed


@dataclass
class _InFlight:
    attempt: TransactionAttempt
    status: AttemptStatus
    started_at: float


class TxCoordinator:
    """The coordinator's state machine (no I/O): feed it inputs, apply the decisions it returns in order.

    Args:
        current_txid: the next transaction to commit (``currtx``, 1 for a new topology).
        max_active: at most this many transactions in flight (``topology.max.spout.pending``, default 1).
        new_attempt_id: where attempt ids come from (random 63-bit ints by default).
    """

    def __init__(
        self, current_txid: int = INIT_TXID, max_active: int = 1, new_attempt_id: Callable[[], int] | None = None
    ) -> None:
        if max_active < 1:
            raise ValueError(f"max_active must be >= 1, got {max_active}")
        self.current_txid = current_txid
        self.max_active = max_active
        self._new_attempt_id = new_attempt_id or random_attempt_id
        self._active: dict[int, _InFlight] = {}

    def active(self) -> dict[int, tuple[TransactionAttempt, AttemptStatus]]:
        """In-flight transactions by txid (ascending)."""
        return {txid: (f.attempt, f.status) for txid, f in sorted(self._active.items())}

    def oldest_age(self, now: float) -> float:
        """Seconds the oldest in-flight attempt has been running (0 when none is)."""
        return max((now - f.started_at for f in self._active.values()), default=0.0)

    def sync(self, now: float, can_start: Callable[[int], bool]) -> list[Decision]:
        """Commit the current transaction if it is processed; start transactions while there is room.

        ``can_start(txid)`` says whether ``txid`` may start (its metadata is known, or the source is ready);
        starting stops at the first transaction that may not, so in-flight transactions stay contiguous.
        """
        out: list[Decision] = []
        head = self._active.get(self.current_txid)
        if head is not None and head.status is AttemptStatus.PROCESSED:
            head.status = AttemptStatus.COMMITTING
            out.append(EmitCommit(head.attempt))
        if len(self._active) < self.max_active:
            for txid in range(self.current_txid, self.current_txid + self.max_active):
                if txid in self._active:
                    continue
                if not can_start(txid):
                    break
                attempt = TransactionAttempt(txid, self._new_attempt_id())
                self._active[txid] = _InFlight(attempt, AttemptStatus.PROCESSING, now)
                out.append(EmitBatch(attempt))
        return out

    def abort(self, txid: int) -> None:
        """Forget ``txid`` and every later transaction (their batch could not be emitted)."""
        for t in [t for t in self._active if t >= txid]:
            del self._active[t]

    def ack(self, attempt: TransactionAttempt, now: float, can_start: Callable[[int], bool]) -> list[Decision]:
        """The tuple tree of ``attempt`` (batch or commit) completed."""
        flight = self._active.get(attempt.transaction_id)
        if flight is None or flight.attempt != attempt:
            return []
        out: list[Decision] = []
        if flight.status is AttemptStatus.PROCESSING:
            flight.status = AttemptStatus.PROCESSED
        elif flight.status is AttemptStatus.COMMITTING:
            del self._active[attempt.transaction_id]
            self.current_txid = attempt.transaction_id + 1
            out.append(Committed(attempt.transaction_id))
        return out + self.sync(now, can_start)

    def fail(self, attempt: TransactionAttempt, now: float, can_start: Callable[[int], bool]) -> list[Decision]:
        """The tuple tree of ``attempt`` failed: replay its transaction and every later one."""
        flight = self._active.get(attempt.transaction_id)
        if flight is None or flight.attempt != attempt:
            return []
        self.abort(attempt.transaction_id)
        return self.sync(now, can_start)


class TransactionalSpoutCoordinator(Spout):
    """The coordinator spout of a transactional topology (Storm's ``TransactionalSpoutCoordinator``).

    Args:
        spout: the transactional spout (partitioned spouts arrive wrapped in their executor).
        tx_id: the topology's transactional id (keys its persisted state).
        source: the spout the user handed the builder (asked ``is_exhausted()`` by ``complete_topology``).
    """

    def __init__(self, spout: TransactionalSpout, tx_id: str, source: Any = None) -> None:
        self.spout = spout
        self.tx_id = tx_id
        self.source = source if source is not None else spout
        self._core: TxCoordinator | None = None
        self._coordinator: TransactionalCoordinator | None = None
        self._meta: RotatingTransactionalState | None = None
        self._state: TransactionalState | None = None
        self._collector: SpoutOutputCollector | None = None
        self._context: TopologyContext | None = None
        self._active = False

    # ------------------------------------------------------------------------------------------ lifecycle

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        if num_ackers(conf) <= 0:
            raise TransactionalStateError(
                "transactional topologies need ackers (topology.acker.executors is 0): batches would be "
                "committed before they are processed",
                tx_id=self.tx_id,
            )
        startup = getattr(self.source, "startup", None)
        if callable(startup):
            startup()
        self._context = context
        self._collector = collector
        self._state = TransactionalState.coordinator_state(store_from_context(context), self.tx_id)
        self._meta = RotatingTransactionalState(self._state, META_DIR, strict_order=True)
        self._coordinator = self.spout.get_coordinator(conf, context)
        stored = self._state.get_data(CURRENT_TX)
        current = int(stored) if stored is not None else INIT_TXID
        pending = conf.get("topology.max.spout.pending")
        max_active = int(pending) if pending else 1
        self._core = TxCoordinator(current, max_active)
        self._active = True  # a spout is opened on its topology's first activation
        log.info(
            "transactional topology %s: coordinator starts at txid %d (%d in flight at most, metadata kept for %s)",
            self.tx_id, current, max_active, self._meta.txids(),
        )

    def close(self) -> None:
        if self._coordinator is not None:
            self._coordinator.close()

    def activate(self) -> None:
        self._active = True

    def deactivate(self) -> None:
        """No transaction starts (or restarts) while inactive; processed ones still commit."""
        self._active = False

    # ----------------------------------------------------------------------------------------- the engine

    def _now(self) -> float:
        return self._context.clock.now() if self._context is not None else 0.0

    def _can_start(self, txid: int) -> bool:
        assert self._meta is not None and self._coordinator is not None
        return self._active and (self._meta.has_cache(txid) or bool(self._coordinator.is_ready()))

    def _initialize(self, txid: int, prev_meta: Any) -> Any:
        assert self._coordinator is not None
        return self._coordinator.initialize_transaction(txid, prev_meta)

    def _apply(self, decisions: list[Decision]) -> None:
        core, meta, state, collector = self._core, self._meta, self._state, self._collector
        assert core is not None and meta is not None and state is not None and collector is not None
        for d in decisions:
            if isinstance(d, EmitCommit):
                collector.emit([d.attempt], d.attempt, COMMIT_STREAM)
            elif isinstance(d, Committed):
                meta.cleanup_before(d.txid)
                state.set_data(CURRENT_TX, d.txid + 1)
                log.debug("transactional topology %s: committed txid %d", self.tx_id, d.txid)
            else:
                txid = d.attempt.transaction_id
                try:
                    tx_meta = meta.get_state(txid, self._initialize)
                except FailedException as exc:
                    log.warning("could not initialize transaction %d of %s: %s", txid, self.tx_id, exc)
                    core.abort(txid)
                    return
                committed = core.current_txid - 1 if core.current_txid > INIT_TXID else None
                collector.emit([d.attempt, tx_meta, committed], d.attempt, BATCH_STREAM)

    def next_tuple(self) -> None:
        if self._core is None:
            return
        self._apply(self._core.sync(self._now(), self._can_start))

    def ack(self, msg_id: Any) -> None:
        if self._core is None or not isinstance(msg_id, TransactionAttempt):
            return
        self._apply(self._core.ack(msg_id, self._now(), self._can_start))

    def fail(self, msg_id: Any) -> None:
        if self._core is None or not isinstance(msg_id, TransactionAttempt):
            return
        log.info("transactional topology %s: attempt %r failed; replaying from txid %d",
                 self.tx_id, msg_id, msg_id.transaction_id)
        self._apply(self._core.fail(msg_id, self._now(), self._can_start))

    # -------------------------------------------------------------------------------------------- surface

    def current_txid(self) -> int | None:
        """The next transaction to commit (None before ``open``)."""
        return None if self._core is None else self._core.current_txid

    def is_exhausted(self) -> bool:
        """For ``complete_topology``: the user's spout (e.g. a memory spout) emitted and committed everything."""
        exhausted = getattr(self.source, "is_exhausted", None)
        if not callable(exhausted):
            raise TypeError(
                f"transactional spout {type(self.source).__name__} cannot be completed: it has no is_exhausted()"
            )
        return bool(exhausted())

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare_stream(BATCH_STREAM, list(BATCH_FIELDS))
        declarer.declare_stream(COMMIT_STREAM, list(COMMIT_FIELDS))

    def get_component_configuration(self) -> dict[str, Any] | None:
        return {"topology.max.task.parallelism": 1, "topology.transactional.id": self.tx_id}
