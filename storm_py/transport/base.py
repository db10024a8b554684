"""The transport seam: the Protocols every transport implements (context, sender, receiver), and counters.

A transport moves opaque frames (``bytes``) from one worker process to another; it knows nothing of tuples.

* :class:`TransportContext` -- one per process (or per in-process cluster); ``bind`` creates a
  :class:`Receiver` for this worker's slot, ``connect`` a :class:`Sender` to a peer's address.
* :class:`Sender` -- ``send`` returns ``False`` when the peer's queue stays full (its high-water mark is
  reached) for longer than the caller agreed to wait.  That is backpressure, never silent loss: a frame is
  either accepted for delivery (``True``) or handed back to the caller (``False``).  Frames still queued when
  a sender or receiver is closed are lost with it, as with any crashed process; tuple acking covers that.
* :class:`Receiver` -- ``start(on_frame)`` runs a background thread calling ``on_frame`` for each frame in
  arrival order (per sender) until ``stop()``; ``recv(timeout)`` is the pull-style alternative when not
  started.

Implementations: :mod:`storm_py.transport.zmq` (ZeroMQ PUSH/PULL) and :mod:`storm_py.transport.memory`.
Both build on the shared pieces here: :class:`TransportEndpoints` (a context's endpoints and counters) and
:class:`ThreadedReceiver` (a receiver's start/stop/close lifecycle around its background thread).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from storm_py.errors import TransportError

log = logging.getLogger(__name__)

#: What a receiver calls for every frame.
FrameHandler = Callable[[bytes], None]

#: Default high-water mark, in frames (a frame is a batch of tuples), per queue.
DEFAULT_HWM = 100

#: Largest frame a socket receiver accepts by default (bytes); ``zmq.max.message.bytes`` sets it.  A worker's
#: batches are far smaller; a larger frame is a broken or hostile peer, dropped with its connection.
DEFAULT_MAX_MESSAGE_SIZE = 16 * 1024 * 1024

#: How long ``stop``/``close`` wait for a receiver thread to finish its current frame.
STOP_JOIN_TIMEOUT = 10.0

#: How many ``on_frame`` failures are logged in full before only every 1000th one is.
HANDLER_ERRORS_LOGGED = 10


@dataclass
class TransportStats:
    """Counters of one endpoint, or summed over a context's endpoints (:meth:`TransportContext.stats`)."""

    frames_sent: int = 0
    bytes_sent: int = 0
    #: ``send`` calls that found the peer's queue full and had to wait or give up (a backpressure signal).
    send_blocked: int = 0
    #: ``send`` calls that returned ``False``: the frame was handed back to the caller, not sent.
    send_refused: int = 0
    frames_received: int = 0
    bytes_received: int = 0
    #: Frames whose ``on_frame`` call raised (they count as received; the error is logged).
    handler_errors: int = 0
    #: Frames that were queued for a receiver and thrown away when it or its context closed.
    frames_discarded: int = 0
    #: Connections a receiver refused at the handshake (encrypted transports: a peer without the key).
    peers_refused: int = 0

    def add(self, other: TransportStats) -> None:
        """Add ``other``'s counters into this one."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def copy(self) -> TransportStats:
        """A snapshot that later updates do not change."""
        return TransportStats(**self.as_dict())

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict (for metrics and JSON)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@runtime_checkable
class Sender(Protocol):
    """One outgoing connection to a peer's receiver address."""

    @property
    def address(self) -> str:
        """The address this sender delivers to."""
        ...

    @property
    def stats(self) -> TransportStats:
        """This sender's counters (live)."""
        ...

    @property
    def authenticates(self) -> bool:
        """Whether the transport itself authenticates every frame to the receiver (ZeroMQ CURVE over TCP or IPC:
        only a holder of the topology's key pair gets frames through, each unaltered)."""
        ...

    def send(self, frame: bytes, block: bool = True, timeout: float | None = None) -> bool:
        """Queue ``frame`` for the peer.

        Returns ``True`` once the frame is accepted, ``False`` when the peer's queue stayed full: immediately
        with ``block=False``, after ``timeout`` seconds with a timeout, never with ``block=True`` and
        ``timeout=None`` (which waits as long as it takes).  Raises
        :class:`~storm_py.errors.TransportError` if the sender is closed.  Safe to call from several threads.
        """
        ...

    def close(self) -> None:
        """Release the connection; frames not yet delivered are dropped.  Idempotent."""
        ...


