"""``BaseWindowedBolt``: the class users extend for windowed bolts, and its chainable window configuration.

The configuration lands in the component conf under Storm's keys (``topology.bolts.window.length.count``, ...),
as Storm's ``BaseWindowedBolt`` does; a timestamp extractor, which is code, stays on the object.  Given to
``TopologyBuilder.set_bolt``, the bolt runs inside a :class:`~storm_py.windowing.executor.WindowedBoltExecutor`
(:meth:`BaseWindowedBolt.topology_bolt`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from storm_py.api.components import Component, OutputCollector
from storm_py.api.tuple import Fields, Tuple
from storm_py.windowing.executor import WindowedBoltExecutor
from storm_py.windowing.spans import Count, Duration
from storm_py.windowing.spec import (
    LATE_TUPLE_STREAM,
    LENGTH_COUNT,
    LENGTH_DURATION,
    MAX_LAG,
    SLIDING_COUNT,
    SLIDING_DURATION,
    TIMESTAMP_FIELD,
    WATERMARK_INTERVAL,
    TimestampExtractor,
)
from storm_py.windowing.window import TupleWindow

if TYPE_CHECKING:
    from storm_py.api.context import TopologyContext


class FieldTimestamp:
    """The timestamp extractor of ``with_timestamp_field``: the value of one field, which must exist."""

    __slots__ = ("field", "index", "seen")

    def __init__(self, field: str) -> None:
        self.field = field
        #: the fields of the last tuple and the timestamp's position in them (tuples of a stream share fields)
        self.seen: Fields | None = None
        self.index = 0

    def __call__(self, tup: Tuple) -> int:
        fields = tup.fields
        if fields is self.seen:
            value = tup.values[self.index]
            if type(value) is int:
                return value
        try:
            index = fields.index(self.field)
            value = tup.values[index]
        except ValueError:
            raise ValueError(
                f"tuple from {tup.source_component!r} on stream {tup.source_stream!r} has no timestamp field "
                f"{self.field!r} (its fields: {tup.fields.to_list()})"
            ) from None
        self.seen, self.index = fields, index
        if type(value) is int:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(
                f"timestamp field {self.field!r} of a tuple from {tup.source_component!r} must be a number of ms,"
                f" got {value!r}"
            )
        return int(value)


def _span(value: object, what: str) -> Count | Duration:
    if not isinstance(value, (Count, Duration)):
        raise TypeError(f"{what} must be a Count or a Duration, got {value!r}")
    if value.value <= 0:
        raise ValueError(f"{what} must be positive, got {value!r}")
    return value


class BaseWindowedBolt(Component):
    """Storm's ``BaseWindowedBolt``: implement ``execute(window)``; configure the window by chaining.

    ``prepare(conf, context, collector)`` gets the bolt collector: emits from ``execute`` without anchors are
    anchored to every tuple of the window; window tuples are acked when they expire.
    """

    # -------------------------------------------------------------------------------------------- user API

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        """Called once when the task starts."""

    def execute(self, window: TupleWindow[Tuple]) -> None:
        """Process one evaluation of the window."""
        raise NotImplementedError

    def cleanup(self) -> None:
        """The task is shutting down (not guaranteed to be called)."""

    # ------------------------------------------------------------------------------------- configuration

    def _window_conf(self) -> dict[str, Any]:
        conf: dict[str, Any] | None = self.__dict__.get("_window_settings")
        if conf is None:
            conf = self.__dict__["_window_settings"] = {}
        return conf

    def with_window(self, length: Count | Duration, sliding: Count | Duration | None = None) -> Self:
        """A window of ``length`` (tuples or ms) evaluated every ``sliding`` (with every tuple when ``None``)."""
        length = _span(length, "window length")
        conf = self._window_conf()
        for key in (LENGTH_COUNT, LENGTH_DURATION, SLIDING_COUNT, SLIDING_DURATION):
            conf.pop(key, None)
        conf[LENGTH_COUNT if isinstance(length, Count) else LENGTH_DURATION] = length.value
        if sliding is not None:
            sliding = _span(sliding, "sliding interval")
            conf[SLIDING_COUNT if isinstance(sliding, Count) else SLIDING_DURATION] = sliding.value
        return self

    def with_tumbling_window(self, length: Count | Duration) -> Self:
        """Windows of ``length`` that do not overlap (the sliding interval is the length)."""
        return self.with_window(length, length)

    def with_timestamp_field(self, name: str) -> Self:
        """Event time: each tuple's timestamp (ms) is its field ``name``; a tuple without it is failed."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"timestamp field must be a non-empty string, got {name!r}")
        self._window_conf()[TIMESTAMP_FIELD] = name
        self.__dict__["_timestamp_extractor"] = FieldTimestamp(name)
        return self

    def with_timestamp_extractor(self, fn: TimestampExtractor) -> Self:
        """Event time: ``fn(tuple)`` gives each tuple's timestamp in ms."""
        if not callable(fn):
            raise TypeError(f"timestamp extractor must be callable (tuple -> ms), got {fn!r}")
        self._window_conf().pop(TIMESTAMP_FIELD, None)
        self.__dict__["_timestamp_extractor"] = fn
        return self

    def with_lag(self, duration: Duration) -> Self:
        """Event time: timestamps may be out of order by up to ``duration``."""
        if not isinstance(duration, Duration):
            raise TypeError(f"lag must be a Duration, got {duration!r}")
        self._window_conf()[MAX_LAG] = duration.value
        return self

    def with_watermark_interval(self, duration: Duration) -> Self:
        """Event time: how often watermarks are computed (default 1 s)."""
        _span(duration, "watermark interval")
        self._window_conf()[WATERMARK_INTERVAL] = duration.value
        return self

    def with_late_tuple_stream(self, stream_id: str) -> Self:
        """Event time: late tuples go to ``stream_id`` as ``[late_tuple]`` (its values) instead of being dropped."""
        if not isinstance(stream_id, str) or not stream_id:
            raise ValueError(f"late tuple stream must be a non-empty string, got {stream_id!r}")
        self._window_conf()[LATE_TUPLE_STREAM] = stream_id
        return self

    def get_timestamp_extractor(self) -> TimestampExtractor | None:
        """The event-time extractor, or ``None`` for processing time."""
        extractor: TimestampExtractor | None = self.__dict__.get("_timestamp_extractor")
        return extractor

    def get_component_configuration(self) -> dict[str, Any] | None:
        """The window keys set by the chainable configuration."""
        return dict(self._window_conf())

    def topology_bolt(self) -> WindowedBoltExecutor:
        """What runs in the topology: this bolt inside its window executor."""
        return WindowedBoltExecutor(self)

