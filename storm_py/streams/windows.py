"""The windows of the Stream API (Storm's ``TumblingWindows`` and ``SlidingWindows``): section 8's window
configuration, which :meth:`Window.configure` applies to the windowed bolt the builder generates."""

from __future__ import annotations

from typing import Self

from storm_py.windowing.bolt import BaseWindowedBolt
from storm_py.windowing.spans import Count, Duration


def _span(value: object, what: str) -> Count | Duration:
    if not isinstance(value, (Count, Duration)):
        raise TypeError(f"{what} must be a Count or a Duration, got {type(value).__name__} {value!r}")
    if value.value <= 0:
        raise ValueError(f"{what} must be positive, got {value!r}")
    return value


class Window:
    """A window: its length, its sliding interval and, for event time, timestamp field, lag and late stream."""

    def __init__(self, length: Count | Duration, sliding: Count | Duration) -> None:
        self.length = length
        self.sliding = sliding
        self.timestamp_field: str | None = None
        self.lag: Duration | None = None
        self.late_tuple_stream: str | None = None

    def with_timestamp_field(self, name: str) -> Self:
        """Event time: each value's timestamp (ms) comes from the field ``name`` of the tuples entering the window."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"with_timestamp_field: the field must be a non-empty string, got {name!r}")
        self.timestamp_field = name
        return self

    def with_lag(self, duration: Duration) -> Self:
        """Event time: timestamps may arrive out of order by up to ``duration``."""
        if not isinstance(duration, Duration):
            raise TypeError(f"with_lag: the lag must be a Duration, got {duration!r}")
        self.lag = duration
        return self

    def with_late_tuple_stream(self, stream_id: str) -> Self:
        """Event time: late tuples go to ``stream_id`` instead of being dropped."""
        if not isinstance(stream_id, str) or not stream_id:
            raise ValueError(f"with_late_tuple_stream: the stream must be a non-empty string, got {stream_id!r}")
        self.late_tuple_stream = stream_id
        return self

    def key(self) -> tuple[object, ...]:
        """What makes two windows the same window."""
        return (type(self.length), self.length.value, type(self.sliding), self.sliding.value,
                self.timestamp_field, self.lag.value if self.lag else None, self.late_tuple_stream)

    def configure(self, bolt: BaseWindowedBolt) -> None:
        """Set this window on a windowed bolt (section 8's chainable configuration)."""
        bolt.with_window(self.length, self.sliding)
        if self.timestamp_field is not None:
            bolt.with_timestamp_field(self.timestamp_field)
        if self.lag is not None:
            bolt.with_lag(self.lag)
        if self.late_tuple_stream is not None:
            bolt.with_late_tuple_stream(self.late_tuple_stream)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.length!r}, {self.sliding!r})"


class TumblingWindows(Window):
    """Windows of a fixed length that do not overlap: ``TumblingWindows.of(Count.of(10))``."""

    @classmethod
    def of(cls, length: Count | Duration) -> TumblingWindows:
        """Tumbling windows of ``length`` (a ``Count`` or a ``Duration``)."""
        span = _span(length, "TumblingWindows.of: the length")
        return cls(span, span)


class SlidingWindows(Window):
    """Windows of a length evaluated every sliding interval: ``SlidingWindows.of(Count.of(10), Count.of(5))``."""

    @classmethod
    def of(cls, length: Count | Duration, sliding: Count | Duration) -> SlidingWindows:
        """Windows of ``length`` every ``sliding`` (each a ``Count`` or a ``Duration``)."""
        return cls(_span(length, "SlidingWindows.of: the length"), _span(sliding, "SlidingWindows.of: the sliding"))
