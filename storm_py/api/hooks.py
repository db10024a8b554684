"""This module owns the hook interfaces: worker hooks (``TopologyBuilder.add_worker_hook``) and task hooks
(``TopologyContext.add_task_hook``, ``topology.auto.task.hooks``) with the information of Storm's hook events.

A worker hook is serialized with the topology; each worker calls ``start(conf, context)`` on its copy before any
task starts (resources it sets with ``context.set_resource`` reach every task's ``get_resource``) and
``shutdown()`` after the last task stopped.  A task hook sees one task's events; a task adds hooks in
``prepare``/``open`` (or the conf names them), and from then on every emit, ack and fail of the task reaches them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storm_py.api.context import TopologyContext
    from storm_py.api.tuple import Tuple


class WorkerHook:
    """Storm's ``IWorkerHook``: override ``start`` and ``shutdown``."""

    def start(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """Called in every worker of the topology before its tasks are prepared."""

    def shutdown(self) -> None:
        """Called when the worker stops, after its tasks."""


@dataclass(frozen=True)
class EmitInfo:
    """A tuple emitted by ``task_id`` on ``stream`` to ``out_tasks``."""

    values: list[Any]
    stream: str
    task_id: int
    out_tasks: list[int]


@dataclass(frozen=True)
class SpoutAckInfo:
    """A spout tuple tree completed (``complete_latency_ms`` is ``None`` when not measured)."""

    message_id: Any
    spout_task_id: int
    complete_latency_ms: float | None


@dataclass(frozen=True)
class SpoutFailInfo:
    """A spout tuple tree failed or timed out."""

    message_id: Any
    spout_task_id: int
    fail_latency_ms: float | None


@dataclass(frozen=True)
class BoltExecuteInfo:
    """A bolt task executed an input."""

    tuple: Tuple
    executing_task_id: int
    execute_latency_ms: float | None


@dataclass(frozen=True)
class BoltAckInfo:
    """A bolt task acked an input (``process_latency_ms`` is ``None`` when not sampled)."""

    tuple: Tuple
    acking_task_id: int
    process_latency_ms: float | None


@dataclass(frozen=True)
class BoltFailInfo:
    """A bolt task failed an input."""

    tuple: Tuple
    failing_task_id: int
    fail_latency_ms: float | None


class BaseTaskHook:
    """Storm's ``BaseTaskHook``: every event does nothing; override the ones you need."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """Called once, before the first event."""

    def cleanup(self) -> None:
        """Called when the task shuts down."""

    def emit(self, info: EmitInfo) -> None:
        """The task emitted a tuple."""

    def spout_ack(self, info: SpoutAckInfo) -> None:
        """A tuple tree of the spout task completed."""

    def spout_fail(self, info: SpoutFailInfo) -> None:
        """A tuple tree of the spout task failed."""

    def bolt_execute(self, info: BoltExecuteInfo) -> None:
        """The bolt task executed an input."""

    def bolt_ack(self, info: BoltAckInfo) -> None:
        """The bolt task acked an input."""

    def bolt_fail(self, info: BoltFailInfo) -> None:
        """The bolt task failed an input."""
