"""This module owns the checkpoint protocol's pure core: the checkpoint spout's state machine.

Storm's protocol: the checkpoint spout's state is ``(txid, PREPARING | COMMITTING | COMMITTED)``, saved in its own
managed state before each step.  Every interval it moves ``COMMITTED(n)`` to ``PREPARING(n+1)`` and sends
``PREPARE``; when that tuple tree is acked it moves to ``COMMITTING`` and sends ``COMMIT``; when that is acked it
is ``COMMITTED``.  A failed tree (a bolt failed the checkpoint tuple, or it timed out) starts *recovery*, as does
opening the spout: ``PREPARING(n)`` is rolled back (``ROLLBACK``, then ``COMMITTED(n-1)``), ``COMMITTING(n)`` is
committed again (``COMMIT``), and ``COMMITTED(n)`` ends recovery by sending ``INITSTATE`` to every bolt.

:class:`CheckpointCoordinator` takes the events (``now``, acks, fails) and returns what to emit and what to save;
:class:`~storm_py.stateful.at_least_once.checkpoint_spout.CheckpointSpout` drives it.  :class:`CheckpointAsk` follows a
checkpoint asked for out of the interval (a rescale's), under either guarantee.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

CHECKPOINT_COMPONENT_ID: Final = "$checkpointspout"
CHECKPOINT_STREAM_ID: Final = "$checkpoint"
CHECKPOINT_FIELDS: Final = ("txid", "action")

# the checkpoint spout's states
PREPARING: Final = "PREPARING"
COMMITTING: Final = "COMMITTING"
COMMITTED: Final = "COMMITTED"

# the actions a checkpoint tuple carries
PREPARE: Final = "PREPARE"
COMMIT: Final = "COMMIT"
ROLLBACK: Final = "ROLLBACK"
INITSTATE: Final = "INITSTATE"
ACTIONS: Final = (PREPARE, COMMIT, ROLLBACK, INITSTATE)

#: Storm's floor on the checkpoint interval (ms)
MIN_INTERVAL_MS: Final = 100


@dataclass(frozen=True)
class TxState:
    """The checkpoint spout's saved state: the current txid and where its transaction stands."""

    txid: int
    state: str

    def next_state(self, recovering: bool) -> TxState:
        """The state after the current step's tuple tree is acked."""
        if self.state == PREPARING:
            return TxState(self.txid - 1, COMMITTED) if recovering else TxState(self.txid, COMMITTING)
        if self.state == COMMITTING:
            return TxState(self.txid, COMMITTED)
        return self if recovering else TxState(self.txid + 1, PREPARING)

    def next_action(self, recovering: bool) -> str:
        """The action the current step sends."""
        if self.state == PREPARING:
            return ROLLBACK if recovering else PREPARE
        if self.state == COMMITTING:
            return COMMIT
        return INITSTATE if recovering else PREPARE

    def to_list(self) -> list[int | str]:
        """The form saved in the spout's state."""
        return [self.txid, self.state]

    @classmethod
    def from_saved(cls, saved: object) -> TxState:
        """Read a saved state; anything else than ``[txid, state]`` is refused with a ``ValueError``."""
        if (
            isinstance(saved, (list, tuple)) and len(saved) == 2 and isinstance(saved[0], int)
            and saved[1] in (PREPARING, COMMITTING, COMMITTED)
        ):
            return cls(int(saved[0]), str(saved[1]))
        raise ValueError(f"the checkpoint spout's saved state {saved!r} is not [txid, PREPARING|COMMITTING|COMMITTED]")


#: the state of a topology that never checkpointed
INITIAL: Final = TxState(-1, COMMITTED)


@dataclass(frozen=True)
class Emit:
    """A checkpoint tuple to send: ``[txid, action]`` with message id ``txid``."""

    txid: int
    action: str


