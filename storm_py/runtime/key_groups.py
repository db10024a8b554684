"""This module owns key groups: the fixed partition of a keyed component's keys that its state moves by.

A component with keyed state has ``topology.state.max.parallelism`` key groups (``m``).  A key's group is the
32-bit hash of its grouping values (:func:`storm_py.runtime.groupers.values_hash`) mod ``m``, so it never changes;
with ``n`` tasks, group ``g`` belongs to task index ``g * n // m``: each task owns one contiguous range of groups,
and going from ``n`` to ``n'`` tasks moves whole groups between neighbouring ranges (Flink's assignment).  Every
function here is pure: the fields grouping's chooser, the state executors and the rescale's move plan call them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from storm_py.config.keys import setting

#: the component conf key the checkpoint wiring marks each component with managed state with, and the mark of a
#: stateful bolt's key-value state (the one kind that is keyed, so routed and moved by key group)
STATE_KIND: Final = "topology.state.kind"
KEY_VALUE: Final = "key_value"
MAX_PARALLELISM: Final = "topology.state.max.parallelism"


def keyed_groups(component_conf: Mapping[str, Any], topology_conf: Mapping[str, Any]) -> int | None:
    """The number of key groups of a component with key-value state (its fields groupings route by key group),
    ``None`` for any other component (plain ``hash % n``)."""
    if component_conf.get(STATE_KIND) != KEY_VALUE:
        return None
    return int(setting(topology_conf, MAX_PARALLELISM))


def check_counts(tasks: int, max_parallelism: int) -> None:
    """Refuse a task count or a number of key groups that cannot partition the groups (``ValueError``)."""
    if isinstance(max_parallelism, bool) or not isinstance(max_parallelism, int) or max_parallelism < 1:
        raise ValueError(f"the number of key groups must be a positive integer, got {max_parallelism!r}")
    if isinstance(tasks, bool) or not isinstance(tasks, int) or not 1 <= tasks <= max_parallelism:
        raise ValueError(f"a task count must be an integer from 1 to {max_parallelism} (the key groups), got {tasks!r}")


def key_group(hash32: int, max_parallelism: int) -> int:
    """The key group of a key whose grouping values hash to ``hash32``."""
    return hash32 % max_parallelism


def task_index_of_group(group: int, tasks: int, max_parallelism: int) -> int:
    """The index (0-based, among the component's tasks) of the task that owns key group ``group``."""
    return group * tasks // max_parallelism


def groups_of_task(index: int, tasks: int, max_parallelism: int) -> range:
    """The key groups task ``index`` of ``tasks`` owns: ``g`` with ``g * tasks // m == index``."""
    start = -(-index * max_parallelism // tasks)
    end = -(-(index + 1) * max_parallelism // tasks)
    return range(start, end)


def group_table(tasks: int, max_parallelism: int) -> list[int]:
    """The task index of every key group, by group (what a chooser looks a hash's group up in)."""
    check_counts(tasks, max_parallelism)
    return [task_index_of_group(g, tasks, max_parallelism) for g in range(max_parallelism)]


@dataclass(frozen=True)
class Move:
    """Key groups ``groups`` go from old task index ``source`` to new task index ``target``."""

    source: int
    target: int
    groups: range


def move_plan(old_tasks: int, new_tasks: int, max_parallelism: int) -> list[Move]:
    """Every move of a rescale from ``old_tasks`` to ``new_tasks`` tasks, ordered by target then source.

    Each key group appears in exactly one move (a group staying at the same index is a move to itself), so the
    new tasks together receive every group once.
    """
    check_counts(old_tasks, max_parallelism)
    check_counts(new_tasks, max_parallelism)
    plan: list[Move] = []
    for target in range(new_tasks):
        plan.extend(sources_of(target, old_tasks, new_tasks, max_parallelism))
    return plan


def sources_of(target: int, old_tasks: int, new_tasks: int, max_parallelism: int) -> list[Move]:
    """The moves into new task index ``target``: which old task indexes hold which of its key groups."""
    mine = groups_of_task(target, new_tasks, max_parallelism)
    moves: list[Move] = []
    if not mine:
        return moves
    first = task_index_of_group(mine.start, old_tasks, max_parallelism)
    last = task_index_of_group(mine.stop - 1, old_tasks, max_parallelism)
    for source in range(first, last + 1):
        held = groups_of_task(source, old_tasks, max_parallelism)
        overlap = range(max(held.start, mine.start), min(held.stop, mine.stop))
        if overlap:
            moves.append(Move(source, target, overlap))
    return moves
