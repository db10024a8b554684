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
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Protocol, runtime_checkable

log = logging.getLogger(__name__)

#: What a receiver calls for every frame.
FrameHandler = Callable[[bytes], None]

#: Default high-water mark, in frames (a frame is a batch of tuples), per queue.
DEFAULT_HWM = 100

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
