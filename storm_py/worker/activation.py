"""This module owns when a worker's spouts may emit after its assignment changed: only once no slot of the
assignment still runs the previous layout (bounded by a wait, so a dead worker cannot hold the spouts forever).

A worker of the previous layout drops what it receives for tasks it does not run; a spout that emitted into it
(the checkpoint spout's recovery tuple above all) would learn of the loss only at the message timeout.  Storm
activates a worker's spouts once its connections to every other worker of the assignment are up; here a slot is
ready when its worker's heartbeat lists the slot's executors under the assignment's task counts, or when it has no
heartbeat at all (nothing runs there yet: what is sent to it waits for its worker to bind).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: the key of a worker heartbeat's ``stats`` that names the layout it runs (each component's task count)
LAYOUT_STAT = "layout"

Slot = tuple[str, int]
ExecutorRange = tuple[int, int]


@dataclass(frozen=True)
class Beat:
    """What a slot's heartbeat says it runs: its executors and the task counts of its layout (none: unknown)."""

    executors: tuple[ExecutorRange, ...]
    layout: Mapping[str, int] | None


def beat_of(executors: Sequence[Sequence[int]], stats: Mapping[str, Any]) -> Beat:
    """The :class:`Beat` of a heartbeat's executors and stats (a layout that is not task counts reads as none:
    such a slot is waited for as one running another layout)."""
    raw = stats.get(LAYOUT_STAT)
    layout: dict[str, int] | None = None
    if isinstance(raw, Mapping):
        try:
            layout = {str(k): int(v) for k, v in raw.items()}
        except (TypeError, ValueError):
            layout = None
    return Beat(tuple(sorted((int(r[0]), int(r[1])) for r in executors)), layout)


def stale_slots(
    slots: Mapping[Slot, Sequence[ExecutorRange]],
    task_counts: Mapping[str, int],
    beats: Mapping[Slot, Beat],
    own: Slot,
) -> list[Slot]:
    """The slots of the assignment (``slots``: each slot's executors) whose worker still runs another layout."""
    out = []
    for slot, executors in sorted(slots.items()):
        beat = beats.get(slot)
        if slot == own or beat is None:
            continue
        if beat.executors != tuple(sorted(executors)) or beat.layout != dict(task_counts):
            out.append(slot)
    return out


@dataclass(frozen=True)
class GateDecision:
    """Whether the spouts may emit, and whether they do so only because the wait ran out."""

    open: bool
    timed_out: bool = False


class ActivationGate:
    """Holds a worker's spouts from the moment its assignment changes until every slot runs the new layout.

    ``assignment`` is any value that changes with the assignment (the slots and task counts); once the gate
    opens for one assignment it stays open until the next one.
    """

    def __init__(self, max_wait: float) -> None:
        self.max_wait = max_wait
        self._assignment: object = None
        self._since = 0.0
        self._open = False

    def decide(self, assignment: object, stale: Sequence[Slot], now: float) -> GateDecision:
        """The decision for ``assignment`` given the slots still running another layout."""
        if assignment != self._assignment:
            self._assignment, self._since, self._open = assignment, now, False
        if self._open:
            return GateDecision(True)
        if not stale:
            self._open = True
            return GateDecision(True)
        if now - self._since >= self.max_wait:
            self._open = True
            return GateDecision(True, timed_out=True)
        return GateDecision(False)

    def is_open(self, assignment: object) -> bool:
        """Whether the gate is open for ``assignment`` already (then no heartbeat needs reading)."""
        return self._open and assignment == self._assignment
