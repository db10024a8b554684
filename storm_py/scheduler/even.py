"""Storm's even scheduler: executors spread round-robin over slots interleaved across supervisors.

Pure: given the executors of a topology, how many workers it wants, the free slots and its current healthy
assignment, return executor -> slot.  A topology whose healthy assignment already uses the wanted number of
workers keeps it untouched; otherwise it is laid out afresh over its kept slots plus free ones.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

Slot = tuple[str, int]  # (supervisor id, port)
ExecutorKey = tuple[str, int, int]  # (component, start task, end task)


def interleave_slots(slots: Iterable[Slot]) -> list[Slot]:
    """Slots ordered so consecutive picks land on different supervisors (sorted within a supervisor)."""
    by_node: dict[str, list[int]] = defaultdict(list)
    for node, port in slots:
        by_node[node].append(port)
    nodes = sorted(by_node)
    for n in nodes:
        by_node[n].sort()
    out: list[Slot] = []
    i = 0
    while True:
        added = False
        for n in nodes:
            ports = by_node[n]
            if i < len(ports):
                out.append((n, ports[i]))
                added = True
        if not added:
            return out
        i += 1


def schedule_even(
    executors: list[ExecutorKey],
    num_workers: int,
    free_slots: Iterable[Slot],
    existing: Mapping[ExecutorKey, Slot] | None = None,
    alive_slots: Iterable[Slot] | None = None,
) -> dict[ExecutorKey, Slot]:
    """Assign every executor to a slot, using at most ``num_workers`` slots.

    ``existing`` is the topology's current assignment; entries on slots not in ``alive_slots`` are dropped.
    Returns an empty dict when there is no slot at all.
    """
    alive = set(alive_slots) if alive_slots is not None else None
    kept: dict[ExecutorKey, Slot] = {}
    for ex, slot in (existing or {}).items():
        if ex in executors and (alive is None or slot in alive):
            kept[ex] = slot
    kept_slots = sorted(set(kept.values()))
    if len(kept) == len(executors) and len(kept_slots) == min(num_workers, len(executors)):
        return dict(kept)
    candidates = list(kept_slots) + [s for s in interleave_slots(free_slots) if s not in kept_slots]
    want = max(1, min(num_workers, len(executors)))
    chosen = candidates[:want]
    if not chosen:
        return {}
    ordered = sorted(executors, key=lambda e: (e[1], e[0]))
    return {ex: chosen[i % len(chosen)] for i, ex in enumerate(ordered)}
