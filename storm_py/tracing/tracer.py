"""This module owns a worker's tracer: the wrappers that watch a traced task's inputs and emits, and where the
spans go.

The runtime calls :meth:`Tracer.bolt_runner` for each bolt task and :meth:`Tracer.spout` for each spout task
when ``topology.tracing.otlp.endpoint`` is set (:func:`open_tracer` returns None otherwise, and nothing here
runs).  A bolt's batch runs as it would unless one of its inputs is in a traced tree: then the batch runs one
input at a time and the tuples each input left in the executor's out-buffer (emptied only after the executor's
step) are its children.  A spout's ``next_tuple`` is timed and what it left in the out-buffer read the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from storm_py.api.tuple import Tuple
from storm_py.clock import Clock
from storm_py.config.keys import setting
from storm_py.tracing.spans import Sampler, SpanRecord, bolt_spans, spout_spans

log = logging.getLogger(__name__)

ENDPOINT_KEY = "topology.tracing.otlp.endpoint"
Runner = Callable[[list[Tuple]], None]
OutBuffer = Mapping[int, list[Any]]


class SpanSink(Protocol):
    """Where finished spans go."""

    def export(self, spans: list[SpanRecord]) -> None: ...

    def close(self) -> None: ...


def _marks(out: OutBuffer) -> dict[int, int]:
    return {k: len(v) for k, v in out.items()}


def _new_tuples(out: OutBuffer, marks: Mapping[int, int]) -> list[tuple[int, Tuple]]:
    found: list[tuple[int, Tuple]] = []
    for target, items in out.items():
        for item in items[marks.get(target, 0):]:
            if type(item) is Tuple:
                found.append((target, item))
    return found


class TracedSpout:
    """A spout task seen through the tracer: ``next_tuple`` is timed and its emits read; the rest passes through
    (``wrapped_component`` names the spout, as every wrapper of the runtime does)."""

    def __init__(self, spout: Any, tracer: Tracer, component: str, task: int, out: OutBuffer) -> None:
        self._spout = spout
        self._tracer = tracer
        self._component = component
        self._task = task
        self._out = out

    @property
    def wrapped_component(self) -> Any:
        return self._spout

    def next_tuple(self) -> None:
        out = self._out
        marks = _marks(out)
        wall = self._tracer.clock.wall
        start = wall()
        self._spout.next_tuple()
        emitted = _new_tuples(out, marks)
        if emitted:
            t = self._tracer
            t.emit(spout_spans(self._component, self._task, emitted, t.sampler, t.components, start, wall()))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spout, name)


class Tracer:
    """One worker's tracer (see the module docstring)."""

    def __init__(self, sampler: Sampler, sink: SpanSink, clock: Clock, components: Mapping[int, str],
                 follows_debug: bool = False) -> None:
        self.sampler = sampler
        #: whether the share follows the topology's debug sampling (:meth:`debug_sampling`)
        self.follows_debug = follows_debug
        self.sink = sink
        self.clock = clock
        #: task -> component, for the names of send spans
        self.components = components

    def debug_sampling(self, percent: float) -> None:
        """The topology's debug sampling share changed: follow it unless a share of its own is configured."""
        if self.follows_debug:
            self.sampler.set_percent(percent)

    def emit(self, spans: list[SpanRecord]) -> None:
        """Hand finished spans to the sink (a failing sink loses spans, never tuples)."""
        if not spans:
            return
        try:
            self.sink.export(spans)
        except Exception:
            log.exception("could not export %d spans", len(spans))

    def bolt_runner(self, run: Runner, component: str, task: int, out: OutBuffer) -> Runner:
        """``run`` (a bolt task's batch runner) with its traced inputs' spans."""
        traced = self.sampler.traced
        sampled = self.sampler.sampled
        wall = self.clock.wall

        def traced_run(batch: list[Tuple]) -> None:
            # every input is looked at: a tuple of one tree (the common case) by its root alone, without building
            # its (root, edge) pairs
            for t in batch:
                root = t._root
                if (sampled(root) if root is not None else traced(t)):
                    break
            else:
                run(batch)
                return
            # a traced input runs alone (what it leaves in the out-buffer are its children); the untraced inputs
            # between traced ones run together, in order
            untraced: list[Tuple] = []
            for tup in batch:
                if not traced(tup):
                    untraced.append(tup)
                    continue
                if untraced:
                    run(untraced)
                    untraced = []
                marks = _marks(out)
                start = wall()
                run([tup])
                children = _new_tuples(out, marks)
                self.emit(bolt_spans(component, task, tup, children, self.sampler, self.components, start, wall()))
            if untraced:
                run(untraced)

        return traced_run

    def spout(self, spout: Any, component: str, task: int, out: OutBuffer) -> TracedSpout:
        """Spout task ``spout`` with the spans of its traced emits."""
        return TracedSpout(spout, self, component, task, out)

    def close(self) -> None:
        """Send what is left and stop the sink."""
        try:
            self.sink.close()
        except Exception:
            log.exception("closing the span exporter failed")


def sample_percent(conf: Mapping[str, Any]) -> float | None:
    """``topology.tracing.sample.percent``: the traced share of tuple trees; None: the share follows the
    topology's debug sampling (the percentage its emits are sampled to the event logger with, 0 while off)."""
    given = setting(conf, "topology.tracing.sample.percent")
    return None if given is None else float(given)


def open_tracer(conf: Mapping[str, Any], service: str, worker: str, clock: Clock,
                components: Mapping[int, str]) -> Tracer | None:
    """The tracer ``conf`` asks for (None when ``topology.tracing.otlp.endpoint`` is unset)."""
    endpoint = setting(conf, ENDPOINT_KEY)
    if not endpoint:
        return None
    from storm_py.tracing.otlp import OtlpSink  # opentelemetry is an extra: imported only when tracing is on

    sink = OtlpSink(str(endpoint), service, {"storm_py.worker": worker})
    percent = sample_percent(conf)
    log.info("tracing %s of tuple trees to %s", "the debug-sampled share" if percent is None else f"{percent:g} %",
             endpoint)
    return Tracer(Sampler(percent or 0.0), sink, clock, components, follows_debug=percent is None)
