"""This module owns what every executor shares: its host's interface, its counters and the emit rules.

An executor runs one or more tasks of one component.  The worker loop calls ``step(now)`` on every executor in
turn; ``step`` drains the executor's inbox (batches of ``(task, [items])``), fires its timers and, for spouts,
calls ``next_tuple``.  Emits go into ``outbuf`` (target task -> list), which the worker flushes after each step:
tuples between tasks of one worker are handed over as Python objects, in batches, never serialized.

The executors by role live beside it: :mod:`storm_py.runtime.spout_executor`,
:mod:`storm_py.runtime.bolt_executor` (collectors in :mod:`storm_py.runtime.bolt_collectors`) and the acker's
in :mod:`storm_py.runtime.acker`.  What an executor needs from the worker that hosts it is
:class:`ExecutorHost`; :class:`~storm_py.runtime.worker_runtime.WorkerRuntime` is the one implementation.
"""

from __future__ import annotations

import threading
import traceback
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any, Final, NoReturn, Protocol

from mypy_extensions import mypyc_attr

from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Id
from storm_py.clock import Clock
from storm_py.runtime.hooks import add_auto_hooks
from storm_py.runtime.ids import IdSource
from storm_py.runtime.routing import StreamRoute
from storm_py.tracing.tracer import Tracer

#: complete-latency samples kept per spout executor (for percentiles)
LATENCY_SAMPLES: Final = 20000


class ExecutorHost(Protocol):
    """What an executor needs from the worker that runs it."""

    clock: Clock
    conf: dict[str, Any]
    #: acker tasks of the topology (0: tuples are acked as soon as they are emitted)
    num_ackers: int
    #: tuples queued in this worker's executors, and how many may be queued before spouts pause
    backlog: int
    backlog_limit: int
    #: root and edge ids of tuple trees
    ids: IdSource
    acker_for: Callable[[Id], int]
    #: the acker tasks in order: a root's acker is ``acker_tasks[root % len(acker_tasks)]`` (what ``acker_for``
    #: computes; the per-tuple paths index this tuple themselves rather than call it)
    acker_tasks: tuple[int, ...]
    #: the worker loop's wake-up: set when work arrived from outside the loop (a shell bolt's process wrote)
    wake: threading.Event
    #: the tracer of sampled tuple trees (``topology.tracing.otlp.endpoint``); None: no tracing, no tracing code
    #: on any path.  The one point where tracing enters the runtime: executors wrap their user tasks' runners
    #: and spouts with it once, when they prepare (:mod:`storm_py.tracing.tracer`)
    tracer: Tracer | None

    def component_conf(self, component_id: str) -> dict[str, Any]:
        """Topology conf merged with the component's own keys."""
        ...

    def routes_for(self, task: int) -> dict[str, StreamRoute]:
        """Routing of every output stream of ``task``."""
        ...

    def instantiate(self, component_id: str, task: int) -> Any:
        """A private copy of the component object for one task."""
        ...

    def make_context(self, task: int, component_id: str) -> TopologyContext:
        """The context handed to a task."""
        ...

    def report_error(self, component_id: str, task: int, exc: BaseException) -> None:
        """Record an error of a task for the topology summary."""
        ...


