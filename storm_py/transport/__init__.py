"""Moving frames between worker processes: the transport Protocols and a factory (zmq or in-memory)."""

from __future__ import annotations

from storm_py.errors import TransportError
from storm_py.transport.base import (
    DEFAULT_HWM,
    DEFAULT_MAX_MESSAGE_SIZE,
    FrameHandler,
    Receiver,
    Sender,
    TransportContext,
    TransportStats,
)
from storm_py.transport.memory import MemoryTransport

__all__ = [
    "DEFAULT_HWM",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "FrameHandler",
    "MemoryTransport",
    "Receiver",
    "Sender",
    "TransportContext",
    "TransportStats",
    "open_transport",
]


def open_transport(
    kind: str = "zmq",
    hwm: int = DEFAULT_HWM,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    buffer_bytes: int = 0,
    curve_seed: bytes | None = None,
) -> TransportContext:
    """A new transport context: ``"zmq"`` (between processes) or ``"memory"`` (inside one process, where no
    frame comes from outside, so ``max_message_size`` only bounds socket receivers and ``buffer_bytes``, the
    kernel buffer of each TCP socket, only applies to sockets; ``curve_seed`` turns on ZeroMQ CURVE)."""
    if kind == "memory":
        return MemoryTransport(hwm=hwm)
    if kind == "zmq":
        from storm_py.transport.zmq import ZmqTransport

        return ZmqTransport(hwm=hwm, max_message_size=max_message_size, buffer_bytes=buffer_bytes,
                            curve_seed=curve_seed)  # fmt: skip
    raise TransportError(f"unknown transport {kind!r} (expected 'zmq' or 'memory')", kind=kind)
