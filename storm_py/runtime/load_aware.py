"""This module owns the arithmetic of load-aware shuffling (Storm's ``LoadAwareShuffleGrouping``): weights from loads.

Pure functions, called when a worker refreshes its loads (never per tuple).  A target's load is a number in
``[0, 1]`` (the share of its receive budget its queue holds).  Each refresh moves every target's weight: a target
within :data:`CLOSE_TO_MIN` of the least loaded one grows by 1 (up to :data:`MAX_WEIGHT`), any other shrinks by 10
(down to 0), so a congested target loses its share quickly and regains it slowly.  The weights become a table of
:data:`TABLE_SIZE` target tasks, each present in proportion to its weight and shuffled; the grouping walks it round
robin, so a tuple costs what plain shuffling costs.

Local-or-shuffle keeps Storm's locality scopes: it prefers its worker's own targets and widens to every target
while their mean load is above the higher bound, coming back once the mean load of all is below the lower bound.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Final

#: a target's weight when it is not congested
MAX_WEIGHT: Final = 100
#: entries of a choice table
TABLE_SIZE: Final = 1000
#: loads within this much of the least loaded target count as not congested
CLOSE_TO_MIN: Final = 0.05
#: how much a weight grows (not congested) or shrinks (congested) per refresh
GROW: Final = 1
SHRINK: Final = 10
#: seconds between two refreshes of a worker's loads and its groupings' tables
REFRESH_SECS: Final = 0.5


def task_load(queued: int, capacity: int) -> float:
    """The load of a task whose queue holds ``queued`` tuples out of ``capacity``: in ``[0, 1]``."""
    if capacity <= 0:
        return 1.0 if queued > 0 else 0.0
    return min(1.0, max(0.0, queued / capacity))


def next_weights(weights: Sequence[int], loads: Sequence[float]) -> list[int]:
    """The weights after one refresh with ``loads`` (same order as ``weights``)."""
    if len(weights) != len(loads):
        raise ValueError(f"{len(weights)} weights for {len(loads)} loads")
    if not loads:
        return []
    floor = min(loads) + CLOSE_TO_MIN
    return [
        min(MAX_WEIGHT, w + GROW) if load <= floor else max(0, w - SHRINK)
        for w, load in zip(weights, loads, strict=True)
    ]


def choice_table(targets: Sequence[int], weights: Sequence[int], rng: random.Random,
                 size: int = TABLE_SIZE) -> list[int]:
    """``size`` target tasks, each about ``size x weight / sum of weights`` times, shuffled.

    Rounding leaves a few slots, filled with copies of entries already placed.  Equal weights (no target
    congested, or all equally) give each target once, shuffled: exactly round robin, as plain shuffling.
    """
    if len(targets) != len(weights):
        raise ValueError(f"{len(targets)} targets for {len(weights)} weights")
    if not targets:
        raise ValueError("a choice table needs at least one target")
    total = sum(weights)
    table: list[int] = []
    if total > 0 and min(weights) != max(weights):
        for target, w in zip(targets, weights, strict=True):
            table.extend([target] * int(w * size / total))
        while len(table) < size:
            table.append(table[rng.randrange(len(table))] if table else targets[0])
    else:
        table = list(targets)
    rng.shuffle(table)
    return table


def widen(local: bool, mean_load: float, lower: float, higher: float) -> bool:
    """Whether local-or-shuffle spreads over every target next: it widens while its scope's mean load is above
    ``higher`` and narrows back to its worker's targets once the mean load of all is below ``lower``."""
    if local:
        return mean_load > higher
    return mean_load >= lower
