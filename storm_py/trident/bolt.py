"""The Trident bolt: the processors of one bolt group run per batch as one delegate of a coordinated bolt.

:class:`SubtopologyExecutor` (Storm's ``SubtopologyBolt``) is handed to the transactional builder as a batch
executor, so the existing counting protocol (:mod:`storm_py.transactional.coordinated`) decides when a task
has the whole of a batch and, for a group holding state, that it finishes in the commit phase in txid order.
Input tuples are routed by ``(source component, stream)`` to the processors that read them; ``finished_id``
finishes the processors in declaration order.

A group whose every input is ``global_`` (or ``batch_global``) gets a batch's tuples in one task only; the
other tasks skip that batch, so a global aggregate emits one tuple per batch whatever the parallelism.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from storm_py.api.components import CustomStreamGrouping, OutputCollector
from storm_py.api.tuple import Tuple
from storm_py.errors import FailedException
from storm_py.transactional.attempt import TransactionAttempt
from storm_py.trident.processors import Processor
from storm_py.trident.task import BatchRun, TaskScope

if TYPE_CHECKING:
    from storm_py.api.context import TopologyContext

log = logging.getLogger(__name__)

#: the name of the batch id, the first field of every stream between Trident bolts
BATCH_FIELD = "$tx"


def _key(attempt: TransactionAttempt) -> int:
    """An open batch's key: its txid and attempt id in one int (hashing an attempt is a Python call)."""
    return (attempt.transaction_id << 64) | attempt.attempt_id


class BatchGlobalGrouping(CustomStreamGrouping):
    """``batch_global``: all of a batch to one task, a different task per batch (by txid)."""

    def __init__(self) -> None:
        self.targets: list[int] = []

    def prepare(self, context: Any, stream: Any, target_tasks: list[int]) -> None:
        self.targets = sorted(target_tasks)

    def choose_tasks(self, task_id: int, values: list[Any]) -> list[int]:
        return [self.targets[values[0].transaction_id % len(self.targets)]]


class SubtopologyExecutor:
    """One Trident bolt group as a coordinated bolt's delegate.

    Args:
        processors: the group's processors, in declaration order (wired by the planner).
        routes: ``{(component, stream): [(processor, parent index), ...]}`` of the group's inputs.
        outputs: ``{stream: fields}`` the group sends to other bolts.
        states: ``{state id: state factory}`` of the states the group holds.
        single: ``"global"`` / ``"batch_global"`` when every input reaches one task per batch, else None.
    """

    def __init__(
        self,
        processors: Sequence[Processor],
        routes: dict[tuple[str, str], list[tuple[Processor, int]]],
        outputs: dict[str, list[str]],
        states: dict[int, Any],
        single: str | None = None,
    ) -> None:
        self.processors = list(processors)
        self.routes = routes
        self.outputs = outputs
        self.state_factories = states
        self.single = single
        self._task: TaskScope | None = None
        self._open: dict[int, BatchRun] = {}
        self._tasks: list[int] = []
        self._this_task = -1
        self._entries: dict[tuple[str, str], list[tuple[Any, int]]] = {}
        self._only: tuple[Any, int] | None = None
        self._wire: Any = None
        self._wire_parent = 0
        #: the attempt object of the last tuple and its batch (a batch's tuples mostly carry the same object)
        self._last_attempt: Any = None
        self._last_run: BatchRun | None = None

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        """Make the group's states for this task and prepare every operation."""
        task = TaskScope(conf, context, collector)
        self._tasks = context.get_component_tasks(context.this_component_id)
        self._this_task = context.this_task_id
        index = self._tasks.index(self._this_task) if self._this_task in self._tasks else 0
        for state_id, factory in self.state_factories.items():
            task.states[state_id] = factory.make_state(conf, context, index, len(self._tasks))
        self._task = task
        self._forget()
        for proc in self.processors:
            proc.prepare(task)
        self._entries = {key: [(proc.entry(), i) for proc, i in readers] for key, readers in self.routes.items()}
        readers = list(self._entries.values())
        #: the one processor reading every input (the common case: no stream lookup per tuple)
        self._only = readers[0][0] if len(readers) == 1 and len(readers[0]) == 1 else None
        #: the only reader's entry taking the wire tuple itself, when it has one (no copy without the batch id)
        self._wire = None
        if self._only is not None:
            ((proc, parent),) = next(iter(self.routes.values()))
            self._wire, self._wire_parent = proc.wire_entry(parent), parent

    def _forget(self) -> None:
        """No batch open."""
        self._open = {}
        self._last_attempt = self._last_run = None

    def _run(self, attempt: Any) -> BatchRun:
        """The open batch of ``attempt``, opened now if it is not."""
        key = _key(attempt)
        run = self._open.get(key)
        if run is None:
            assert self._task is not None, "Trident bolt used before prepare"
            run = BatchRun(attempt, self._task, len(self.processors))
            for proc in self.processors:
                run.states[proc.slot] = proc.start(run)
            self._open[key] = run
        return run

    def execute(self, tup: Tuple) -> None:
        """Run one tuple through the processors reading its stream; ack it (fail it on FailedException)."""
        task = self._task
        assert task is not None, "Trident bolt used before prepare"
        values = tup.values
        attempt = values[0]
        run = self._last_run  # the batch of the last tuple when this one carries the same attempt object
        if run is None or attempt is not self._last_attempt:
            run = self._run(attempt)
            self._last_attempt, self._last_run = attempt, run
        try:
            wire = self._wire
            if wire is not None:
                wire(run, self._wire_parent, values)
            elif self._only is not None:
                self._only[0](run, self._only[1], values[1:])
            else:
                body = values[1:]
                for execute, parent in self._entries[(tup.source_component, tup.source_stream)]:
                    execute(run, parent, body)
        except FailedException as exc:
            log.info("failed a tuple of batch %r: %s", values[0], exc)
            task.collector.fail(tup)
            return
        task.collector.ack(tup)

    def _receives(self, attempt: Any) -> bool:
        if self.single is None or not self._tasks:
            return True
        if self.single == "global":
            return self._this_task == self._tasks[0]
        return bool(self._this_task == self._tasks[attempt.transaction_id % len(self._tasks)])

    def finished_id(self, attempt: Any) -> None:
        """The whole batch is here: finish every processor in declaration order."""
        self._last_attempt = self._last_run = None
        if not self._receives(attempt):
            self._open.pop(_key(attempt), None)
            return
        run = self._run(attempt)
        del self._open[_key(attempt)]
        for proc in self.processors:
            proc.finish(run)

    def timeout_id(self, attempt: Any) -> None:
        """The batch will not complete here: forget it."""
        self._last_attempt = self._last_run = None
        self._open.pop(_key(attempt), None)

    def cleanup(self) -> None:
        """Clean up the operations."""
        self._forget()
        for proc in self.processors:
            proc.cleanup()

    def declare_output_fields(self, declarer: Any) -> None:
        """One stream per processor another bolt reads: the batch id, then the processor's fields."""
        for stream, fields in self.outputs.items():
            declarer.declare_stream(stream, [BATCH_FIELD, *fields])

    def get_component_configuration(self) -> dict[str, Any] | None:
        return None
