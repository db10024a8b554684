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
from collections import deque

from storm_py.clock import SYSTEM_CLOCK
from storm_py.errors import TransportError
from storm_py.transport.base import (
    DEFAULT_HWM,
    FrameHandler,
    HandlerErrorLog,
    ThreadedReceiver,
    TransportEndpoints,
    TransportStats,
    check_port,
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

    authenticates = False  # in one process: nothing on the way to authenticate against

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
                deadline = None if timeout is None else SYSTEM_CLOCK.now() + timeout
                while len(box.frames) >= box.capacity:
                    if deadline is None:
                        box.not_full.wait()
                    else:
                        remaining = deadline - SYSTEM_CLOCK.now()
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


class MemoryReceiver(ThreadedReceiver):
    """The receiver bound to one mailbox."""

    def __init__(self, transport: MemoryTransport, mailbox: _Mailbox) -> None:
        super().__init__(log)
        self._transport = transport
        self._box = mailbox
        self._address = mailbox.address
        self._stopping = False
        self._errors = HandlerErrorLog(log, mailbox.address)

    def _prepare_run(self) -> tuple[()]:
        self._stopping = False
        return ()

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

    def _wake_thread(self) -> None:
        with self._box.lock:
            self._stopping = True
            self._box.not_empty.notify_all()

    def recv(self, timeout: float | None = None) -> bytes | None:
        self._check_recv()
        box = self._box
        with box.lock:
            if self._closed:
                raise TransportError(f"receiver on {self.address} is closed", address=self.address)
            if not box.frames:
                if timeout is None:
                    while not box.frames and not self._closed:
                        box.not_empty.wait()
                else:
                    deadline = SYSTEM_CLOCK.now() + timeout
                    while not box.frames and not self._closed:
                        remaining = deadline - SYSTEM_CLOCK.now()
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
        if not self._close_thread():
            return
        with box.lock:
            if box.receiver is self:
                box.receiver = None
            box.not_empty.notify_all()
        self._transport._release(self, box)
        log.debug("receiver on %s closed", self.address)


class MemoryTransport(TransportEndpoints[MemorySender, MemoryReceiver]):
    """The in-process :class:`~storm_py.transport.base.TransportContext`; ``hwm`` caps each mailbox."""

    def __init__(self, hwm: int = DEFAULT_HWM) -> None:
        super().__init__("memory", hwm, MemorySender)
        self._boxes: dict[str, _Mailbox] = {}
        self._ports = itertools.count(_EPHEMERAL_START)

    def _box(self, address: str) -> _Mailbox:
        box = self._boxes.get(address)
        if box is None:
            box = self._boxes[address] = _Mailbox(address, self.hwm)
        return box

    def bind(self, host: str, port: int) -> MemoryReceiver:
        check_port(port)
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
            self._forget(endpoint)
            with box.lock:
                unused = box.receiver is None and box.senders == 0 and not box.frames
                if unused and self._boxes.get(box.address) is box:
                    del self._boxes[box.address]

    def close(self) -> None:
        if not self._close_endpoints():
            return
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
