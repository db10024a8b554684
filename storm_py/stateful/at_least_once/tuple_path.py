"""This module owns the per-tuple path of the bolts of a topology under at_least_once: the collector a stateful
bolt sees (:func:`tracking_collector`: its acks held until the checkpoint that covers them commits), and
:class:`DataPath`, which runs each input through the bolt, keeps inputs until the state is initialised and hands
checkpoint tuples to their handler (:class:`~storm_py.stateful.at_least_once.bolt_wrappers.StatefulBoltExecutor`).
A compiled build compiles this module: they run for every tuple.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from storm_py.api.tuple import DEFAULT_STREAM, Tuple
from storm_py.runtime.bolt_collectors import BoltCollector, HeldAcks, HoldingCollector, unanchored
from storm_py.stateful.at_least_once.checkpoint import CHECKPOINT_STREAM_ID


def tracking_collector(collector: Any, component_id: str) -> HoldingCollector | AckTrackingCollector:
    """The collector a stateful bolt sees: the runtime's compiled :class:`HoldingCollector` over a task's own
    collector, an :class:`AckTrackingCollector` over any other."""
    if type(collector) is BoltCollector:
        return HoldingCollector(collector)
    return AckTrackingCollector(collector, component_id)


class AckTrackingCollector:
    """A stateful bolt's collector over any output collector: as :class:`HoldingCollector` (emits must be
    anchored; acks held until released), holding the inputs whole."""

    def __init__(self, delegate: Any, component_id: str) -> None:
        self.delegate = delegate
        self.component_id = component_id
        self.held = HeldAcks()

    def emit(self, values: Sequence[Any], anchors: Any = None, stream: str = DEFAULT_STREAM) -> list[int]:
        if anchors is None:
            unanchored(self.component_id, stream)
        targets: list[int] = self.delegate.emit(values, anchors, stream)
        return targets

    def emit_direct(self, task_id: int, values: Sequence[Any], anchors: Any = None,
                    stream: str = DEFAULT_STREAM) -> None:
        if anchors is None:
            unanchored(self.component_id, stream)
        self.delegate.emit_direct(task_id, values, anchors=anchors, stream=stream)

    def ack(self, tup: Tuple) -> None:
        self.held.whole.append(tup)

    def fail(self, tup: Tuple) -> None:
        self.delegate.fail(tup)

    def reset_timeout(self, tup: Tuple) -> None:
        self.delegate.reset_timeout(tup)

    def report_error(self, exc: BaseException) -> None:
        self.delegate.report_error(exc)

    def take_held(self) -> HeldAcks:
        """The acks held since the last call."""
        held, self.held = self.held, HeldAcks()
        return held

    def release(self, held: HeldAcks) -> None:
        """Ack ``held``'s inputs upstream."""
        for tup in held.whole:
            self.delegate.ack(tup)

    def fail_held(self, held: HeldAcks) -> None:
        """Fail ``held``'s inputs upstream."""
        for tup in held.whole:
            self.delegate.fail(tup)


class DataPath:
    """Routes a stateful bolt's inputs: a checkpoint tuple to ``on_checkpoint``, any other to the bolt's
    ``execute`` once ``initialized``, before that into ``pending``."""

    def __init__(self, execute: Callable[[Tuple], None], on_checkpoint: Callable[[Tuple], None]) -> None:
        self.bolt_execute = execute
        self.on_checkpoint = on_checkpoint
        self.initialized = False
        self.pending: list[Tuple] = []

    def execute(self, tup: Tuple) -> None:
        if tup.source_stream == CHECKPOINT_STREAM_ID:
            self.on_checkpoint(tup)
        elif self.initialized:
            self.bolt_execute(tup)
        else:
            self.pending.append(tup)

    def take_pending(self) -> list[Tuple]:
        """The inputs kept before the state was initialised."""
        pending, self.pending = self.pending, []
        return pending
