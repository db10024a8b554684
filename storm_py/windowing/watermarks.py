"""Storm 2.x's ``WaterMarkEventGenerator`` as a pure core: the event-time clock of a windowed bolt.

Every input stream's latest timestamp is tracked; the watermark is the minimum of them minus the lag, and
there is none before every input stream has delivered a tuple.  A tuple with a timestamp before the last
watermark is late.  The caller asks for a watermark every watermark interval (:meth:`poll`).

Each stream's latest timestamp is kept in a one-element list (its *cell*, :meth:`cell`), so a caller that sees
many tuples of one stream in a row updates the cell itself, without a table lookup per tuple.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from mypy_extensions import mypyc_attr


@mypyc_attr(allow_interpreted_subclasses=True)
class WatermarkGenerator:
    """Tracks the latest timestamp of each input stream and emits watermarks that only move forward."""

    def __init__(self, streams: Iterable[Hashable], lag: int, interval: int) -> None:
        self.streams = frozenset(streams)
        self.lag = lag
        self.interval = interval
        #: each input stream's latest timestamp, in a cell (a one-element list) per stream that delivered one
        self.latest: dict[Hashable, list[int]] = {}
        #: the last watermark emitted (ms); tuples before it are late
        self.watermark = 0
        self.due: int | None = None

    def start(self, now: int) -> None:
        """Poll from ``now`` (ms) on: the first watermark is due one interval later."""
        self.due = now + self.interval

    def track(self, stream: Hashable, ts: int) -> bool:
        """Record a tuple of ``stream`` with timestamp ``ts``; return ``False`` when it is late."""
        cell = self.latest.get(stream)
        if cell is None:
            self.latest[stream] = [ts]
        elif ts > cell[0]:
            cell[0] = ts
        return ts >= self.watermark

    def cell(self, stream: Hashable, ts: int) -> list[int]:
        """The cell of ``stream``'s latest timestamp, created holding ``ts`` when the stream delivers its first
        tuple; the caller keeps ``cell[0]`` the largest timestamp seen (what :meth:`track` does)."""
        cell = self.latest.get(stream)
        if cell is None:
            cell = self.latest[stream] = [ts]
        return cell

    def compute(self) -> int | None:
        """The watermark the tracked timestamps allow now, or ``None`` while some input stream is silent."""
        latest = self.latest
        if not latest or any(s not in latest for s in self.streams):
            return None
        return min(cell[0] for cell in latest.values()) - self.lag

    def advance(self) -> int | None:
        """A new watermark if the tracked timestamps moved it forward (it becomes the late threshold), else ``None``."""
        ts = self.compute()
        if ts is None or ts <= self.watermark:
            return None
        self.watermark = ts
        return ts

    def poll(self, now: int) -> int | None:
        """At ``now`` (ms): once per watermark interval, :meth:`advance`; otherwise ``None``."""
        due = self.due
        if due is None or now < due:
            return None
        while due <= now:
            due += self.interval
        self.due = due
        return self.advance()
