"""This module owns the names of tasks' state namespaces across rescales: which namespace a task's state lives in,
and what the generations of a rescaled component were.

Storm names a task's state ``<component>-<task id>``.  Task ids are laid out in component order, so changing one
component's task count shifts the ids of the components after it; the names must not shift with them.  Once a
topology was rescaled, nimbus keeps ``topology.state.rescales`` in its conf: each component's first task id at
submit (``first_tasks``) and, for each rescaled component, its task count at every generation (``tasks``, the
submit's first).  A task of a component at generation 0 keeps Storm's name with its submit-time id; at generation
``g > 0`` its name is ``<component>@<g>-<task index>``, a namespace no earlier generation wrote, so the state of
the previous generation stays as it was committed while the new tasks take their shares of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from storm_py.errors import ConfigError

RESCALES: Final = "topology.state.rescales"


@dataclass(frozen=True)
class Rescales:
    """The rescale history of a topology: first task ids at submit and task counts per generation."""

    first_tasks: dict[str, int] = field(default_factory=dict)
    tasks: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, conf: Mapping[str, Any]) -> Rescales:
        """The history in a topology conf (empty when the topology was never rescaled)."""
        raw = conf.get(RESCALES)
        if raw is None:
            return cls()
        try:
            first = {str(c): _count(v) for c, v in dict(raw.get("first_tasks") or {}).items()}
            tasks = {str(c): [_count(n) for n in counts] for c, counts in dict(raw.get("tasks") or {}).items()}
        except (AttributeError, TypeError, ValueError) as err:
            raise ConfigError(f"{RESCALES} is malformed: {err}", key=RESCALES) from err
        if any(not counts for counts in tasks.values()):
            raise ConfigError(f"{RESCALES} lists a component without task counts", key=RESCALES)
        return cls(first, tasks)

    def to_conf(self) -> dict[str, Any]:
        """The JSON form kept in the topology conf."""
        return {"first_tasks": dict(self.first_tasks), "tasks": {c: list(n) for c, n in self.tasks.items()}}

    def generation(self, component: str) -> int:
        """How many times ``component``'s task count changed."""
        return len(self.tasks.get(component, [0])) - 1

    def tasks_at(self, component: str, generation: int) -> int:
        """The task count of ``component`` at ``generation`` (a rescaled component only)."""
        return self.tasks[component][generation]

    def rescaled(self, first_ids: Mapping[str, int], changes: Mapping[str, int],
                 current: Mapping[str, int]) -> Rescales:
        """The history after a rescale from the ``current`` task counts by ``changes`` ({component: new count});
        ``first_ids`` (each component's first task id now) are recorded the first time: the submit's layout."""
        first = dict(self.first_tasks) or dict(first_ids)
        tasks = {c: list(n) for c, n in self.tasks.items()}
        for c, n in sorted(changes.items()):
            if n == current[c]:
                continue
            tasks.setdefault(c, [int(current[c])]).append(int(n))
        return Rescales(first, tasks)


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{value!r} is not a task id or count")
    return value


def namespace(rescales: Rescales, component: str, index: int, task_id: int, generation: int | None = None) -> str:
    """The state namespace of task ``index`` (task id ``task_id`` now) of ``component`` at ``generation`` (its
    current one when not given)."""
    gen = rescales.generation(component) if generation is None else generation
    if gen > 0:
        return f"{component}@{gen}-{index}"
    first = rescales.first_tasks.get(component)
    return f"{component}-{task_id if first is None else first + index}"
