"""Storm 2.x's eviction and trigger policies of a window, as pure objects fed timestamps in ms.

An eviction policy decides, event by event, whether an event is expired, in the window, kept for a later
window, or ends the scan; its *context* (the reference time and counts) is set by the trigger policy before each
evaluation.  A trigger policy decides when the window is evaluated: every N tuples (``Count*``), every sliding
interval of the clock (``Time*``), or, for event time, at each window end a watermark has passed
(``Watermark*``).  Trigger policies call back the manager that holds them (:class:`WindowEvaluator`, what
:class:`~storm_py.windowing.manager.WindowManager` offers them); nothing here reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Protocol

from mypy_extensions import mypyc_attr

from storm_py.windowing.events import Event, Step

#: what an eviction policy decides for one event
EXPIRE: Final = 0  # out of the window for good: acked and dropped
PROCESS: Final = 1  # in the window being evaluated
KEEP: Final = 2  # not in this window but maybe in a later one (a timestamp after the reference time)
STOP: Final = 3  # ends the scan: every later event is kept too

#: a lag so large that a watermark eviction scan never stops early
NO_LAG_LIMIT: Final = 1 << 62
INFINITY: Final = float("inf")


@dataclass(frozen=True)
class EvictionContext:
    """What a trigger tells the eviction policy before an evaluation: the reference time (the window's end,
    in ms) and, for watermark count windows, how many events reach up to it or the sliding count."""

    reference_time: int | None
    current_count: int | None = None
    sliding_count: int | None = None


# ---------------------------------------------------------------------------------------------- eviction


@mypyc_attr(allow_interpreted_subclasses=True)
class EvictionPolicy:
    """Decides for each event of the queue whether it is expired, in the window, kept, or ends the scan."""

    def __init__(self) -> None:
        self.context: EvictionContext | None = None
        #: whether :meth:`track` does anything (the manager skips the call otherwise)
        self.tracks_events = False
        #: whether the watermark time trigger must count the events up to each window end for this policy
        self.needs_count = False

    def evict(self, event: Event[Any]) -> int:
        """One of :data:`EXPIRE`, :data:`PROCESS`, :data:`KEEP`, :data:`STOP` for ``event``."""
        raise NotImplementedError

    def time_bounds(self) -> tuple[float, float, float] | None:
        """For a policy that decides by timestamp alone: ``(expire_to, process_to, stop_after)``, meaning
        EXPIRE for ``ts <= expire_to``, STOP for ``ts > stop_after``, PROCESS for ``ts <= process_to`` and
        KEEP otherwise, so the manager can compare inline; ``None`` to be asked event by event."""
        return None

    def track(self, event: Event[Any]) -> None:
        """An event entered the queue."""

    def set_context(self, context: EvictionContext) -> None:
        """The context of the next evaluation."""
        self.context = context


@mypyc_attr(allow_interpreted_subclasses=True)
class CountEvictionPolicy(EvictionPolicy):
    """Keeps the last ``threshold`` events: older ones expire, oldest first."""

    def __init__(self, threshold: int) -> None:
        super().__init__()
        self.threshold = threshold
        self.current_count = 0
        self.tracks_events = True

    def evict(self, event: Event[Any]) -> int:
        if self.current_count > self.threshold:
            self.current_count -= 1
            return EXPIRE
        return PROCESS

    def track(self, event: Event[Any]) -> None:
        self.current_count += 1


@mypyc_attr(allow_interpreted_subclasses=True)
class WatermarkCountEvictionPolicy(CountEvictionPolicy):
    """The last ``threshold`` events up to the watermark-driven reference time; nothing expires before the first
    watermark (the policy cannot decide anything until then)."""

    def __init__(self, threshold: int) -> None:
        super().__init__(threshold)
        self.processed = 0
        self.tracks_events = False
        self.needs_count = True

    def evict(self, event: Event[Any]) -> int:
        context = self.context
        if context is None or context.reference_time is None:
            return STOP
        if event.ts <= context.reference_time and self.processed < self.current_count:
            action = super().evict(event)
            if action == PROCESS:
                self.processed += 1
            return action
        return KEEP

    def track(self, event: Event[Any]) -> None:
        """Counts come from the context, not from arrivals."""

    def set_context(self, context: EvictionContext) -> None:
        super().set_context(context)
        if context.current_count is not None:
            self.current_count = context.current_count
        else:
            self.current_count = self.processed + (context.sliding_count or 0)
        self.processed = 0


@mypyc_attr(allow_interpreted_subclasses=True)
class TimeEvictionPolicy(EvictionPolicy):
    """Keeps the events of the last ``length`` ms before the reference time: ``end - length < ts <= end``."""

    def __init__(self, length: int) -> None:
        super().__init__()
        self.length = length
        self.tracks_events = True
        #: the latest timestamp tracked: "now" in processing time, the reference before any trigger
        self.latest: int | None = None

    def evict(self, event: Event[Any]) -> int:
        context = self.context
        reference = context.reference_time if context is not None else self.latest
        if reference is None:
            return KEEP
        diff = reference - event.ts
        if diff >= self.length:
            return EXPIRE
        if diff < 0:  # after the window's end: a later window's
            return KEEP
        return PROCESS

    def track(self, event: Event[Any]) -> None:
        self.latest = event.ts

    def time_bounds(self) -> tuple[float, float, float] | None:
        if type(self).evict is not TimeEvictionPolicy.evict:  # a subclass decides for itself
            return None
        context = self.context
        reference = context.reference_time if context is not None else self.latest
        if reference is None:
            return None
        return reference - self.length, reference, INFINITY


@mypyc_attr(allow_interpreted_subclasses=True)
class WatermarkTimeEvictionPolicy(TimeEvictionPolicy):
    """:class:`TimeEvictionPolicy` for event time: an event more than ``lag`` ms after the reference time ends
    the scan (no later event can belong to this window, since timestamps are out of order by at most the lag)."""

    def __init__(self, length: int, lag: int = NO_LAG_LIMIT) -> None:
        super().__init__(length)
        self.lag = lag
        self.tracks_events = False

    def evict(self, event: Event[Any]) -> int:
        context = self.context
        reference = context.reference_time if context is not None and context.reference_time is not None else 0
        diff = reference - event.ts
        if diff < -self.lag:
            return STOP
        if diff < 0:
            return KEEP
        return EXPIRE if diff >= self.length else PROCESS

    def time_bounds(self) -> tuple[float, float, float] | None:
        if type(self).evict is not WatermarkTimeEvictionPolicy.evict:  # a subclass decides for itself
            return None
        context = self.context
        reference = context.reference_time if context is not None and context.reference_time is not None else 0
        return reference - self.length, reference, reference + self.lag


# ----------------------------------------------------------------------------------------------- trigger


class WindowEvaluator(Protocol):
    """What a trigger policy asks of the window manager holding it: its eviction policy, an evaluation, and the
    counts and timestamps of its queue."""

    @property
    def eviction(self) -> EvictionPolicy: ...

    def evaluate(self, out: list[Step[Any]]) -> bool: ...

    def earliest_event_ts(self, after: int, until: int) -> int | None: ...

    def event_count(self, reference: int) -> int: ...

    def sliding_count_timestamps(self, after: int, until: int, count: int) -> list[int]: ...


@mypyc_attr(allow_interpreted_subclasses=True)
class TriggerPolicy:
    """Decides when the window is evaluated; each evaluation's steps are appended to ``out``."""

    def __init__(self) -> None:
        #: whether :meth:`track` does anything (the manager skips the call otherwise)
        self.tracks_events = False

    def start(self, now: int) -> None:
        """The window starts at ``now`` (ms)."""

    def track(self, event: Event[Any], manager: WindowEvaluator, out: list[Step[Any]]) -> None:
        """An event arrived."""

    def on_watermark(self, ts: int, manager: WindowEvaluator, out: list[Step[Any]]) -> None:
        """A watermark of ``ts`` arrived."""

    def on_time(self, now: int, manager: WindowEvaluator, out: list[Step[Any]]) -> None:
        """The clock reads ``now`` (ms)."""

    def reset(self) -> None:
        """An evaluation happened."""

    def next_due(self) -> int | None:
        """When :meth:`on_time` next has something to do (ms), or ``None`` for a trigger that ignores the clock."""
        return None


