"""This module owns the user side of asyncio bolts: :class:`AsyncBolt`, the collector it emits through
(:class:`AsyncOutputCollector`) and the check that its ``execute`` is a coroutine function.

It does not run anything: the runtime's async executor (:mod:`storm_py.runtime.async_executor`) gives each
executor an event loop of its own and drives the executions there.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Sequence
from typing import Any, Protocol

from storm_py.api.components import Component
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import DEFAULT_STREAM, Tuple
from storm_py.errors import InvalidTopologyException

__all__ = ["AsyncBolt", "AsyncOutputCollector", "check_async_bolt"]


class AsyncOutputCollector(Protocol):
    """What an :class:`AsyncBolt` emits through.  Every call but ``report_error`` belongs to an execution: made
    from its coroutine (or a task it started) on the bolt's loop, it is anchored to that execution's input;
    made anywhere else it raises ``RuntimeError``."""

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        """Emit ``values`` on ``stream``, anchored to the execution's input (sent later in ordered mode)."""
        ...

    def emit_direct(self, task_id: int, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        """Emit ``values`` to task ``task_id`` of a direct ``stream``, anchored to the execution's input."""
        ...

    def report_error(self, exc: BaseException) -> None:
        """Report an error to the topology's error list (from any thread)."""
        ...

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the message timeout of ``tup``'s tuple tree."""
        ...


class AsyncBolt(Component):
    """A bolt whose ``execute`` is a coroutine: many inputs of one task are in flight at once on the executor's
    event loop (``topology.async.max.in.flight`` per task).

    An input is acked when its coroutine returns and failed when it raises
    (:class:`~storm_py.errors.FailedException` quietly, anything else reported too) or runs longer than
    ``topology.async.execute.timeout.secs`` (it is cancelled).  ``prepare`` and ``cleanup`` may be plain or
    ``async def``; both run on the bolt's loop.  Combine with
    :class:`~storm_py.stateful.api.bolt.BaseStatefulBolt` for managed state (``class B(AsyncBolt,
    BaseStatefulBolt)``): a checkpoint waits until the executions in flight have completed.
    """

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: AsyncOutputCollector
    ) -> Awaitable[None] | None:
        """Called once on the bolt's loop before the first execution."""
        return None

    async def execute(self, tup: Tuple) -> None:
        """Process one input; returning acks it, raising fails it."""
        raise NotImplementedError

    def cleanup(self) -> Awaitable[None] | None:
        """Called once on the bolt's loop when the task stops."""
        return None


def check_async_bolt(component_id: str, bolt: object) -> None:
    """Refuse an :class:`AsyncBolt` whose ``execute`` is not a coroutine function (a plain function, an async
    generator), naming the component and ``execute``."""
    if not isinstance(bolt, AsyncBolt):
        return
    execute = bolt.execute
    if inspect.iscoroutinefunction(execute):
        return
    kind = "an async generator" if inspect.isasyncgenfunction(execute) else "not a coroutine function"
    raise InvalidTopologyException(
        f"bolt {component_id!r} ({type(bolt).__name__}) is an AsyncBolt whose execute is {kind}: "
        "define it with 'async def execute(self, tup)'",
        component=component_id,
    )
