"""The window executor: the bolt that runs a :class:`~storm_py.windowing.bolt.BaseWindowedBolt` in a topology
(Storm's ``WindowedBoltExecutor``), a thin driver around the pure :class:`~storm_py.windowing.manager.WindowManager`.

Input tuples go into the window manager with their timestamp: the clock's monotonic time for processing time,
the extractor's for event time, where the :class:`~storm_py.windowing.watermarks.WatermarkGenerator` tells late
tuples (sent to the late stream as ``[values]`` and acked, or acked and logged) and makes watermarks.  Time moves
through tick tuples (the executor asks for them in its component conf: watermarks come on ticks) and, in
processing time, through every input; both read the cluster's clock, so a simulated clock drives windows.  The
windows a bolt sees carry epoch ms: the tuples' own for event time, the wall time of the trigger for processing
time.  Expired tuples are acked; each activation calls the bolt's ``execute`` with a
:class:`~storm_py.windowing.window.TupleWindow`, and emits without explicit anchors are anchored to every tuple
of that window.

Subclasses (stateful windowed bolts) may override :meth:`WindowedBoltExecutor.watermark_streams` and
:meth:`WindowedBoltExecutor.apply`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final, Protocol

from storm_py.api.components import Anchors, Bolt, OutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import DEFAULT_STREAM, SYSTEM_COMPONENT, TICK_STREAM, Fields, Tuple
from storm_py.clock import SYSTEM_CLOCK, Clock
from storm_py.config.keys import setting
from storm_py.windowing.events import Activation, Expiry, Step
from storm_py.windowing.manager import WindowManager
from storm_py.windowing.spec import (
    LATE_TUPLE_STREAM,
    LENGTH_COUNT,
    LENGTH_DURATION,
    SLIDING_DURATION,
    WATERMARK_INTERVAL,
    TimestampExtractor,
    WindowSpec,
)
from storm_py.windowing.watermarks import WatermarkGenerator
from storm_py.windowing.window import TupleWindow

log = logging.getLogger(__name__)

#: the one field of the late tuple stream: the late tuple's values
LATE_TUPLE_FIELD: Final = "late_tuple"
TICK_FREQ: Final = "topology.tick.tuple.freq.secs"
INFINITY: Final = float("inf")
#: the longest interval between tick tuples (s)
MAX_TICK_SECS: Final = 1.0


class WindowedComponent(Protocol):
    """What the executor runs: a :class:`~storm_py.windowing.bolt.BaseWindowedBolt` (its window configuration in
    its component configuration, its code called once per window)."""

    def get_timestamp_extractor(self) -> TimestampExtractor | None: ...

    def get_component_configuration(self) -> dict[str, Any] | None: ...

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None: ...

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None: ...

    def execute(self, window: TupleWindow[Tuple]) -> None: ...

    def cleanup(self) -> None: ...


class WindowedCollector:
    """The bolt collector handed to a windowed bolt: emits without anchors are anchored to the current window."""

    def __init__(self, collector: OutputCollector) -> None:
        self.collector = collector
        #: the tuples of the window being evaluated (empty outside ``execute``)
        self.window: list[Tuple] = []

    def emit(self, values: Sequence[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit ``values``, anchored to ``anchors`` or else to every tuple of the window."""
        return self.collector.emit(values, self.window if anchors is None else anchors, stream)

    def emit_direct(
        self, task_id: int, values: Sequence[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM
    ) -> None:
        """``emit`` to one task of a direct stream."""
        self.collector.emit_direct(task_id, values, self.window if anchors is None else anchors, stream)

    def ack(self, tup: Tuple) -> None:
        """Ack ``tup`` (window tuples are acked for you when they expire)."""
        self.collector.ack(tup)

    def fail(self, tup: Tuple) -> None:
        """Fail ``tup``."""
        self.collector.fail(tup)

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the message timeout of ``tup``'s tree."""
        self.collector.reset_timeout(tup)

    def report_error(self, exc: BaseException) -> None:
        """Show ``exc`` in the topology's errors."""
        self.collector.report_error(exc)

    def __getattr__(self, name: str) -> Any:
        if name == "collector":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.collector, name)  # anything else the bolt collector offers


