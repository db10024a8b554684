"""The bolts the builder generates, thin drivers around a :class:`~storm_py.streams.processors.Pipeline`:
:class:`StreamBolt` (a plain bolt), :class:`WindowedStreamBolt` (a section-8 windowed bolt: each activation runs the
window's values through the chain, then ends the window) and :class:`StatefulStreamBolt` (a section-9 stateful
bolt holding ``update_state_by_key``'s ``KeyValueState``, which ``state_query`` reads).

A bolt fed by windowed bolts holds its inputs until every upstream task has ended the window (one punctuation
tuple per task), then ends its own window, emits anchored to the held inputs and acks them.  A user function
that raises fails the tuple it was given and reports the error; processing goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from storm_py.api.components import Anchors, Bolt, OutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.stateful.api.bolt import BaseStatefulBolt
from storm_py.stateful.state.key_value import KeyValueState
from storm_py.streams.planner import PUNCTUATION, BoltPlan
from storm_py.streams.processors import Pipeline
from storm_py.windowing.bolt import BaseWindowedBolt
from storm_py.windowing.window import TupleWindow


class Driver:
    """What the three generated bolts share: the pipeline, emits with the current anchors, punctuation."""

    def __init__(self, plan: BoltPlan) -> None:
        self.plan = plan
        self.state: KeyValueState | None = None
        self.anchor: Anchors = None
        self.timestamp: int | None = None
        self.held: list[Tuple] = []

    def declare(self, declarer: OutputFieldsDeclarer) -> None:
        for stream, fields in self.plan.outputs.items():
            declarer.declare_stream(stream, list(fields))

    def prepare(self, context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.task = context.this_task_id
        self.pipeline = Pipeline(self.plan, collector.emit, self)
        self.entries = self.pipeline.entries
        #: punctuation input -> {upstream task: windows it ended that this task has not}
        self.ended: dict[tuple[str, str], dict[int, int]] = {
            key: dict.fromkeys(context.get_component_tasks(key[0]), 0) for key in self.plan.punctuation_inputs
        }
        self.punctuations = [s for s in self.plan.outputs if s.endswith(PUNCTUATION)]

    def fast_execute(self) -> Callable[[Tuple], None]:
        """``execute`` for a bolt without punctuation: entries found by stream id alone (the builder's stream ids
        are unique; a spout's ``"default"`` is looked up with its component)."""
        if self.ended:
            return self.execute
        by_stream: dict[str, Callable[[Tuple], None]] = {}
        streams = [stream for _, stream in self.entries]
        for (_, stream), entry in self.entries.items():
            if streams.count(stream) == 1:
                by_stream[stream] = entry
        collector, ack, slow = self.collector, self.collector.ack, self.execute

        def execute(tup: Tuple) -> None:
            entry = by_stream.get(tup.source_stream)
            if entry is None:
                slow(tup)
                return
            self.anchor = tup
            try:
                entry(tup)
            except Exception as exc:  # a user function's failure fails its tuple, nothing more
                collector.report_error(exc)
                collector.fail(tup)
                return
            ack(tup)

        return execute

    def execute(self, tup: Tuple) -> None:
        key = (tup.source_component, tup.source_stream)
        entry = self.entries.get(key)
        if entry is None:
            if key in self.ended:
                self.punctuate(key, tup)
            else:
                self.collector.ack(tup)
            return
        self.anchor = tup
        try:
            entry(tup)
        except Exception as exc:  # a user function's failure fails its tuple, nothing more
            self.collector.report_error(exc)
            self.collector.fail(tup)
            return
        if self.ended:
            self.held.append(tup)
        else:
            self.collector.ack(tup)

    def punctuate(self, key: tuple[str, str], tup: Tuple) -> None:
        """One upstream task ended a window; when all have, this bolt ends it too."""
        counts = self.ended[key]
        counts[tup.source_task] = counts.get(tup.source_task, 0) + 1
        self.collector.ack(tup)
        if any(c == 0 for per_input in self.ended.values() for c in per_input.values()):
            return
        for per_input in self.ended.values():
            for task in per_input:
                per_input[task] -= 1
        held, self.held = self.held, []
        self.anchor = held
        self.end_window()
        for t in held:
            self.collector.ack(t)

    def end_window(self) -> None:
        """Flush the windowed steps and tell the tasks downstream."""
        try:
            self.pipeline.flush()
        except Exception as exc:  # a user function's failure is reported; the next window goes on
            self.collector.report_error(exc)
        for stream in self.punctuations:
            self.collector.emit([self.task], self.anchor, stream)


class DrivenBolt:
    """What every generated bolt shares: the driver of its plan and the streams it declares."""

    def __init__(self, plan: BoltPlan) -> None:
        self.driver = Driver(plan)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.driver.declare(declarer)


class TupleDrivenBolt(DrivenBolt):
    """A generated bolt run a tuple at a time: ``execute`` is the driver's own once prepared (one call less)."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.driver.prepare(context, collector)
        self.execute = self.driver.fast_execute()  # type: ignore[method-assign, assignment]

    def execute(self, tup: Tuple) -> None:
        self.driver.execute(tup)


class StreamBolt(TupleDrivenBolt, Bolt):
    """A generated bolt: a chain of operations."""


class StatefulStreamBolt(TupleDrivenBolt, BaseStatefulBolt):
    """A generated bolt holding ``update_state_by_key``'s state (and the ``state_query`` steps reading it)."""

    def init_state(self, state: KeyValueState) -> None:
        self.driver.state = state


class WindowedStreamBolt(DrivenBolt, BaseWindowedBolt):
    """A generated windowed bolt: each window activation runs the window's values through the chain."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.driver.prepare(context, collector)

    def execute(self, window: TupleWindow[Tuple]) -> None:
        driver = self.driver
        entries = driver.entries
        for tup in window.get():
            entry = entries.get((tup.source_component, tup.source_stream))
            if entry is None:
                continue
            try:
                entry(tup)
            except Exception as exc:  # reported; the window's tuples are acked when they expire
                driver.collector.report_error(exc)
        driver.timestamp = window.get_end_timestamp()  # what the window's results carry as their event time
        driver.end_window()


def generated_bolt(plan: BoltPlan) -> Bolt | BaseWindowedBolt:
    """The bolt that runs ``plan``."""
    if plan.window is not None:
        bolt = WindowedStreamBolt(plan)
        plan.window.configure(bolt)
        return bolt
    if plan.stateful:
        return StatefulStreamBolt(plan)
    return StreamBolt(plan)
