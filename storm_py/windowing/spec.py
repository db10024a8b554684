"""A windowed bolt's configuration: Storm's window keys read from a component conf, checked, and turned into a
:class:`~storm_py.windowing.manager.WindowManager` with the policies Storm picks for them.

Also the submit-time check of every windowed component against the topology's message timeout and max spout
pending (Storm's ``WindowedBoltExecutor.validate``), which needs only the component confs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from storm_py.api.tuple import Tuple
from storm_py.config import validate as validate_conf
from storm_py.config.keys import setting
from storm_py.errors import ConfigError, InvalidTopologyException
from storm_py.windowing.manager import WindowManager
from storm_py.windowing.policies import (
    CountEvictionPolicy,
    CountTriggerPolicy,
    EvictionPolicy,
    TimeEvictionPolicy,
    TimeTriggerPolicy,
    TriggerPolicy,
    WatermarkCountEvictionPolicy,
    WatermarkCountTriggerPolicy,
    WatermarkTimeEvictionPolicy,
    WatermarkTimeTriggerPolicy,
)

#: a timestamp extractor: a tuple's event time in ms
TimestampExtractor = Callable[[Tuple], int]

LENGTH_COUNT: Final = "topology.bolts.window.length.count"
LENGTH_DURATION: Final = "topology.bolts.window.length.duration.ms"
SLIDING_COUNT: Final = "topology.bolts.sliding.interval.count"
SLIDING_DURATION: Final = "topology.bolts.sliding.interval.duration.ms"
TIMESTAMP_FIELD: Final = "topology.bolts.tuple.timestamp.field.name"
MAX_LAG: Final = "topology.bolts.tuple.timestamp.max.lag.ms"
WATERMARK_INTERVAL: Final = "topology.bolts.watermark.event.interval.ms"
LATE_TUPLE_STREAM: Final = "topology.bolts.late.tuple.stream"
#: every window key (what a windowed bolt's chainable configuration sets)
WINDOW_KEYS: Final = (
    LENGTH_COUNT, LENGTH_DURATION, SLIDING_COUNT, SLIDING_DURATION, TIMESTAMP_FIELD, MAX_LAG, WATERMARK_INTERVAL,
    LATE_TUPLE_STREAM,
)
MESSAGE_TIMEOUT: Final = "topology.message.timeout.secs"
MAX_SPOUT_PENDING: Final = "topology.max.spout.pending"
ENABLE_TIMEOUTS: Final = "topology.enable.message.timeouts"


@dataclass(frozen=True)
class WindowSpec:
    """The window of one component: exactly one length (count or ms) and one sliding interval (count or ms; a
    window with no sliding interval slides with every tuple), event time or not, lag and watermark interval."""

    length_count: int | None
    length_ms: int | None
    sliding_count: int | None
    sliding_ms: int | None
    event_time: bool
    lag_ms: int
    watermark_interval_ms: int
    late_stream: str | None

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any], event_time: bool, where: str = "windowed bolt") -> WindowSpec:
        """Read the window keys of ``conf`` (a component's merged conf); ``ValueError`` naming what is wrong."""
        validate_conf({k: conf[k] for k in WINDOW_KEYS if k in conf}, f"{where}:")
        length_count = conf.get(LENGTH_COUNT)
        length_ms = conf.get(LENGTH_DURATION)
        if length_count is None and length_ms is None:
            raise ConfigError(f"{where}: window length is not set ({LENGTH_COUNT} or {LENGTH_DURATION})")
        if length_count is not None and length_ms is not None:
            raise ConfigError(f"{where}: window length is set both as a count and as a duration")
        sliding_count = conf.get(SLIDING_COUNT)
        sliding_ms = conf.get(SLIDING_DURATION)
        if sliding_count is not None and sliding_ms is not None:
            raise ConfigError(f"{where}: sliding interval is set both as a count and as a duration")
        if sliding_count is None and sliding_ms is None:
            sliding_count = 1  # Storm's default: the window slides with every tuple
        late = conf.get(LATE_TUPLE_STREAM)
        if late is not None and not event_time:
            raise ValueError(
                f"{where}: a late tuple stream ({late!r}) needs a timestamp field or extractor"
                " (with_timestamp_field / with_timestamp_extractor)"
            )
        return cls(
            length_count=length_count,
            length_ms=length_ms,
            sliding_count=sliding_count,
            sliding_ms=sliding_ms,
            event_time=event_time,
            lag_ms=int(setting(conf, MAX_LAG)),
            watermark_interval_ms=int(setting(conf, WATERMARK_INTERVAL)),
            late_stream=late,
        )

    def describe(self) -> str:
        """The window as a user wrote it, e.g. ``length 20000 ms, sliding 10000 ms``."""
        length = f"{self.length_count} tuples" if self.length_count is not None else f"{self.length_ms} ms"
        sliding = f"{self.sliding_count} tuples" if self.sliding_count is not None else f"{self.sliding_ms} ms"
        return f"window length {length}, sliding {sliding}"

    def eviction_policy(self) -> EvictionPolicy:
        """Storm's choice: count or time, watermark-driven for event time."""
        if self.length_count is not None:
            if self.event_time:
                return WatermarkCountEvictionPolicy(self.length_count)
            return CountEvictionPolicy(self.length_count)
        assert self.length_ms is not None
        if self.event_time:
            return WatermarkTimeEvictionPolicy(self.length_ms, self.lag_ms)
        return TimeEvictionPolicy(self.length_ms)

    def trigger_policy(self) -> TriggerPolicy:
        """Storm's choice: count or time, watermark-driven for event time."""
        if self.sliding_count is not None:
            if self.event_time:
                return WatermarkCountTriggerPolicy(self.sliding_count)
            return CountTriggerPolicy(self.sliding_count)
        assert self.sliding_ms is not None
        if self.event_time:
            return WatermarkTimeTriggerPolicy(self.sliding_ms)
        return TimeTriggerPolicy(self.sliding_ms)

    def manager(self) -> WindowManager[Any]:
        """A fresh window manager with this window's policies."""
        return WindowManager(self.eviction_policy(), self.trigger_policy())

    def start_of(self, end: int) -> int | None:
        """The start of the window ending at ``end``: ``None`` for count-length windows."""
        return end - self.length_ms if self.length_ms is not None else None

    def check_limits(self, conf: Mapping[str, Any], where: str, component: str | None = None) -> None:
        """Storm's ``validate``: the tuples of a window must be able to stay un-acked until they expire, so
        length + sliding (of durations) must fit in the message timeout and (of counts) in max spout pending."""
        span_ms = (self.length_ms or 0) + (self.sliding_ms or 0)
        timeout = conf.get(MESSAGE_TIMEOUT)
        timeouts = setting(conf, ENABLE_TIMEOUTS) is not False
        if span_ms and timeouts and timeout is not None and span_ms > float(timeout) * 1000:
            raise InvalidTopologyException(
                f"{where}: window length + sliding interval ({span_ms} ms; {self.describe()}) is more than "
                f"{MESSAGE_TIMEOUT} ({timeout} s): the window's tuples would time out before they expire",
                component=component,
            )
        count = (self.length_count or 0) + (self.sliding_count or 0)
        pending = conf.get(MAX_SPOUT_PENDING)
        if count and pending is not None and count > int(pending):
            raise InvalidTopologyException(
                f"{where}: window length + sliding interval ({count} tuples; {self.describe()}) is more than "
                f"{MAX_SPOUT_PENDING} ({pending}): the window could never fill",
                component=component,
            )


def is_windowed(conf: Mapping[str, Any]) -> bool:
    """Whether a component conf describes a windowed bolt (it sets a window length)."""
    return conf.get(LENGTH_COUNT) is not None or conf.get(LENGTH_DURATION) is not None


def check_windowed_components(
    component_confs: Mapping[str, Mapping[str, Any]], topology_conf: Mapping[str, Any]
) -> None:
    """The submit-time check of every windowed component (its conf over the topology's);
    :class:`InvalidTopologyException` naming the component, the window and the key it does not fit."""
    for cid, own in sorted(component_confs.items()):
        if not is_windowed(own):
            continue
        merged = {**topology_conf, **own}
        where = f"windowed bolt {cid!r}"
        try:
            # an extractor leaves no trace in the conf: the late stream was checked when the topology was built
            spec = WindowSpec.from_conf(merged, event_time=True, where=where)
        except ValueError as err:
            raise InvalidTopologyException(str(err), component=cid) from err
        spec.check_limits(merged, where, cid)