def tick_secs(conf: dict[str, Any], event_time: bool) -> float | None:
    """How often a windowed bolt needs a tick tuple (s): a tenth of its shortest timer (the sliding interval of
    a processing-time duration trigger, the watermark interval of event time), at most a second; ``None`` when
    it has no timer.  Each tick runs every timer that is due, so late ticks only delay evaluations."""
    timers = []
    if event_time:
        timers.append(int(setting(conf, WATERMARK_INTERVAL)))
    elif conf.get(SLIDING_DURATION) is not None:
        timers.append(int(conf[SLIDING_DURATION]))
    return min(min(timers) / 10_000, MAX_TICK_SECS) if timers else None


class WindowedBoltExecutor(Bolt):
    """Runs a windowed bolt: windows its inputs and calls the bolt's ``execute(window)``."""

    @property
    def wrapped_component(self) -> Any:
        """The user's component this runs (what the runtime hands to it, e.g. credentials, goes there)."""
        return self.bolt

    def __init__(self, bolt: WindowedComponent) -> None:
        self.bolt = bolt
        self.extractor: TimestampExtractor | None = bolt.get_timestamp_extractor()
        self.clock: Clock = SYSTEM_CLOCK
        self.collector: WindowedCollector | None = None
        self.spec: WindowSpec | None = None
        self.manager: WindowManager[Tuple] | None = None
        self.watermarks: WatermarkGenerator | None = None
        self.late_stream: str | None = None
        #: when the next time trigger is due (ms)
        self.due: float = INFINITY
        #: event time: the source component and stream of the last tuple and its stream's watermark cell
        self.source: tuple[str, str] = ("", "")
        self.cell: list[int] = [0]

    # ---------------------------------------------------------------------------------- building the topology

    def get_component_configuration(self) -> dict[str, Any] | None:
        """The bolt's window keys and own configuration, plus the tick tuples that drive its timers."""
        own = dict(self.bolt.get_component_configuration() or {})
        secs = tick_secs(own, self.extractor is not None)
        if secs is not None and TICK_FREQ not in own:
            own[TICK_FREQ] = secs
        return own

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """The late tuple stream (when set) and the bolt's own streams."""
        own = self.bolt.get_component_configuration() or {}
        late = own.get(LATE_TUPLE_STREAM)
        if late is not None:
            if self.extractor is None:
                raise ValueError(
                    f"late tuple stream {late!r} of {type(self.bolt).__name__} needs a timestamp field or extractor"
                    " (with_timestamp_field / with_timestamp_extractor)"
                )
            declarer.declare_stream(late, Fields(LATE_TUPLE_FIELD))
        if own.get(LENGTH_COUNT) is None and own.get(LENGTH_DURATION) is None:
            raise ValueError(f"{type(self.bolt).__name__} has no window: call with_window or with_tumbling_window")
        self.bolt.declare_output_fields(declarer)

    # ---------------------------------------------------------------------------------------------- running

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        where = f"windowed bolt {context.get_this_component_id()!r}"
        self.clock = context.clock
        self.collector = WindowedCollector(collector)
        self.bolt.prepare(conf, context, self.bolt_collector(self.collector))
        spec = self.spec = WindowSpec.from_conf(conf, event_time=self.extractor is not None, where=where)
        self.late_stream = spec.late_stream
        if spec.late_stream is not None:
            try:
                context.get_component_output_fields(context.get_this_component_id(), spec.late_stream)
            except ValueError:
                raise ValueError(
                    f"{where}: late tuple stream {spec.late_stream!r} is not declared: set it with"
                    " with_late_tuple_stream"
                ) from None
        now = self.now()
        self.manager = spec.manager()
        self.manager.start(now)
        due = self.manager.next_due()
        self.due = INFINITY if due is None else due
        if spec.event_time:
            self.watermarks = WatermarkGenerator(
                self.watermark_streams(context), spec.lag_ms, spec.watermark_interval_ms
            )
            self.watermarks.start(now)
            self.source = ("", "")  # no cell of this generator yet
        log.info("%s windows with %s (%s)", where, spec.describe(), "event time" if spec.event_time else
                 "processing time")

    def bolt_collector(self, collector: WindowedCollector) -> Any:
        """What the bolt's ``prepare`` gets to emit through (a subclass may hand it another collector)."""
        return collector

    def watermark_streams(self, context: TopologyContext) -> set[tuple[str, str]]:
        """The input streams the watermark waits for: every stream this component subscribes to."""
        return set(context.get_this_sources())

    def now(self) -> int:
        """The clock's time in ms."""
        return round(self.clock.now() * 1000)

    def execute(self, tup: Tuple) -> None:
        manager = self.manager
        assert manager is not None, "execute before prepare"
        stream = tup.source_stream
        if stream == TICK_STREAM and tup.source_component == SYSTEM_COMPONENT:  # tup.is_tick()
            self.on_time(self.now())
            return
        extractor = self.extractor
        if extractor is None:
            now = self.now()
            if now >= self.due:  # evaluate what is due before the tuple joins (acks expired tuples in time)
                self.on_time(now)
            steps = manager.add(tup, now)
        else:
            ts = extractor(tup)  # raises naming the field: the bolt executor fails the tuple and reports it
            watermarks = self.watermarks
            assert watermarks is not None
            source = self.source
            if stream is source[1] and tup.source_component is source[0]:  # the last tuple's stream: its cell
                cell = self.cell
                if ts > cell[0]:
                    cell[0] = ts
            else:  # WatermarkGenerator.track, keeping the stream's cell for the tuples after this one
                source = self.source = (tup.source_component, stream)
                cell = self.cell = watermarks.cell(source, ts)
                if ts > cell[0]:
                    cell[0] = ts
            if ts < watermarks.watermark:
                self.late(tup, ts, watermarks.watermark)
                return
            steps = manager.add(tup, ts)
        if steps:
            self.apply(steps)

    def late(self, tup: Tuple, ts: int, watermark: int) -> None:
        """A tuple before the watermark: to the late stream as ``[values]`` (or logged), and acked."""
        collector = self.collector
        assert collector is not None
        if self.late_stream is not None:
            collector.emit([tup.values], tup, self.late_stream)
        else:
            log.info("late tuple %r (timestamp %d, watermark %d) is not processed", tup, ts, watermark)
        collector.ack(tup)

    def on_time(self, now: int) -> None:
        """Emit a watermark when one is due and run the time triggers that are due at ``now`` (ms)."""
        manager = self.manager
        assert manager is not None
        watermarks = self.watermarks
        if watermarks is not None:
            watermark = watermarks.poll(now)
            if watermark is not None:
                self.apply(manager.add_watermark(watermark))
        due = manager.next_due()
        if due is not None and due <= now:
            self.apply(manager.on_time(now))
            due = manager.next_due()
        self.due = INFINITY if due is None else due

    def apply(self, steps: list[Step[Tuple]]) -> None:
        """Carry out the window manager's steps: ack expired tuples, hand activations to the bolt."""
        collector = self.collector
        spec = self.spec
        assert collector is not None and spec is not None
        for step in steps:
            if isinstance(step, Expiry):
                ack = collector.ack
                for tup in step.values:
                    ack(tup)
                continue
            window = self.window_of(step)
            collector.window = step.values
            try:
                self.bolt.execute(window)
            except Exception as exc:
                log.exception("windowed bolt %s raised on %r", type(self.bolt).__name__, window)
                collector.report_error(exc)
            finally:
                collector.window = []

    def epoch_ms(self, ts: int) -> int:
        """A window time as users and saved state see it, in epoch ms.  The manager times processing time on the
        clock's monotonic ``now``: that becomes the wall time of the moment (Storm's ``System.currentTimeMillis()``,
        the simulated clock's ``wall()`` under simulated time).  Event time is the tuples' own, unchanged."""
        spec = self.spec
        assert spec is not None
        return ts if spec.event_time else round(self.clock.wall_at(ts / 1000) * 1000)

    def clock_ms(self, epoch_ms: int) -> int:
        """The inverse of :meth:`epoch_ms`: a saved window time back in the manager's time."""
        spec = self.spec
        assert spec is not None
        return epoch_ms if spec.event_time else round(self.clock.instant_at(epoch_ms / 1000) * 1000)

    def window_of(self, step: Activation[Tuple]) -> TupleWindow[Tuple]:
        """The window an activation hands the bolt: start and end in epoch ms (:meth:`epoch_ms`)."""
        spec = self.spec
        assert spec is not None
        end = self.epoch_ms(step.end)
        return TupleWindow(step.values, step.new, step.expired, spec.start_of(end), end)

    def cleanup(self) -> None:
        self.bolt.cleanup()