@runtime_checkable
class Receiver(Protocol):
    """The bound endpoint of one worker slot; all of the slot's peers send to it."""

    @property
    def address(self) -> str:
        """The connect string peers pass to :meth:`TransportContext.connect`."""
        ...

    @property
    def stats(self) -> TransportStats:
        """This receiver's counters (live)."""
        ...

    @property
    def authenticates(self) -> bool:
        """Whether every frame this receiver takes in was authenticated by the transport itself (ZeroMQ CURVE on
        a TCP or IPC address: it came from a holder of the topology's key pair, unaltered)."""
        ...

    @property
    def running(self) -> bool:
        """Whether the background thread of :meth:`start` is running."""
        ...

    def start(self, on_frame: FrameHandler) -> None:
        """Call ``on_frame(frame)`` from a background thread for every frame until :meth:`stop`.

        An exception from ``on_frame`` is logged and counted in ``stats.handler_errors``; receiving goes on.
        """
        ...

    def stop(self) -> None:
        """Stop the background thread (frames not yet received stay queued).  Idempotent."""
        ...

    def recv(self, timeout: float | None = None) -> bytes | None:
        """Take the next frame, waiting up to ``timeout`` seconds (None: forever); ``None`` on timeout.

        Only while not started, and from one thread at a time.
        """
        ...

    def close(self) -> None:
        """Stop, discard frames still queued here and release the address.  Idempotent."""
        ...


@runtime_checkable
class TransportContext(Protocol):
    """Creates the endpoints of one process (or in-process cluster) and owns them."""

    @property
    def scheme(self) -> str:
        """The transport's name: ``"zmq"`` or ``"memory"``."""
        ...

    def bind(self, host: str, port: int) -> Receiver:
        """Bind a receiver on ``host:port``; port 0 picks a free port (read it from ``receiver.address``)."""
        ...

    def bind_address(self, address: str) -> Receiver:
        """Bind a receiver on a full address in this transport's scheme (for example ``inproc://name``)."""
        ...

    def connect(self, address: str) -> Sender:
        """A sender to ``address``; the peer need not be bound yet (frames queue up to the HWM)."""
        ...

    def stats(self) -> TransportStats:
        """Counters summed over every endpoint this context created, open or closed."""
        ...

    def close(self) -> None:
        """Close every endpoint this context created.  Idempotent."""
        ...


class HandlerErrorLog:
    """Logs ``on_frame`` failures without flooding: the first few in full, then every 1000th."""

    def __init__(self, logger: logging.Logger, address: str) -> None:
        self._log = logger
        self._address = address

    def report(self, count: int) -> None:
        """Log the exception being handled; ``count`` is the number of failures so far, this one included."""
        if count <= HANDLER_ERRORS_LOGGED or count % 1000 == 0:
            self._log.exception("frame handler on %s failed (%d failures so far)", self._address, count)


def check_port(port: int) -> None:
    """Raise :class:`~storm_py.errors.TransportError` unless ``port`` is in 0..65535."""
    if port < 0 or port > 65535:
        raise TransportError(f"port must be in 0..65535, got {port}", port=port)


SenderT = TypeVar("SenderT", bound=Sender)
ReceiverT = TypeVar("ReceiverT", bound=Receiver)


