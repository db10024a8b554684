"""This module owns the pure core of a shell component: its pending tuples and its heartbeat deadlines.

:class:`PendingLedger` maps the ids written to a shell bolt's process to the input tuples they stand for, resolves
anchors and answers, and hands back everything pending when the process is lost; :func:`write_room` bounds what
waits to be written (``topology.shellbolt.max.pending``).  :class:`Heartbeat` decides from ``now`` when a heartbeat
is due and when the process has been silent too long (``topology.subprocess.timeout.secs``).  Neither reads a clock
nor touches a process: the drivers in :mod:`storm_py.multilang.bolt` and :mod:`storm_py.multilang.spout` feed them.
"""

from __future__ import annotations

from typing import Any, Final, Generic, TypeVar

from storm_py.multilang.wire import MAX_ID_DIGITS, ProtocolError

#: seconds between heartbeats sent to a shell bolt (Storm's fixed one second)
HEARTBEAT_INTERVAL: Final = 1.0

T = TypeVar("T")


#: answered ids at the head of the window that are cut off together (fewer: left for the next cut)
_TRIM: Final = 64
#: the window moves to the stragglers' map once it holds more than this many slots per pending id (plus _SLACK)
_SPARSE: Final = 8
_SLACK: Final = 1024


class PendingLedger(Generic[T]):
    """Ids written to the process and the tuples they stand for, until the process acks or fails them.

    Ids are the strings of 1, 2, 3, ... in the order written.  They are kept by number in a window: slot ``i`` of a
    list holds the item of id ``base + i``, None once answered, so finding an id is an index, not a hash (an id
    read as its number, as :func:`~storm_py.multilang.msgpack_wire.scan` reads pystorm's, needs no string at all:
    :meth:`answer_number`).  The answered slots at the head are cut off as answers come.  An id the process keeps
    while many after it are answered would make the window grow with every input: once it is mostly answered
    slots, the ids still pending in it move to a map of stragglers and the window starts over empty.
    """

    def __init__(self) -> None:
        self._window: list[T | None] = []
        #: the id of ``_window[0]``; every slot before ``_head`` is answered
        self._base = 1
        self._head = 0
        self._count = 0
        #: pending ids older than the window (see the class docstring), in the order written
        self._stragglers: dict[int, T] = {}

    def __len__(self) -> int:
        return self._count

    def add(self, item: T) -> str:
        """Record ``item`` as written and return the id it is written under (never reused)."""
        window = self._window
        n = self._base + len(window)
        window.append(item)
        self._count += 1
        if len(window) - self._head > _SPARSE * self._count + _SLACK:
            self._spill()
        return str(n)

    def discard(self, tid: str) -> T | None:
        """Forget ``tid`` (a tuple that could not be written); return its item."""
        return self._take(_number(tid))

    def answer(self, tid: Any, what: str) -> T:
        """The item the process acks or fails (``what``) under ``tid``; an unknown id is a protocol error."""
        return self.answer_number(_number(tid), what, tid)

    def answer_number(self, n: int, what: str, tid: Any = None) -> T:
        """:meth:`answer` of the id the process wrote as the string of the number ``n`` (or as ``tid``)."""
        item = self._take(n)
        if item is None:
            raise ProtocolError(f"{what} of an id that is not pending (unknown, or already acked or failed): "
                                f"{str(n) if tid is None else tid!r}")
        return item

    def anchor(self, tid: Any) -> T:
        """The pending item an emit anchors to; an id that is not pending is a protocol error."""
        item = self._find(_number(tid))
        if item is None:
            raise ProtocolError(f"anchored to {tid!r}, which is not pending (acked, failed or unknown)")
        return item

    def anchor_number(self, n: int) -> T:
        """:meth:`anchor` of the id the process wrote as the string of the number ``n``."""
        item = self._find(n)
        if item is None:
            raise ProtocolError(f"anchored to {str(n)!r}, which is not pending (acked, failed or unknown)")
        return item

    def anchors(self, ids: Any) -> list[T]:
        """The pending items an emit anchors to; an id that is not pending is a protocol error."""
        if ids is None:
            return []
        if not isinstance(ids, list):
            raise ProtocolError(f"anchors must be a list of ids, got {ids!r}")
        out = []
        for tid in ids:
            item = self._find(_number(tid))
            if item is None:
                raise ProtocolError(f"anchored to {tid!r}, which is not pending (acked, failed or unknown)")
            out.append(item)
        return out

    def drain(self) -> list[T]:
        """Everything pending, in the order it was written; the ledger is empty afterwards."""
        items = list(self._stragglers.values())
        items.extend([item for item in self._window[self._head:] if item is not None])
        self._stragglers.clear()
        self._base += len(self._window)
        self._window.clear()
        self._head = 0
        self._count = 0
        return items

    def _find(self, n: int) -> T | None:
        """The item pending under id ``n``; None: not pending."""
        window = self._window
        i = n - self._base
        if self._head <= i < len(window):
            return window[i]
        if i < 0 and self._stragglers:
            return self._stragglers.get(n)
        return None

    def _take(self, n: int) -> T | None:
        """The item pending under id ``n``, no longer pending; None: not pending."""
        window = self._window
        i = n - self._base
        if self._head <= i < len(window):
            item = window[i]
            if item is not None:
                window[i] = None
                self._count -= 1
                if i == self._head:
                    self._advance()
            return item
        if i < 0 and self._stragglers:
            item = self._stragglers.pop(n, None)
            if item is not None:
                self._count -= 1
            return item
        return None

    def _advance(self) -> None:
        """The head's id was answered: move the head past the answered slots, cutting them off now and then."""
        window = self._window
        size = len(window)
        head = self._head + 1
        while head < size and window[head] is None:
            head += 1
        if head == size:  # everything in the window answered
            window.clear()
            self._base += size
            head = 0
        elif head >= _TRIM:
            del window[:head]
            self._base += head
            head = 0
        self._head = head

    def _spill(self) -> None:
        """Move the ids still pending in the window to the stragglers; the window starts over empty."""
        window = self._window
        base = self._base
        stragglers = self._stragglers
        for i in range(self._head, len(window)):
            item = window[i]
            if item is not None:
                stragglers[base + i] = item
        self._base = base + len(window)
        window.clear()
        self._head = 0


