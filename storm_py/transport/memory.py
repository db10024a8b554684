"""The in-process transport: bounded mailboxes named ``memory://host:port`` with the same contract as ZeroMQ.

Used by LocalCluster and unit tests.  Each address is a mailbox: a FIFO of at most ``hwm`` frames shared by
all senders connected to it.  As with ZeroMQ, a sender may connect before anyone binds the address (frames
wait in the mailbox), a full mailbox makes ``send`` wait or return ``False``, and a receiver can be closed and
the address bound again.  Unlike ZeroMQ, frames left in a mailbox when its receiver closes stay there for the
next receiver of that address; frames still there when the context closes are counted in ``frames_discarded``.

Names are private to one :class:`MemoryTransport`: endpoints meant to reach each other must share the
instance.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque

from storm_py.errors import TransportError
from storm_py.transport.base import (
    DEFAULT_HWM,
    STOP_JOIN_TIMEOUT,
    FrameHandler,
    HandlerErrorLog,
    TransportStats,
)

log = logging.getLogger(__name__)

SCHEME = "memory://"

#: Port numbers handed out for ``bind(host, 0)``.
_EPHEMERAL_START = 49152


class _Mailbox:
    """One address: its queued frames, the receiver bound to it and how many senders use it."""

    def __init__(self, address: str, capacity: int) -> None:
        self.address = address
        self.capacity = capacity
        self.frames: deque[bytes] = deque()
        self.lock = threading.Lock()
        self.not_empty = threading.Condition(self.lock)
        self.not_full = threading.Condition(self.lock)
        self.receiver: MemoryReceiver | None = None
        self.senders = 0


class MemorySender:
    """A sender into a mailbox of its :class:`MemoryTransport`."""

    def __init__(self, transport: MemoryTransport, mailbox: _Mailbox) -> None:
        self._transport = transport
        self._box = mailbox
        self._stats = TransportStats()
        self._closed = False

    @property
    def address(self) -> str:
        return self._box.address

    @property
    def stats(self) -> TransportStats:
        return self._stats

    def send(self, frame: bytes, block: bool = True, timeout: float | None = None) -> bool:
        if type(frame) is not bytes:
            frame = bytes(frame)
        box = self._box
        stats = self._stats
        with box.lock:
            if self._closed:
                raise TransportError(f"sender to {box.address} is closed", address=box.address)
            if len(box.frames) >= box.capacity:
                stats.send_blocked += 1
                if not block:
                    stats.send_refused += 1
                    return False
                deadline = None if timeout is None else time.monotonic() + timeout
                while len(box.frames) >= box.capacity:
                    if deadline is None:
                        box.not_full.wait()
                    else:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            stats.send_refused += 1
                            return False
                        box.not_full.wait(remaining)
                    if self._closed:
                        raise TransportError(
                            f"sender to {box.address} was closed while waiting to send", address=box.address
                        )
            box.frames.append(frame)
            box.not_empty.notify()
            stats.frames_sent += 1
            stats.bytes_sent += len(frame)
        return True

    def close(self) -> None:
        box = self._box
        with box.lock:
            if self._closed:
                return
            self._closed = True
            box.senders -= 1
            box.not_full.notify_all()
        self._transport._release(self, box)


class MemoryReceiver:
    """The receiver bound to one mailbox."""

    def __init__(self, transport: MemoryTransport, mailbox: _Mailbox) -> None:
        self._transport = transport
        self._box = mailbox
        self._stats = TransportStats()
        self._closed = False
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._state_lock = threading.Lock()
        self._errors = HandlerErrorLog(log, mailbox.address)

    @property
    def address(self) -> str:
        return self._box.address

    @property
    def stats(self) -> TransportStats:
        return self._stats

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self, on_frame: FrameHandler) -> None:
        with self._state_lock:
            if self._closed:
                raise TransportError(f"receiver on {self.address} is closed", address=self.address)
            if self._thread is not None:
                raise TransportError(f"receiver on {self.address} is already started", address=self.address)
            self._stopping = False
            thread = threading.Thread(
                target=self._run, args=(on_frame,), name=f"storm-py-recv-{self.address}", daemon=True
            )
            self._thread = thread
            thread.start()
        log.debug("receiver on %s started", self.address)

    def _run(self, on_frame: FrameHandler) -> None:
        box = self._box
        stats = self._stats
        while True:
            with box.lock:
                while not box.frames and not self._stopping:
                    box.not_empty.wait()
                if self._stopping:
                    return
                batch = list(box.frames)
                box.frames.clear()
                box.not_full.notify_all()
            for frame in batch:
                stats.frames_received += 1
                stats.bytes_received += len(frame)
                try:
                    on_frame(frame)
                except Exception:
                    stats.handler_errors += 1
                    self._errors.report(stats.handler_errors)

    def stop(self) -> None:
        with self._state_lock:
            thread = self._thread
            if thread is None:
                return
            self._thread = None
            with self._box.lock:
                self._stopping = True
                self._box.not_empty.notify_all()
        if thread is not threading.current_thread():
            thread.join(STOP_JOIN_TIMEOUT)
            if thread.is_alive():
                log.error("receiver thread on %s did not stop within %.0fs", self.address, STOP_JOIN_TIMEOUT)
        log.debug("receiver on %s stopped", self.address)

    def recv(self, timeout: float | None = None) -> bytes | None:
        if self._thread is not None:
            raise TransportError(f"receiver on {self.address} is started; recv is not allowed", address=self.address)
        box = self._box
        with box.lock:
            if self._closed:
                raise TransportError(f"receiver on {self.address} is closed", address=self.address)
            if not box.frames:
                if timeout is None:
                    while not box.frames and not self._closed:
                        box.not_empty.wait()
                else:
                    deadline = time.monotonic() + timeout
                    while not box.frames and not self._closed:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            return None
                        box.not_empty.wait(remaining)
                if self._closed:
                    raise TransportError(f"receiver on {self.address} was closed while waiting", address=self.address)
            frame = box.frames.popleft()
            box.not_full.notify()
        self._stats.frames_received += 1
        self._stats.bytes_received += len(frame)
        return frame

    def close(self) -> None:
        box = self._box
        with self._state_lock:
            if self._closed:
                return
            self._closed = True  # refuses start()
        self.stop()
        with box.lock:
            if box.receiver is self:
                box.receiver = None
            box.not_empty.notify_all()
        self._transport._release(self, box)
        log.debug("receiver on %s closed", self.address)


class MemoryTransport:
    """The in-process :class:`~storm_py.transport.base.TransportContext`; ``hwm`` caps each mailbox."""

    def __init__(self, hwm: int = DEFAULT_HWM) -> None:
        if hwm < 1:
            raise TransportError(f"hwm must be at least 1, got {hwm}", hwm=hwm)
        self.hwm = hwm
        self._lock = threading.Lock()
        self._boxes: dict[str, _Mailbox] = {}
        self._senders: set[MemorySender] = set()
        self._receivers: set[MemoryReceiver] = set()
        self._closed_totals = TransportStats()
        self._ports = itertools.count(_EPHEMERAL_START)
        self._closed = False

    @property
    def scheme(self) -> str:
        return "memory"

    def _check_open(self) -> None:
        if self._closed:
            raise TransportError("memory transport is closed")

    def _box(self, address: str) -> _Mailbox:
        box = self._boxes.get(address)
        if box is None:
            box = self._boxes[address] = _Mailbox(address, self.hwm)
        return box

    def bind(self, host: str, port: int) -> MemoryReceiver:
        if port < 0 or port > 65535:
            raise TransportError(f"port must be in 0..65535, got {port}", port=port)
        if port == 0:
            with self._lock:
                while True:
                    address = f"{SCHEME}{host}:{next(self._ports)}"
                    box = self._boxes.get(address)
                    if box is None or box.receiver is None:
                        break
        else:
            address = f"{SCHEME}{host}:{port}"
        return self.bind_address(address)

    def bind_address(self, address: str) -> MemoryReceiver:
        _check_scheme(address)
        with self._lock:
            self._check_open()
            box = self._box(address)
            with box.lock:
                if box.receiver is not None:
                    raise TransportError(f"address {address} is already bound", address=address)
                receiver = MemoryReceiver(self, box)
                box.receiver = receiver
            self._receivers.add(receiver)
        log.debug("bound %s", address)
        return receiver

    def connect(self, address: str) -> MemorySender:
        _check_scheme(address)
        with self._lock:
            self._check_open()
            box = self._box(address)
            with box.lock:
                box.senders += 1
            sender = MemorySender(self, box)
            self._senders.add(sender)
        return sender

    def _release(self, endpoint: MemorySender | MemoryReceiver, box: _Mailbox) -> None:
        """Forget a closed endpoint; drop its mailbox once nothing uses it and nothing waits in it."""
        with self._lock:
            if isinstance(endpoint, MemorySender):
                self._senders.discard(endpoint)
            else:
                self._receivers.discard(endpoint)
            self._closed_totals.add(endpoint.stats)
            with box.lock:
                unused = box.receiver is None and box.senders == 0 and not box.frames
                if unused and self._boxes.get(box.address) is box:
                    del self._boxes[box.address]

    def stats(self) -> TransportStats:
        with self._lock:
            total = self._closed_totals.copy()
            live: list[MemorySender | MemoryReceiver] = [*self._senders, *self._receivers]
            for endpoint in live:
                total.add(endpoint.stats)
        return total

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            endpoints: list[MemorySender | MemoryReceiver] = [*self._senders, *self._receivers]
        for endpoint in endpoints:
            endpoint.close()
        with self._lock:
            discarded = 0
            for box in self._boxes.values():
                with box.lock:
                    discarded += len(box.frames)
                    box.frames.clear()
            self._boxes.clear()
            self._closed_totals.frames_discarded += discarded
        if discarded:
            log.warning("memory transport closed with %d undelivered frames", discarded)


def _check_scheme(address: str) -> None:
    if not address.startswith(SCHEME) or len(address) == len(SCHEME):
        raise TransportError(f"not a memory transport address: {address!r} (expected memory://name)", address=address)
