"""What the processors of one Trident bolt share: the task's :class:`TaskScope` (conf, context, states, the wire)
and, per open batch, a :class:`BatchRun` holding each processor's batch state."""

from __future__ import annotations

from typing import Any

from storm_py.api.components import OutputCollector
from storm_py.api.context import TopologyContext


class TaskScope:
    """What processors share in one task: conf, context, the states by id, the wire."""

    __slots__ = ("collector", "conf", "context", "states")

    def __init__(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.conf = conf
        self.context = context
        self.collector = collector
        self.states: dict[int, Any] = {}

    def emit(self, values: list[Any], stream: str) -> None:
        self.collector.emit(values, None, stream)

    def report_error(self, exc: BaseException) -> None:
        self.collector.report_error(exc)


class BatchRun:
    """One batch in one task: its attempt, each processor's batch state, where wire tuples go."""

    __slots__ = ("attempt", "states", "task")

    def __init__(self, attempt: Any, task: TaskScope, size: int) -> None:
        self.attempt = attempt
        self.task = task
        self.states: list[Any] = [None] * size