class TransportEndpoints(Generic[SenderT, ReceiverT]):
    """The bookkeeping of a :class:`TransportContext`: its open endpoints and the counters of closed ones.

    ``_lock`` guards the endpoint sets and ``_closed``; subclasses take it to add endpoints and call
    :meth:`_forget` under it when one closes.
    """

    def __init__(self, scheme: str, hwm: int, sender_type: type[SenderT]) -> None:
        if hwm < 1:
            raise TransportError(f"hwm must be at least 1, got {hwm}", hwm=hwm)
        self.hwm = hwm
        self._scheme = scheme
        self._sender_type = sender_type
        self._lock = threading.Lock()
        self._senders: set[SenderT] = set()
        self._receivers: set[ReceiverT] = set()
        self._closed_totals = TransportStats()
        self._closed = False

    @property
    def scheme(self) -> str:
        return self._scheme

    def _check_open(self) -> None:
        if self._closed:
            raise TransportError(f"{self._scheme} transport is closed")

    def _forget(self, endpoint: SenderT | ReceiverT) -> None:
        """Drop a closed endpoint and keep its counters (the caller holds ``_lock``)."""
        if isinstance(endpoint, self._sender_type):
            self._senders.discard(endpoint)
        else:
            self._receivers.discard(endpoint)
        self._closed_totals.add(endpoint.stats)

    def stats(self) -> TransportStats:
        with self._lock:
            total = self._closed_totals.copy()
            live: list[SenderT | ReceiverT] = [*self._senders, *self._receivers]
            for endpoint in live:
                total.add(endpoint.stats)
        return total

    def _close_endpoints(self) -> bool:
        """Mark the context closed and close its endpoints, senders first; False if it was already closed."""
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            endpoints: list[SenderT | ReceiverT] = [*self._senders, *self._receivers]
        for endpoint in endpoints:
            endpoint.close()
        return True


class ThreadedReceiver:
    """The lifecycle a receiver shares: ``start`` runs ``_run`` in a thread, ``stop`` wakes and joins it.

    Subclasses set ``_address`` and implement ``_run(on_frame, *args)`` with the ``args`` returned by
    :meth:`_prepare_run`, and :meth:`_wake_thread`, which makes a running ``_run`` return.
    """

    _address: str
    #: no transport authentication unless a subclass sets it (see :attr:`Receiver.authenticates`)
    authenticates = False

    def __init__(self, logger: logging.Logger) -> None:
        self._log = logger
        self._stats = TransportStats()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._state_lock = threading.Lock()

    @property
    def address(self) -> str:
        return self._address

    @property
    def stats(self) -> TransportStats:
        return self._stats

    @property
    def running(self) -> bool:
        return self._thread is not None

    def _prepare_run(self) -> tuple[Any, ...]:
        """Called under the state lock before the thread starts; returns the extra arguments of ``_run``."""
        return ()

    def _run(self, on_frame: FrameHandler, *args: Any) -> None:
        raise NotImplementedError

    def _wake_thread(self) -> None:
        """Make the running ``_run`` return (called under the state lock)."""
        raise NotImplementedError

    def start(self, on_frame: FrameHandler) -> None:
        with self._state_lock:
            if self._closed:
                raise TransportError(f"receiver on {self._address} is closed", address=self._address)
            if self._thread is not None:
                raise TransportError(f"receiver on {self._address} is already started", address=self._address)
            args = self._prepare_run()
            thread = threading.Thread(
                target=self._run, args=(on_frame, *args), name=f"storm-py-recv-{self._address}", daemon=True
            )
            self._thread = thread
            thread.start()
        self._log.debug("receiver on %s started", self._address)

    def stop(self) -> None:
        with self._state_lock:
            thread = self._thread
            if thread is None:
                return
            self._thread = None
            self._wake_thread()
        if thread is not threading.current_thread():
            thread.join(STOP_JOIN_TIMEOUT)
            if thread.is_alive():
                self._log.error("receiver thread on %s did not stop within %.0fs", self._address, STOP_JOIN_TIMEOUT)
        self._log.debug("receiver on %s stopped", self._address)

    def _check_recv(self) -> None:
        """Refuse ``recv`` while started."""
        if self._thread is not None:
            raise TransportError(f"receiver on {self._address} is started; recv is not allowed", address=self._address)

    def _close_thread(self) -> bool:
        """Mark closed (refusing ``start``) and stop; False if it was already closed."""
        with self._state_lock:
            if self._closed:
                return False
            self._closed = True
        self.stop()
        return True
