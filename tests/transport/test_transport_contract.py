"""The transport contract, run against the in-memory transport and ZeroMQ over TCP loopback."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from storm_py.clock import wait_until
from storm_py.errors import TransportError
from storm_py.transport import (
    MemoryTransport,
    Receiver,
    Sender,
    TransportContext,
    TransportStats,
    open_transport,
)
from storm_py.transport.zmq import ZmqTransport

HWM = 10
DEADLINE = 20.0

pytestmark = pytest.mark.timeout(60)


@dataclass
class Collector:
    """An on_frame handler that records what it got."""

    frames: list[bytes] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, frame: bytes) -> None:
        with self.lock:
            self.frames.append(frame)

    def count(self) -> int:
        with self.lock:
            return len(self.frames)

    def wait_for(self, n: int, what: str = "frames") -> list[bytes]:
        wait_until(lambda: self.count() >= n, DEADLINE, what=f"{n} {what} (got {self.count()})")
        with self.lock:
            return list(self.frames)


def _recv_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("storm-py-recv-")]


@pytest.fixture(params=["memory", "zmq"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def ctx(kind: str) -> Iterator[TransportContext]:
    before = set(threading.enumerate())
    transport = open_transport(kind, hwm=HWM)
    yield transport
    transport.close()
    wait_until(lambda: not (set(threading.enumerate()) - before), DEADLINE, what="transport threads to end")


def _bind(ctx: TransportContext) -> Receiver:
    return ctx.bind("127.0.0.1", 0)


def _frame(i: int, size: int = 16) -> bytes:
    return i.to_bytes(8, "big") + b"x" * max(0, size - 8)


def _index(frame: bytes) -> int:
    return int.from_bytes(frame[:8], "big")


def _fill(sender: Sender, size: int, limit: int = 100_000) -> int:
    """Send until the peer's queues stay full; return how many frames were accepted.

    A refused ``block=False`` send is retried with a short timeout, because ZeroMQ's I/O thread may still be
    moving frames from the sender's queue into the TCP connection and the receiver's queue.
    """
    for i in range(limit):
        frame = _frame(i, size)
        if not sender.send(frame, block=False) and not sender.send(frame, timeout=0.3):
            return i
    raise AssertionError(f"{limit} frames were accepted without backpressure")


# ---------------------------------------------------------------------------------- basics


def test_protocols_are_implemented(ctx: TransportContext) -> None:
    assert isinstance(ctx, TransportContext)
    rx = _bind(ctx)
    tx = ctx.connect(rx.address)
    assert isinstance(rx, Receiver)
    assert isinstance(tx, Sender)
    assert tx.address == rx.address


def test_address_forms(ctx: TransportContext, kind: str) -> None:
    rx = _bind(ctx)
    prefix = "tcp://127.0.0.1:" if kind == "zmq" else "memory://127.0.0.1:"
    assert rx.address.startswith(prefix)
    assert int(rx.address.rsplit(":", 1)[1]) > 0


def test_order_is_kept(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    got = Collector()
    rx.start(got)
    tx = ctx.connect(rx.address)
    for i in range(2000):
        assert tx.send(_frame(i))
    assert [_index(f) for f in got.wait_for(2000)] == list(range(2000))
    assert rx.running


def test_recv_pull_style(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    tx = ctx.connect(rx.address)
    assert rx.recv(timeout=0.05) is None
    for i in range(HWM):
        assert tx.send(_frame(i), block=False)
    assert [_index(rx.recv(timeout=DEADLINE) or b"") for _ in range(HWM)] == list(range(HWM))
    assert rx.recv(timeout=0) is None


def test_many_frames_of_mixed_sizes(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    got = Collector()
    rx.start(got)
    tx = ctx.connect(rx.address)
    sizes = [8, 100, 5000, 70_000, 1 << 20]
    n = 3000
    for i in range(n):
        assert tx.send(_frame(i, sizes[i % len(sizes)]), timeout=DEADLINE)
    frames = got.wait_for(n)
    assert [_index(f) for f in frames] == list(range(n))
    assert [len(f) for f in frames[:5]] == sizes
    assert tx.stats.frames_sent == n
    assert rx.stats.frames_received == n
    assert tx.stats.bytes_sent == rx.stats.bytes_received == sum(len(f) for f in frames)


def test_two_senders_keep_their_own_order(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    got = Collector()
    rx.start(got)
    a = ctx.connect(rx.address)
    b = ctx.connect(rx.address)
    for i in range(500):
        assert a.send(b"a" + _frame(i))
        assert b.send(b"b" + _frame(i))
    frames = got.wait_for(1000)
    for tag in (b"a", b"b"):
        assert [_index(f[1:]) for f in frames if f[:1] == tag] == list(range(500))


def test_one_sender_shared_by_threads(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    got = Collector()
    rx.start(got)
    tx = ctx.connect(rx.address)
    errors: list[BaseException] = []

    def worker(tag: int) -> None:
        try:
            for i in range(300):
                assert tx.send(bytes([tag]) + _frame(i), timeout=DEADLINE)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE)
    assert not errors
    frames = got.wait_for(1200)
    for tag in range(4):
        assert [_index(f[1:]) for f in frames if f[0] == tag] == list(range(300))


def test_connect_before_bind(ctx: TransportContext, kind: str) -> None:
    if kind == "zmq":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        address = f"tcp://127.0.0.1:{port}"
    else:
        port = 7001
        address = "memory://127.0.0.1:7001"
    tx = ctx.connect(address)
    for i in range(5):
        assert tx.send(_frame(i), block=False)
    rx = ctx.bind("127.0.0.1", port)
    assert rx.address == address
    got = Collector()
    rx.start(got)
    assert [_index(f) for f in got.wait_for(5)] == list(range(5))


def test_stop_and_restart_keeps_queued_frames(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    tx = ctx.connect(rx.address)
    first = Collector()
    rx.start(first)
    assert tx.send(_frame(0))
    first.wait_for(1)
    rx.stop()
    assert not rx.running
    rx.stop()  # idempotent
    for i in range(1, 6):
        assert tx.send(_frame(i))
    second = Collector()
    rx.start(second)
    assert [_index(f) for f in second.wait_for(5)] == [1, 2, 3, 4, 5]
    assert first.count() == 1


def test_handler_errors_are_counted_and_receiving_goes_on(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    got = Collector()

    def handler(frame: bytes) -> None:
        if _index(frame) % 2:
            raise ValueError("odd frame")
        got(frame)

    rx.start(handler)
    tx = ctx.connect(rx.address)
    for i in range(20):
        assert tx.send(_frame(i))
    assert [_index(f) for f in got.wait_for(10)] == list(range(0, 20, 2))
    wait_until(lambda: rx.stats.handler_errors == 10, DEADLINE, what="10 handler errors")
    assert rx.stats.frames_received == 20


def test_stop_from_inside_the_handler(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    got = Collector()

    def handler(frame: bytes) -> None:
        got(frame)
        rx.stop()

    rx.start(handler)
    tx = ctx.connect(rx.address)
    assert tx.send(_frame(0))
    got.wait_for(1)
    wait_until(lambda: not _recv_threads(), DEADLINE, what="the receiver thread to end")
    assert not rx.running


def test_misuse_raises_transport_error(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    rx.start(Collector())
    with pytest.raises(TransportError, match="already started"):
        rx.start(Collector())
    with pytest.raises(TransportError, match="recv is not allowed"):
        rx.recv(timeout=0)
    with pytest.raises(TransportError):
        ctx.bind_address(rx.address)


def test_open_transport_rejects_unknown_kind() -> None:
    with pytest.raises(TransportError, match="unknown transport"):
        open_transport("carrier-pigeon")


# ---------------------------------------------------------------------------------- backpressure


def test_backpressure_with_block_false(ctx: TransportContext) -> None:
    rx = _bind(ctx)  # bound, never started: nobody drains it
    tx = ctx.connect(rx.address)
    accepted = _fill(tx, size=64 * 1024)
    assert accepted >= HWM
    assert tx.stats.send_refused >= 1
    assert tx.stats.send_blocked >= 1
    assert tx.stats.frames_sent == accepted
    # every accepted frame arrives once the receiver runs: backpressure, not loss
    got = Collector()
    rx.start(got)
    frames = got.wait_for(accepted)
    assert [_index(f) for f in frames] == list(range(accepted))
    assert tx.send(_frame(accepted), timeout=DEADLINE)
    assert _index(got.wait_for(accepted + 1)[-1]) == accepted


def test_backpressure_with_timeout(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    tx = ctx.connect(rx.address)
    accepted = _fill(tx, size=64 * 1024)
    refused_before = tx.stats.send_refused
    started = time.monotonic()
    assert tx.send(_frame(accepted, 64 * 1024), timeout=0.2) is False
    assert time.monotonic() - started >= 0.15
    assert tx.stats.send_refused == refused_before + 1
    assert tx.send(_frame(accepted, 64 * 1024), timeout=0) is False


def test_blocked_send_resumes_when_the_receiver_drains(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    tx = ctx.connect(rx.address)
    accepted = _fill(tx, size=64 * 1024)
    result: list[bool] = []
    sending = threading.Thread(target=lambda: result.append(tx.send(_frame(accepted, 64 * 1024))))
    sending.start()
    got = Collector()
    rx.start(got)
    sending.join(DEADLINE)
    assert result == [True]
    assert [_index(f) for f in got.wait_for(accepted + 1)] == list(range(accepted + 1))


def test_close_wakes_a_blocked_send(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    tx = ctx.connect(rx.address)
    _fill(tx, size=64 * 1024)
    errors: list[BaseException] = []

    def blocked() -> None:
        try:
            tx.send(b"late")
        except TransportError as exc:
            errors.append(exc)

    t = threading.Thread(target=blocked)
    t.start()
    wait_until(lambda: tx.stats.send_blocked >= 2, DEADLINE, what="the send to block")
    tx.close()
    t.join(DEADLINE)
    assert not t.is_alive()
    assert len(errors) == 1 and "closed" in str(errors[0])


# ---------------------------------------------------------------------------------- cleanup


def test_closed_endpoints_refuse_use(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    tx = ctx.connect(rx.address)
    tx.close()
    tx.close()
    with pytest.raises(TransportError, match="closed"):
        tx.send(b"x")
    rx.close()
    rx.close()
    with pytest.raises(TransportError, match="closed"):
        rx.start(Collector())
    with pytest.raises(TransportError, match="closed"):
        rx.recv(timeout=0)
    ctx.close()
    with pytest.raises(TransportError, match="closed"):
        ctx.connect(rx.address)


def test_close_releases_threads_and_address(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    address = rx.address
    port = int(address.rsplit(":", 1)[1])
    rx.start(Collector())
    tx = ctx.connect(address)
    assert tx.send(_frame(0))
    assert len(_recv_threads()) == 1
    rx.close()
    assert not _recv_threads()
    tx.close()
    # the address can be bound again (ZeroMQ releases the port asynchronously: wait for it)
    again: list[Receiver] = []

    def rebind() -> bool:
        try:
            again.append(ctx.bind("127.0.0.1", port))
        except TransportError:
            return False
        return True

    wait_until(rebind, DEADLINE, what=f"{address} to be free again")
    assert again[0].address == address


def test_context_close_closes_everything(kind: str) -> None:
    before = set(threading.enumerate())
    transport = open_transport(kind, hwm=HWM)
    receivers = [_bind(transport) for _ in range(3)]
    for rx in receivers:
        rx.start(Collector())
    senders = [transport.connect(rx.address) for rx in receivers]
    for tx in senders:
        assert tx.send(b"hello")
    wait_until(lambda: transport.stats().frames_received == 3, DEADLINE, what="3 frames")
    transport.close()
    transport.close()
    assert not (set(threading.enumerate()) - before)
    for tx in senders:
        with pytest.raises(TransportError):
            tx.send(b"x")
    totals = transport.stats()
    assert totals.frames_sent == 3 and totals.frames_received == 3


def test_no_file_descriptors_leak(kind: str) -> None:
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    transport = open_transport(kind, hwm=HWM)
    warm = _bind(transport)
    warm.start(Collector())
    warm.close()
    baseline = open_fds()
    for _ in range(10):
        rx = _bind(transport)
        got = Collector()
        rx.start(got)
        tx = transport.connect(rx.address)
        assert tx.send(b"x")
        got.wait_for(1)
        tx.close()
        rx.close()
    wait_until(lambda: open_fds() <= baseline + 2, DEADLINE, what=f"fds back to {baseline} (now {open_fds()})")
    transport.close()


def test_context_stats_sum_open_and_closed_endpoints(ctx: TransportContext) -> None:
    rx = _bind(ctx)
    got = Collector()
    rx.start(got)
    a = ctx.connect(rx.address)
    b = ctx.connect(rx.address)
    assert a.send(b"12345")
    assert b.send(b"123")
    got.wait_for(2)
    a.close()
    totals = ctx.stats()
    assert isinstance(totals, TransportStats)
    assert (totals.frames_sent, totals.bytes_sent) == (2, 8)
    assert (totals.frames_received, totals.bytes_received) == (2, 8)
    assert totals.as_dict()["send_refused"] == 0


# ---------------------------------------------------------------------------------- per transport


def test_zmq_inproc_addresses_work_through_the_same_class() -> None:
    one, two = ZmqTransport(hwm=HWM), ZmqTransport(hwm=HWM)
    try:
        rx = one.bind_address("inproc://storm-py-test-inproc")
        assert rx.address == "inproc://storm-py-test-inproc"
        tx = two.connect(rx.address)  # another transport of the same process shares the zmq context
        got = Collector()
        rx.start(got)
        for i in range(100):
            assert tx.send(_frame(i))
        assert [_index(f) for f in got.wait_for(100)] == list(range(100))
    finally:
        one.close()
        two.close()


def test_zmq_bind_errors_are_transport_errors() -> None:
    transport = ZmqTransport(hwm=HWM)
    try:
        rx = transport.bind("127.0.0.1", 0)
        port = int(rx.address.rsplit(":", 1)[1])
        with pytest.raises(TransportError, match="cannot bind") as info:
            transport.bind("127.0.0.1", port)
        assert info.value.__cause__ is not None
        with pytest.raises(TransportError, match="cannot connect"):
            transport.connect("nonsense://where")
    finally:
        transport.close()


def test_zmq_socket_buffers_bound_what_a_stalled_peer_holds() -> None:
    def accepted(buffer_bytes: int) -> int:
        """64 KiB frames a receiver that never reads takes in, until a send waits half a second in vain."""
        transport = ZmqTransport(hwm=1, buffer_bytes=buffer_bytes)
        try:
            tx = transport.connect(transport.bind("127.0.0.1", 0).address)
            n = 0
            while n < 1000 and tx.send(b"z" * 65536, timeout=0.5):
                n += 1
            return n
        finally:
            transport.close()

    small, kernel_sized = accepted(4096), accepted(0)
    assert small <= 8 < kernel_sized, (small, kernel_sized)  # one frame per queue, then a few in 2 x 8 KiB
    with pytest.raises(TransportError, match="socket buffer size"):
        ZmqTransport(buffer_bytes=-1)


def test_memory_names_are_private_to_a_transport() -> None:
    one, two = MemoryTransport(hwm=HWM), MemoryTransport(hwm=HWM)
    try:
        rx1 = one.bind_address("memory://slot")
        rx2 = two.bind_address("memory://slot")  # no clash: another namespace
        assert one.connect("memory://slot").send(b"one")
        assert rx1.recv(timeout=1) == b"one"
        assert rx2.recv(timeout=0) is None
        with pytest.raises(TransportError, match="not a memory transport address"):
            one.connect("tcp://127.0.0.1:1")
    finally:
        one.close()
        two.close()


def test_memory_frames_left_behind_are_counted_on_close() -> None:
    transport = MemoryTransport(hwm=HWM)
    rx = transport.bind_address("memory://left")
    tx = transport.connect(rx.address)
    for i in range(3):
        assert tx.send(_frame(i))
    rx.close()
    transport.close()
    assert transport.stats().frames_discarded == 3
