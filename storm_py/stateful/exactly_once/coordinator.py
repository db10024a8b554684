"""This module owns the pure core of ``topology.state.guarantee: exactly_once``: the coordinator's decisions and
what a spout task does with them.

Under exactly_once the checkpoint spout sends no tuples.  It *publishes* its decision in its managed state
(:class:`Published`: the txid, the phase, the generation and the txid a restart restores), and every
:class:`~storm_py.stateful.api.spout.StatefulSpout` task reads it every poll, acts on it and *reports* in a
control state of its own (:class:`Report`): the last txid whose barrier tree completed, the last generation whose
restart marker tree completed, the last generation in which something failed.  Barriers and restart markers
travel from the spouts along the data channels (stream ``$barrier``), so each channel carries them in order with
the data; bolts align on them (see :mod:`storm_py.stateful.exactly_once.aligned_bolt`).

- ``COMMITTED(n)``: every interval the coordinator publishes ``PREPARING(n+1)``; each spout snapshots its
  position (prepare ``n+1``) and sends barrier ``n+1``; when every spout reports ``n+1`` prepared, every bolt has
  prepared ``n+1`` too (each barrier tree covers the bolts it reached), and the coordinator publishes
  ``COMMITTED(n+1)``: the decision.  Spouts commit when they see it, bolts when the next barrier or marker tells
  them (it carries the last committed txid).
- any failure (a spout reports one: a barrier tree failed or timed out, a bolt raised or failed a tuple and so
  failed the next barrier) and a phase lasting longer than the message timeout start a *restart*: generation
  ``g+1`` restoring the last committed txid.  Each spout restores its committed position and sends a restart
  marker; a bolt rolls back to the restored txid at the first marker of the new generation, passes it on, and
  drops what any channel still delivers before that channel's marker.  When every spout reports the restart
  done, no data of the old generation is left anywhere, and checkpoints go on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

PREPARING: Final = "PREPARING"
COMMITTED: Final = "COMMITTED"
RESTARTING: Final = "RESTARTING"

# the actions a ``$barrier`` tuple carries: ``[txid, action, generation, committed txid]``
BARRIER: Final = "PREPARE"
RESTART: Final = "RESTART"
BARRIER_STREAM_ID: Final = "$barrier"
BARRIER_FIELDS: Final = ("txid", "action", "generation", "committed")


@dataclass(frozen=True)
class Published:
    """The coordinator's published decision."""

    txid: int
    phase: str
    generation: int
    restore: int

    @property
    def committed(self) -> int:
        """The last txid decided committed."""
        if self.phase == COMMITTED:
            return self.txid
        if self.phase == PREPARING:
            return self.txid - 1
        return self.restore

    def to_list(self) -> list[Any]:
        return [self.txid, self.phase, self.generation, self.restore]

    @classmethod
    def from_saved(cls, saved: object) -> Published:
        """Read a saved decision; anything else than ``[txid, phase, generation, restore]`` is a ``ValueError``."""
        if (
            isinstance(saved, (list, tuple)) and len(saved) == 4 and saved[1] in (PREPARING, COMMITTED, RESTARTING)
            and all(isinstance(saved[i], int) for i in (0, 2, 3))
        ):
            return cls(int(saved[0]), str(saved[1]), int(saved[2]), int(saved[3]))
        raise ValueError(f"the coordinator's saved decision {saved!r} is not [txid, phase, generation, restore]")


#: a topology that never checkpointed
INITIAL: Final = Published(-1, COMMITTED, 0, -1)


@dataclass(frozen=True)
class Report:
    """What one spout task reports: its last prepared txid (barrier tree done), its last restarted generation
    (marker tree done), and the last generation in which it saw a failure (-1: none)."""

    prepared: int = -1
    restarted: int = -1
    failed: int = -1

    def to_dict(self) -> dict[str, int]:
        return {"prepared": self.prepared, "restarted": self.restarted, "failed": self.failed}

    @classmethod
    def from_saved(cls, saved: object) -> Report:
        if isinstance(saved, Mapping):
            return cls(int(saved.get("prepared", -1)), int(saved.get("restarted", -1)), int(saved.get("failed", -1)))
        return cls()


