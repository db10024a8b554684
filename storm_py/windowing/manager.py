"""Storm 2.x's ``WindowManager`` as a pure core: events and watermarks in, expiries and window activations out.

The manager keeps the queue of events (a value and its timestamp in ms) and asks its eviction policy which are
expired, in the window or kept for later; its trigger policy says when the window is evaluated.  Every call
returns the :class:`Step` s it caused, in order: an :class:`Expiry` (events that left for good: the executor acks
them) comes before the :class:`Activation` it belongs to.  Besides evaluations, every ``expire_threshold``
events the queue's expired head is dropped (Storm's compaction) so an idle trigger cannot let it grow.
"""

from __future__ import annotations

from typing import Final, Generic, TypeVar

from mypy_extensions import mypyc_attr

from storm_py.windowing.events import Activation, Event, Expiry, Step
from storm_py.windowing.policies import EXPIRE, KEEP, PROCESS, STOP, EvictionPolicy, TriggerPolicy

T = TypeVar("T")

#: events added between two compactions of the queue (Storm's ``EXPIRE_EVENTS_THRESHOLD``)
EXPIRE_EVENTS_THRESHOLD: Final = 100


@mypyc_attr(allow_interpreted_subclasses=True)
class WindowManager(Generic[T]):
    """The window's queue of events under an eviction and a trigger policy (see the module docstring)."""

    def __init__(
        self, eviction: EvictionPolicy, trigger: TriggerPolicy, expire_threshold: int = EXPIRE_EVENTS_THRESHOLD
    ) -> None:
        self.eviction = eviction
        self.trigger = trigger
        self.expire_threshold = expire_threshold
        self.queue: list[Event[T]] = []
        #: values expired since the last evaluation (the next activation's ``expired``)
        self.expired: list[T] = []
        #: evaluations so far: an event in the window of evaluation ``n`` has ``mark == n`` (so an event whose
        #: mark is not the previous evaluation's is new; an empty evaluation leaves no marks)
        self.evaluations = 0
        self.since_compaction = 0
        #: whether the policies want to see each event (the count policies and processing-time eviction do)
        self.tracking = eviction.tracks_events or trigger.tracks_events

    def start(self, now: int) -> None:
        """Start the trigger policy's clock at ``now`` (ms)."""
        self.trigger.start(now)

    def add(self, value: T, ts: int) -> list[Step[T]]:
        """Track ``value`` with timestamp ``ts`` (ms); return the steps it caused."""
        out: list[Step[T]] = []
        event = Event(value, ts)
        self.queue.append(event)
        if self.tracking:
            self.eviction.track(event)
            self.trigger.track(event, self, out)
        self.since_compaction += 1
        if self.since_compaction >= self.expire_threshold:
            self.scan(False, out)
        return out

    def add_watermark(self, ts: int) -> list[Step[T]]:
        """A watermark: no event with a timestamp before ``ts`` will be processed; evaluate the windows up to it."""
        out: list[Step[T]] = []
        self.trigger.on_watermark(ts, self, out)
        self.since_compaction += 1
        if self.since_compaction >= self.expire_threshold:
            self.scan(False, out)
        return out

    def on_time(self, now: int) -> list[Step[T]]:
        """The clock reads ``now`` (ms): run the evaluations that are due."""
        out: list[Step[T]] = []
        self.trigger.on_time(now, self, out)
        return out

    def next_due(self) -> int | None:
        """When :meth:`on_time` next has something to do (ms), or ``None``."""
        return self.trigger.next_due()

    def evaluate(self, out: list[Step[T]]) -> bool:
        """Evaluate the window under the eviction policy's current context (Storm's ``onTrigger``): append the
        expiry and, for a non-empty window, the activation to ``out``; return whether the window had events."""
        self.evaluations += 1
        values, new = self.scan(True, out)
        expired = self.expired
        self.expired = []
        self.trigger.reset()
        if not values:
            return False
        context = self.eviction.context
        end = context.reference_time if context is not None and context.reference_time is not None else 0
        out.append(Activation(values, new, expired, end))
        return True

    def scan(self, full: bool, out: list[Step[T]]) -> tuple[list[T], list[T]]:
        """Walk the queue under the eviction policy: drop expired events (an :class:`Expiry` step) and, for a
        full scan (an evaluation), return the values in the window and those of them that are new, marking the
        window's events with the evaluation.  A partial scan (compaction) stops at the first event that is not
        expired.  Time policies give their bounds, which are compared inline; others decide event by event."""
        mark = self.evaluations
        previous = mark - 1
        values: list[T] = []
        new: list[T] = []
        gone: list[T] = []
        kept: list[Event[T]] = []
        queue = self.queue
        n = len(queue)
        i = 0
        bounds = self.eviction.time_bounds()
        if bounds is not None:
            expire_to, process_to, stop_after = bounds
            while i < n:
                event = queue[i]
                ts = event.ts
                if ts <= expire_to:
                    gone.append(event.value)
                    i += 1
                    continue
                if not full or ts > stop_after:
                    break
                if ts <= process_to:
                    value = event.value
                    values.append(value)
                    if event.mark != previous:
                        new.append(value)
                    event.mark = mark
                kept.append(event)
                i += 1
        else:
            evict = self.eviction.evict
            while i < n:
                event = queue[i]
                action = evict(event)
                if action == EXPIRE:
                    gone.append(event.value)
                    i += 1
                    continue
                if not full or action == STOP:
                    break
                if action == PROCESS:
                    value = event.value
                    values.append(value)
                    if event.mark != previous:
                        new.append(value)
                    event.mark = mark
                elif action != KEEP:
                    raise ValueError(f"unknown eviction action {action!r}")
                kept.append(event)
                i += 1
        self.since_compaction = 0
        if gone:
            kept.extend(queue[i:])
            self.queue = kept
            self.expired.extend(gone)
            out.append(Expiry(gone))
        return values, new

    # queries of the watermark trigger policies

    def earliest_event_ts(self, after: int, until: int) -> int | None:
        """The earliest timestamp ``ts`` with ``after < ts <= until`` in the queue, or ``None``."""
        best: int | None = None
        for event in self.queue:
            ts = event.ts
            if after < ts <= until and (best is None or ts < best):
                best = ts
        return best

    def event_count(self, reference: int) -> int:
        """How many queued events have a timestamp at or before ``reference``."""
        return sum(1 for event in self.queue if event.ts <= reference)

    def sliding_count_timestamps(self, after: int, until: int, count: int) -> list[int]:
        """The window ends of a count-sliding event-time window: going through the events with
        ``after < ts <= until`` in arrival order, the largest timestamp so far at every ``count``-th of them."""
        ends: list[int] = []
        if until <= after:
            return ends
        seen = 0
        latest: int | None = None
        for event in self.queue:
            ts = event.ts
            if after < ts <= until:
                latest = ts if latest is None or ts > latest else latest
                seen += 1
                if seen % count == 0:
                    ends.append(latest)
        return ends

    def __repr__(self) -> str:
        return (
            f"WindowManager(eviction={type(self.eviction).__name__}, trigger={type(self.trigger).__name__}, "
            f"queued={len(self.queue)})"
        )