@mypyc_attr(allow_interpreted_subclasses=True)
class CountTriggerPolicy(TriggerPolicy):
    """Evaluates every ``count`` events, with the last event's timestamp as the reference time."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count
        self.current = 0
        self.tracks_events = True

    def track(self, event: Event[Any], manager: WindowEvaluator, out: list[Step[Any]]) -> None:
        self.current += 1
        if self.current >= self.count:
            manager.eviction.set_context(EvictionContext(event.ts))
            manager.evaluate(out)

    def reset(self) -> None:
        self.current = 0


@mypyc_attr(allow_interpreted_subclasses=True)
class TimeTriggerPolicy(TriggerPolicy):
    """Evaluates every ``duration`` ms of the clock, from the start on.

    When the clock jumps past several boundaries at once (a stalled step, simulated time), each boundary is
    evaluated in turn with the boundary itself as the reference time, so windows do not depend on when the
    caller got round to asking.
    """

    def __init__(self, duration: int) -> None:
        super().__init__()
        self.duration = duration
        self.due: int | None = None

    def start(self, now: int) -> None:
        self.due = now + self.duration

    def on_time(self, now: int, manager: WindowEvaluator, out: list[Step[Any]]) -> None:
        due = self.due
        if due is None:
            return
        while due <= now:
            manager.eviction.set_context(EvictionContext(due))
            manager.evaluate(out)
            due += self.duration
        self.due = due

    def next_due(self) -> int | None:
        return self.due


@mypyc_attr(allow_interpreted_subclasses=True)
class WatermarkTimeTriggerPolicy(TriggerPolicy):
    """Evaluates every window end (a multiple of ``sliding`` ms) up to the watermark.

    A window with no events makes the policy skip ahead to the end of the window holding the earliest remaining
    event at or before the watermark (Storm's window-boundary rule: ends are aligned to the sliding interval).
    """

    def __init__(self, sliding: int) -> None:
        super().__init__()
        self.sliding = sliding
        self.next_end = 0

    def on_watermark(self, ts: int, manager: WindowEvaluator, out: list[Step[Any]]) -> None:
        end = self.next_end
        while end <= ts:
            eviction = manager.eviction
            count = manager.event_count(end) if eviction.needs_count else None
            eviction.set_context(EvictionContext(end, current_count=count))
            if manager.evaluate(out):
                end += self.sliding
                continue
            earliest = manager.earliest_event_ts(end, ts)
            if earliest is None:
                break
            end = earliest if earliest % self.sliding == 0 else earliest + self.sliding - earliest % self.sliding
        self.next_end = end


@mypyc_attr(allow_interpreted_subclasses=True)
class WatermarkCountTriggerPolicy(TriggerPolicy):
    """Evaluates at every ``count``-th event (in timestamp order of arrival) up to the watermark."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count
        self.last_ts = 0

    def on_watermark(self, ts: int, manager: WindowEvaluator, out: list[Step[Any]]) -> None:
        for end in manager.sliding_count_timestamps(self.last_ts, ts, self.count):
            manager.eviction.set_context(EvictionContext(end, sliding_count=self.count))
            manager.evaluate(out)
            self.last_ts = end
