"""This module owns emit taps: what watches a task's emits when something asks to (task hooks, ``topology.debug``,
debug sampling to the event logger), and nothing otherwise.

A tap replaces the choosers of each of a task's user streams with one custom chooser that asks the original
choosers for the targets and then reports the emit; :func:`retap` puts the original choosers back when nothing
watches any more, so a task without hooks or debugging runs the plain per-tuple path.  The routes are the
objects the task's collector holds, changed in place on the worker loop's thread.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from storm_py.api.hooks import EmitInfo
from storm_py.api.tuple import Tuple
from storm_py.runtime.eventlogger import EVENTLOG_STREAM
from storm_py.runtime.groupers import Custom, OneTarget
from storm_py.runtime.routing import StreamRoute

log = logging.getLogger(__name__)
#: the logger of ``topology.debug``'s "Emitting" lines (Storm logs them to the worker log)
debug_log = logging.getLogger("storm_py.debug")

#: where a sampled emit goes: ``(task, stream, values)``
Sink = Callable[[int, str, list[Any]], None]
SYSTEM_PREFIX: Final = "__"


@dataclass
class Watchers:
    """What watches one task's emits."""

    hooks: list[Any] = field(default_factory=list)
    log_emits: bool = False  # topology.debug: log every emit
    sample_pct: float = 0.0  # debug sampling: the share of emits sent to the event logger, in percent
    sink: Sink | None = None
    #: the taps installed on the task's routes, by stream
    taps: dict[str, EmitTap] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.hooks) or self.log_emits or (self.sample_pct > 0 and self.sink is not None)


class EmitTap:
    """A custom grouping over a route's own choosers that reports every emit to the task's watchers."""

    def __init__(self, inner: StreamRoute, component_id: str, watchers: Watchers, rng: random.Random) -> None:
        self.inner = inner
        self.component_id = component_id
        self.watchers = watchers
        self.random = rng.random

    def choose_tasks(self, task: int, values: list[Any]) -> list[int]:
        inner = self.inner
        targets = inner.choose(task, values) if inner.choosers else []
        w = self.watchers
        if w.hooks:
            info = EmitInfo(values, inner.stream, task, list(targets))
            for hook in w.hooks:
                hook.emit(info)
        if w.log_emits:
            debug_log.info("Emitting: %s %s %s", self.component_id, inner.stream, values)
        if w.sink is not None and w.sample_pct > 0 and self.random() * 100.0 < w.sample_pct:
            w.sink(task, inner.stream, values)
        return targets


def retap(routes: dict[str, StreamRoute], component_id: str, watchers: Watchers, rng: random.Random) -> None:
    """Tap every user stream of a task for ``watchers``, or untap them when nothing watches."""
    for stream, route in routes.items():
        if route.offpath or stream.startswith(SYSTEM_PREFIX):  # direct and columnar streams are not tapped
            continue
        tap = watchers.taps.get(stream)
        if not watchers:
            if tap is not None:
                del watchers.taps[stream]
                _restore(route, tap.inner.choosers)
            continue
        if tap is None:
            inner = StreamRoute(route.stream, route.fields, False, list(route.choosers), route.direct_targets)
            tap = watchers.taps[stream] = EmitTap(inner, component_id, watchers, rng)
            chooser = Custom(tap)  # type: ignore[arg-type]
            route.choosers = [chooser]
            route.single = chooser
            route.one = None


def _restore(route: StreamRoute, choosers: list[Any]) -> None:
    route.choosers = list(choosers)
    route.single = choosers[0] if len(choosers) == 1 else None
    route.one = route.single if isinstance(route.single, OneTarget) else None


def watch(ex: Any, task: int, sample_pct: float | None = None) -> None:
    """(Re)tap the routes of ``task`` of executor ``ex`` for its hooks, ``topology.debug`` and debug sampling
    (``sample_pct``; ``None`` keeps the current share)."""
    watchers = ex.watchers.get(task)
    if watchers is None:
        watchers = ex.watchers[task] = Watchers(sink=_event_sink(ex, task))
    context = ex.contexts.get(task)
    watchers.hooks = context.hooks if context is not None else []
    watchers.log_emits = bool(ex.conf.get("topology.debug"))
    if sample_pct is not None:
        watchers.sample_pct = sample_pct
    retap(ex.rt.routes_for(task), ex.component_id, watchers, ex.rt.rng)


def _event_sink(ex: Any, task: int) -> Sink | None:
    """Send a sampled emit to the task's event logger (none when the topology runs no event logger)."""
    route = ex.rt.routes_for(task).get(EVENTLOG_STREAM)
    if route is None or not route.choosers:
        return None
    wall = ex.rt.clock.wall
    component = ex.component_id
    outbuf = ex.outbuf

    def send(task: int, stream: str, values: list[Any]) -> None:
        event = [component, task, None, wall(), list(values)]
        for target in route.choose(task, event):
            outbuf[target].append(Tuple(event, route.fields, component, EVENTLOG_STREAM, task, None))

    return send


def debug_pct(options: Mapping[str, Any]) -> float:
    """The sampling share, in percent, of one debug option ``{"enable", "samplingpct"}`` (0: not sampled)."""
    if not options.get("enable"):
        return 0.0
    try:
        pct = float(options.get("samplingpct", 0))
    except (TypeError, ValueError):
        return 0.0
    return min(100.0, max(0.0, pct))


def apply_debug(executors: list[Any], topology_id: str, wanted: Mapping[str, Any]) -> None:
    """Sample each user component's emits to the event logger at its share (the component's own options, else
    the topology's, as Storm); a component not sampled (and not otherwise watched) is untapped."""
    for ex in executors:
        if ex.component_id.startswith(SYSTEM_PREFIX):
            continue
        pct = debug_pct(wanted.get(ex.component_id) or wanted.get(topology_id) or {})
        for task in ex.task_ids:
            watch(ex, task, pct)
