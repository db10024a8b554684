"""Ack trackers and the feeder spout: Storm's test helpers to watch acks and feed tuples by hand."""

from __future__ import annotations

import threading
import uuid
from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

from storm_py.api.components import OutputFieldsDeclarer, Spout, SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Fields
from storm_py.testing.registry import Shared


class AckFailDelegate(Protocol):
    """Receives the acks and fails of a spout."""

    def ack(self, msg_id: Any) -> None: ...

    def fail(self, msg_id: Any) -> None: ...


class AckTracker(Shared):
    """Counts acks (shared by every copy, so a test can read it while the topology runs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._acks = 0
        self._fails = 0

    def ack(self, msg_id: Any) -> None:
        with self._lock:
            self._acks += 1

    def fail(self, msg_id: Any) -> None:
        with self._lock:
            self._fails += 1

    def get_num_acks(self) -> int:
        """Acks seen since the last reset."""
        with self._lock:
            return self._acks

    def get_num_fails(self) -> int:
        """Fails seen since the last reset."""
        with self._lock:
            return self._fails

    def reset_num_acks(self) -> None:
        """Start counting from zero."""
        with self._lock:
            self._acks = 0
            self._fails = 0


class AckFailMapTracker(Shared):
    """Remembers which message ids were acked and which failed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._acked: set[Any] = set()
        self._failed: set[Any] = set()

    def ack(self, msg_id: Any) -> None:
        with self._lock:
            self._acked.add(msg_id)

    def fail(self, msg_id: Any) -> None:
        with self._lock:
            self._failed.add(msg_id)

    def is_acked(self, msg_id: Any) -> bool:
        """Whether ``msg_id`` was acked."""
        with self._lock:
            return msg_id in self._acked

    def is_failed(self, msg_id: Any) -> bool:
        """Whether ``msg_id`` failed."""
        with self._lock:
            return msg_id in self._failed


class _FeedQueue(Shared):
    def __init__(self) -> None:
        self.items: deque[tuple[list[Any], Any]] = deque()


class FeederSpout(Spout):
    """A spout emitting exactly what the test feeds it, as Storm's ``FeederSpout``.

    ``feed(values)`` emits a tracked tuple under a fresh random message id (``feed(values, msg_id)`` under the
    given one); its ack or fail goes to the delegate set with :meth:`set_ack_fail_delegate`.
    ``feed_no_ack(values)`` emits an untracked tuple (no message id: nothing is acked or failed).
    """

    def __init__(self, fields: Fields | Sequence[str]) -> None:
        self._fields = fields if isinstance(fields, Fields) else Fields(list(fields))
        self._queue = _FeedQueue()
        self._delegate: AckFailDelegate | None = None
        self._collector: SpoutOutputCollector | None = None

    def feed(self, values: Sequence[Any], msg_id: Any = None) -> None:
        """Queue one tracked tuple (thread-safe); without ``msg_id`` it gets a fresh random id, as in Storm."""
        self._queue.items.append((list(values), uuid.uuid4().hex if msg_id is None else msg_id))

    def feed_no_ack(self, values: Sequence[Any]) -> None:
        """Queue an untracked tuple: emitted without a message id, never acked or failed."""
        self._queue.items.append((list(values), None))

    def set_ack_fail_delegate(self, tracker: AckFailDelegate) -> None:
        """Where acks and fails go."""
        self._delegate = tracker

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self._collector = collector

    def next_tuple(self) -> None:
        try:
            values, msg_id = self._queue.items.popleft()
        except IndexError:
            return
        assert self._collector is not None
        self._collector.emit(values, msg_id)

    def ack(self, msg_id: Any) -> None:
        if self._delegate is not None:
            self._delegate.ack(msg_id)

    def fail(self, msg_id: Any) -> None:
        if self._delegate is not None:
            self._delegate.fail(msg_id)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(self._fields)