class ExecutorStats:
    """Plain counters of one executor (read by heartbeats and the topology summary).

    Bolts count their emits per stream on their tasks' :class:`StreamRoute` s instead of ``emitted`` and
    ``transferred`` (spouts count both).  ``inputs`` maps an input ``(component, stream)`` to
    ``[executed, seconds spent executing]``; timed-out spout trees are counted apart from failed ones; the
    ``skipped_*`` figures are seconds a spout did not call ``next_tuple`` (max spout pending, back pressure,
    inactive).
    """

    __slots__ = (
        "acked", "emitted", "executed", "failed", "inputs", "lat_count", "lat_samples", "lat_sum",
        "process_count", "process_secs", "skipped_backpressure", "skipped_inactive", "skipped_max_spout",
        "timed_out", "transferred",
    )

    def __init__(self) -> None:
        self.emitted = 0
        self.transferred = 0
        self.executed = 0
        self.acked = 0
        self.failed = 0
        self.timed_out = 0
        self.lat_sum = 0.0
        self.lat_count = 0
        self.lat_samples: list[float] = []
        self.inputs: dict[tuple[str, str], list[float]] = {}
        self.skipped_max_spout = 0.0
        self.skipped_backpressure = 0.0
        self.skipped_inactive = 0.0
        #: sampled process latency of bolts that ack through their collector (input to ack; Storm samples too)
        self.process_secs = 0.0
        self.process_count = 0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly snapshot."""
        return {
            "emitted": self.emitted,
            "transferred": self.transferred,
            "executed": self.executed,
            "acked": self.acked,
            "failed": self.failed,
            "timed_out": self.timed_out,
            "complete_latency_ms": (self.lat_sum / self.lat_count) if self.lat_count else 0.0,
            "lat_sum": self.lat_sum,
            "lat_count": self.lat_count,
        }


@mypyc_attr(allow_interpreted_subclasses=True)  # the executors of the asyncio bolts and windows derive from it
class Executor:
    """What every executor has: its tasks, an inbox, an out-buffer and counters."""

    is_spout = False
    is_acker = False

    def __init__(self, rt: ExecutorHost, component_id: str, task_ids: list[int]) -> None:
        self.rt = rt
        self.clock: Clock = rt.clock  # typed: compiled code calls its now() directly
        self.acker_tasks = rt.acker_tasks
        self.component_id = component_id
        self.task_ids = task_ids
        self.inbox: deque[tuple[int, list[Any]]] = deque()
        self.outbuf: defaultdict[int, list[Any]] = defaultdict(list)
        self.stats = ExecutorStats()
        #: the contexts handed to the tasks (their registered metrics are reported every bucket)
        self.contexts: dict[int, TopologyContext] = {}
        #: what watches each task's emits (hooks, debug; see :mod:`storm_py.runtime.taps`), once anything did
        self.watchers: dict[int, Any] = {}
        self.conf = rt.component_conf(component_id)
        freq = self.conf.get("topology.tick.tuple.freq.secs")
        self.tick_freq: float | None = float(freq) if freq else None
        self.next_tick = rt.clock.now() + self.tick_freq if self.tick_freq else float("inf")

    @property
    def busy_secs(self) -> float:
        """Seconds spent executing inputs so far (the load-aware shuffle's busy share)."""
        total = 0.0
        for entry in self.stats.inputs.values():
            total += entry[1]
        return total

    def prepare(self) -> None:
        """Create and prepare the tasks' component objects."""

    def step(self, now: float) -> bool:
        """Do one round of work; return whether anything was done."""
        raise NotImplementedError

    def shutdown(self) -> None:
        """Clean up the tasks' component objects."""

    def components(self) -> dict[int, Any]:
        """The component object of each task (none for the system's executors, such as the acker's)."""
        return {}

    def context_for(self, task: int) -> TopologyContext:
        """The context handed to a task."""
        context = self.contexts.get(task)
        if context is None:
            context = self.contexts[task] = self.rt.make_context(task, self.component_id)
            add_auto_hooks(context, self.conf)
        return context

    def report_error(self, task: int, exc: BaseException) -> None:
        """Record an error with its traceback for the topology summary."""
        self.rt.report_error(self.component_id, task, exc)


def bad_stream(stream: str, route: StreamRoute | None, component_id: str) -> NoReturn:
    """Raise the error of a regular emit on an undeclared or a direct stream (Storm's rules)."""
    if route is None:
        raise ValueError(f"unknown stream {stream!r}: {component_id!r} does not declare it")
    raise ValueError(f"cannot do a regular emit to direct stream {stream!r} of {component_id!r}")


def direct_route(
    routes: dict[str, StreamRoute], stream: str, task_id: int, component_id: str
) -> tuple[StreamRoute, list[int]]:
    """The route and target of an ``emit_direct``: a task that does not subscribe gets nothing (dropped)."""
    route = routes.get(stream)
    if route is None:
        raise ValueError(f"unknown stream {stream!r}: {component_id!r} does not declare it")
    if not route.direct:
        raise ValueError(f"cannot emit_direct to stream {stream!r} of {component_id!r}: it is not direct")
    return route, ([task_id] if task_id in route.direct_targets else [])


def error_text(exc: BaseException) -> str:
    """The error with its traceback, as shown in the topology summary."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
