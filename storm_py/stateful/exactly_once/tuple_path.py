"""This module owns the per-tuple path of the bolts of a topology under exactly_once: :class:`AlignedPath`, which
runs a data tuple straight through the bolt while its
:class:`~storm_py.stateful.exactly_once.aligned_bolt.AlignedBoltExecutor` lets it (a rich bolt's, and a basic bolt's
run by the bolt executor's basic runner), and :class:`FailWatchingCollector`, a rich bolt's collector.  A compiled
build compiles this module: they run for every tuple.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from storm_py.api.components import Anchors, OutputCollector
from storm_py.api.tuple import DEFAULT_STREAM, Tuple
from storm_py.runtime.bolt_collectors import BoltCollector
from storm_py.stateful.exactly_once.coordinator import BARRIER_STREAM_ID


class AlignedPath:
    """exactly_once: a data tuple goes straight to the bolt while the executor sets ``bolt_execute`` (a rich bolt)
    or ``basic_execute`` (a basic bolt), i.e. while its channels are neither blocked by a barrier nor fenced by a
    restart; anything else, and every tuple while it is None, goes to the executor's full path (``other``, or
    ``other_basic`` for a basic bolt's input)."""

    def __init__(self, other: Callable[[Tuple], None], failed: Callable[[Tuple, Exception], None],
                 other_basic: Callable[[Tuple, Any], None], broken: Callable[[], None]) -> None:
        self.bolt_execute: Callable[[Tuple], None] | None = None
        self.basic_execute: Callable[[Tuple, Any], None] | None = None
        self.other = other
        self.failed = failed
        self.other_basic = other_basic
        self.broken = broken

    def execute(self, tup: Tuple) -> None:
        """A rich bolt's input: what raises goes to ``failed``."""
        run = self.bolt_execute
        if run is None or tup.source_stream == BARRIER_STREAM_ID:
            self.other(tup)
            return
        try:
            run(tup)
        except Exception as exc:
            self.failed(tup, exc)

    def execute_basic(self, tup: Tuple, collector: Any) -> None:
        """A basic bolt's input, from the bolt executor's basic runner with its collector (anchoring emits to the
        input; the runner acks the input, or fails it when this raises): what the bolt raises breaks the bolt
        (``broken``) and goes on to the runner, which reports it and fails the input."""
        run = self.basic_execute
        if run is None or tup.source_stream == BARRIER_STREAM_ID:
            self.other_basic(tup, collector)
            return
        try:
            run(tup, collector)
        except Exception:
            self.broken()
            raise


class FailWatchingCollector:
    """exactly_once: the collector a rich bolt sees over any output collector: that one's emits and acks (through
    it, so its hooks see them), and a ``fail`` that first calls ``on_fail`` (a failure breaks the bolt: the next
    barrier fails and every component rolls back).

    Over its task's own collector (a :class:`BoltCollector`, the usual case) each method calls that collector
    natively in a compiled build; over any other, through its methods as Python calls.
    """

    __slots__ = ("_delegate", "_own", "on_fail")

    def __init__(self, delegate: OutputCollector, on_fail: Callable[[], None]) -> None:
        self._delegate = delegate
        #: ``delegate`` when it is a task's own collector (a native call in a compiled build), else None
        self._own: BoltCollector | None = delegate if isinstance(delegate, BoltCollector) else None
        self.on_fail = on_fail

    def emit(self, values: Sequence[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> list[int]:
        own = self._own
        if own is not None:
            return own.emit(values, anchors, stream)
        return self._delegate.emit(values, anchors, stream)  # positional: a compiled collector's fast call

    def emit_direct(self, task_id: int, values: Sequence[Any], anchors: Anchors = None,
                    stream: str = DEFAULT_STREAM) -> None:
        self._delegate.emit_direct(task_id, values, anchors=anchors, stream=stream)

    def ack(self, tup: Tuple) -> None:
        own = self._own
        if own is not None:
            own.ack(tup)
            return
        self._delegate.ack(tup)

    def fail(self, tup: Tuple) -> None:
        self.on_fail()
        self._delegate.fail(tup)

    def reset_timeout(self, tup: Tuple) -> None:
        self._delegate.reset_timeout(tup)

    def report_error(self, exc: BaseException) -> None:
        self._delegate.report_error(exc)