def write_room(max_pending: int, queued: int, held_back: bool) -> int:
    """How many more inputs may be queued for a shell bolt's process now.

    As in Storm's ``ShellBolt``, ``topology.shellbolt.max.pending`` bounds the queue of messages not written to
    the process yet (``queued``), not the inputs it holds unanswered: those are bounded by its stdin pipe, which
    takes what the process has not read yet.  While the pipe holds back bytes queued before (``held_back``),
    nothing more is queued.  (Bounding the unanswered inputs instead made the pipeline as shallow as the
    bound: a process that handles 100 inputs within a round trip of the worker's loop waited for the next ones,
    and pystorm's msgpack bolts ran at 0.6 of their rate under a bare driver.)
    """
    if held_back:
        return 0
    return max(0, max_pending - queued)


def _number(tid: Any) -> int:
    """The number of the pending id ``tid`` names, -1 when it names none: ids go out as the strings of 1, 2, ...
    (ASCII digits, no leading zero); a process that echoes them as numbers means the same id."""
    t = type(tid)
    if t is int:
        n: int = tid
        return n
    if t is not str:
        return -1
    s: str = tid
    if not 0 < len(s) <= MAX_ID_DIGITS or s[0] == "0" or not (s.isascii() and s.isdigit()):
        return -1
    return int(s)


class Heartbeat:
    """When to send the next heartbeat and whether the process has been silent too long."""

    def __init__(self, timeout: float, now: float, interval: float = HEARTBEAT_INTERVAL,
                 forgive_unwatched: bool = True) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.timeout = timeout
        self.interval = interval
        self.last_heard = now
        self.next_beat = now + interval
        #: a heartbeat went out and the process has said nothing since
        self.outstanding = False
        #: whether a long gap between looks counts as one interval of silence only (not under simulated time,
        #: whose clock jumps by design)
        self.forgive_unwatched = forgive_unwatched
        self.last_watched = now

    def watched(self, now: float) -> None:
        """The driver looks at the process now (before reading it).  A gap since it last looked longer than a
        heartbeat interval (its worker's loop ran something else that long, or its process did not run) counts
        as one interval of silence, not the whole gap: meanwhile the process could neither be sent a heartbeat
        nor be read.  A process that stays silent still expires, after more such gaps."""
        gap = now - self.last_watched
        if gap > self.interval and self.forgive_unwatched:
            self.last_heard = min(now, self.last_heard + gap - self.interval)
        self.last_watched = now

    def heard(self, now: float) -> None:
        """The process said something: it is alive."""
        self.last_heard = now
        self.outstanding = False

    def stirred(self, now: float) -> None:
        """Part of a message arrived: the process is alive (what it answers is still coming)."""
        self.last_heard = now

    def due(self, now: float) -> bool:
        """Whether a heartbeat should be sent now (and schedule the next one if so)."""
        if now < self.next_beat:
            return False
        self.next_beat = now + self.interval
        self.outstanding = True
        return True

    def expired(self, now: float) -> bool:
        """Whether the process has said nothing for longer than the timeout."""
        return now - self.last_heard > self.timeout

    def silence(self, now: float) -> float:
        """Seconds since the process last said anything."""
        return now - self.last_heard