class CheckpointCoordinator:
    """The checkpoint spout's decisions, given the time and the fate of each checkpoint tuple tree.

    ``save`` is called with each new state before it becomes current (it raises when the state cannot be saved:
    the step is then not taken and is tried again later).  After a failed step the next recovery step waits
    ``retry_secs``, doubling on each failure in a row up to the interval, so a lost backend is retried without
    spinning.
    """

    def __init__(self, current: TxState, interval_secs: float, now: float) -> None:
        self.current = current
        self.interval = interval_secs
        self.recovering = True
        self.in_progress = False
        self.last_checkpoint = float("-inf")
        self.retry_secs = interval_secs / 10
        self.backoff = 0.0
        self.not_before = now
        #: when the last checkpoint was committed (``None``: none since this coordinator started)
        self.committed_at: float | None = None

    def next_emit(self, now: float) -> tuple[Emit | None, TxState | None]:
        """What to send now, and the state to save first (``None``: nothing)."""
        if self.in_progress or now < self.not_before:
            return None, None
        cur = self.current
        if self.recovering:
            return Emit(cur.txid, cur.next_action(True)), None
        if cur.state == COMMITTED:
            if now - self.last_checkpoint <= self.interval:
                return None, None
            nxt = cur.next_state(False)
            return Emit(nxt.txid, nxt.next_action(False)), nxt
        return Emit(cur.txid, cur.next_action(False)), None

    def emitted(self, emit: Emit, saved: TxState | None, now: float) -> None:
        """``emit`` was sent (after ``saved`` was saved, when not ``None``)."""
        if saved is not None:
            self.current = saved
            self.last_checkpoint = now
        self.in_progress = True

    def acked(self, txid: int) -> TxState | None:
        """The tree of ``txid`` completed: the state to save next (``None``: nothing to save).

        Call :meth:`advanced` once it is saved.  An ack of another txid than the current one is ignored.
        """
        self.in_progress = False
        if txid != self.current.txid:
            return None
        nxt = self.current.next_state(self.recovering)
        if nxt == self.current:  # recovery reached a committed state: it is over
            self.recovering = False
            self.backoff = 0.0
            return None
        return nxt

    def advanced(self, saved: TxState, now: float) -> None:
        """``saved`` (what :meth:`acked` returned) is saved and current."""
        if saved.state == COMMITTED:
            self.committed_at = now
            self.backoff = 0.0
        self.current = saved

    def failed(self, now: float) -> None:
        """The current step's tree failed (or its state could not be saved): recover, after a pause."""
        self.in_progress = False
        self.recovering = True
        self.backoff = min(self.interval, max(self.retry_secs, self.backoff * 2))
        self.not_before = now + self.backoff


class CheckpointAsk:
    """A checkpoint asked for at once, out of the interval (nimbus asks before it rescales a topology's tasks).

    ``ask(request)`` records the request; while :meth:`due`, the spout begins a checkpoint as soon as the protocol
    lets it (a checkpoint already under way was begun before the request: it does not count) and calls
    :meth:`begun`; once that checkpoint commits, :meth:`committed` makes ``served`` the request's id; a
    checkpoint that fails or is rolled back (:meth:`abandoned`) leaves the request due.
    """

    def __init__(self) -> None:
        #: the request waiting for a checkpoint (``None``: none)
        self.asked: int | None = None
        #: the request the checkpoint under way was begun for
        self.begun_for: int | None = None
        #: the last request whose checkpoint committed
        self.served: int | None = None

    def ask(self, request: int) -> None:
        """A checkpoint is asked for under ``request`` (asking again for the same request changes nothing)."""
        if request not in (self.asked, self.served):
            self.asked = request

    def due(self) -> bool:
        """Whether a checkpoint should begin now (as soon as the protocol is ready for one)."""
        return self.asked is not None and self.begun_for != self.asked

    def begun(self) -> None:
        """A checkpoint began (its prepare was saved or published)."""
        if self.asked is not None:
            self.begun_for = self.asked

    def committed(self) -> None:
        """The checkpoint under way committed."""
        if self.begun_for is not None:
            self.served = self.begun_for
            if self.asked == self.begun_for:
                self.asked = None
            self.begun_for = None

    def abandoned(self) -> None:
        """The checkpoint under way failed or was rolled back: the request, if any, is due again."""
        self.begun_for = None