class ExactlyOnceCoordinator:
    """The checkpoint spout's decisions under exactly_once, from the time and the spouts' reports.

    A new coordinator (the spout opened, perhaps after its worker died) starts with a restart: whatever was in
    flight is of an unknown generation.  ``stuck_secs`` bounds a phase (the message timeout): a spout whose
    worker died reports nothing, so the phase is abandoned and a restart begins.
    """

    def __init__(self, saved: Published, interval_secs: float, stuck_secs: float, now: float) -> None:
        self.interval = interval_secs
        self.stuck = stuck_secs
        self.retry_secs = interval_secs / 10
        self.backoff = 0.0
        self.current = saved
        self.last_checkpoint = float("-inf")
        self.phase_since = now
        self.not_before = now
        self.committed_at: float | None = None
        self.pending_restart = True

    def decide(self, reports: Mapping[int, Report], now: float) -> Published | None:
        """The next decision to publish (``None``: keep the current one).  Publish it, then call
        :meth:`published`; when it cannot be published, call :meth:`publish_failed`."""
        cur = self.current
        if self.pending_restart:
            if now < self.not_before:
                return None
            return self._restart(cur)
        if any(r.failed >= cur.generation for r in reports.values()):
            return self._restart(cur)
        if cur.phase != COMMITTED and now - self.phase_since > self.stuck:
            return self._restart(cur)
        if cur.phase == RESTARTING:
            if reports and all(r.restarted >= cur.generation for r in reports.values()):
                return Published(cur.restore, COMMITTED, cur.generation, cur.restore)
            return None
        if cur.phase == PREPARING:
            if all(r.prepared >= cur.txid for r in reports.values()):
                return Published(cur.txid, COMMITTED, cur.generation, cur.txid)
            return None
        if now - self.last_checkpoint > self.interval:
            return Published(cur.txid + 1, PREPARING, cur.generation, cur.txid)
        return None

    def _restart(self, cur: Published) -> Published:
        return Published(cur.committed, RESTARTING, cur.generation + 1, cur.committed)

    def published(self, decision: Published, now: float) -> None:
        """``decision`` is saved and visible to the spouts."""
        restarted = decision.phase == RESTARTING
        if restarted and not self.pending_restart:
            self.backoff = min(self.interval, max(self.retry_secs, self.backoff * 2))
        self.pending_restart = False
        if decision.phase == PREPARING:
            self.last_checkpoint = now
        if decision.phase == COMMITTED and self.current.phase == PREPARING:
            self.committed_at = now
            self.backoff = 0.0
        self.current = decision
        self.phase_since = now

    def publish_failed(self, now: float) -> None:
        """The decision could not be saved (the state backend failed): restart once it can be, after a pause."""
        self.pending_restart = True
        self.backoff = min(self.interval, max(self.retry_secs, self.backoff * 2))
        self.not_before = now + self.backoff


@dataclass(frozen=True)
class SpoutStep:
    """What a spout task does on seeing a decision: in this order, commit its prepared txid, restart (restore
    ``restore`` and send a marker of ``generation``), prepare and send barrier ``prepare``.  ``request_restart``:
    report a failure (a task that joins outside a restart)."""

    commit: int | None = None
    restart: bool = False
    prepare: int | None = None
    request_restart: bool = False


@dataclass
class SpoutView:
    """A spout task's own view: the generation it runs in (``None``: fresh, not started), its prepared and
    committed txids, and whether its step for the current decision is sent (waiting for its tree)."""

    generation: int | None = None
    prepared: int = -1
    committed: int = -1
    requested: int = -1

    def step(self, decision: Published) -> SpoutStep:
        """What to do about ``decision``; updates the view as if it were done."""
        if self.generation is None and decision.phase != RESTARTING:
            if self.requested >= decision.generation:
                return SpoutStep()
            self.requested = decision.generation
            return SpoutStep(request_restart=True)  # joined alone: every task must restart together
        commit = None
        if self.prepared > self.committed and decision.committed >= self.prepared:
            commit = self.committed = self.prepared
        if self.generation is None or decision.generation > self.generation:
            self.generation = decision.generation
            self.prepared = self.committed = decision.restore
            return SpoutStep(commit=commit, restart=True)
        if decision.phase == PREPARING and decision.generation == self.generation and self.prepared < decision.txid:
            self.prepared = decision.txid
            return SpoutStep(commit=commit, prepare=decision.txid)
        return SpoutStep(commit=commit)
