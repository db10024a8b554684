"""The ZeroMQ transport (the only zmq import): one bound PULL socket per worker slot, one PUSH per peer.

Addresses are ZeroMQ endpoints: ``tcp://127.0.0.1:6700`` between processes, ``inproc://name`` inside one
process (through :meth:`ZmqTransport.bind_address`), ``ipc://path`` also works.  Every :class:`ZmqTransport`
uses the process-wide ``zmq.Context.instance()``, so ``inproc://`` endpoints of different transports reach
each other.

Queues: a PUSH socket holds up to ``hwm`` frames for its peer (SNDHWM) and the PULL socket up to ``hwm`` more
(RCVHWM); over TCP the kernel's socket buffers hold some more (``buffer_bytes`` sets them, SNDBUF/RCVBUF; 0
leaves the kernel's own sizing).  When all are full, ``send`` waits or returns
``False``.  Sockets close with linger 0: frames still queued in a closed sender are dropped.

Bounds: a receiver drops the connection of a peer sending a frame over ``max_message_size`` bytes
(ZMQ_MAXMSGSIZE) before the frame is held in memory, so a hostile or broken peer cannot make a worker allocate
more than ``max_message_size * hwm``.

Encryption: given a ``curve_seed`` (32 bytes or more, the topology's secret) every socket speaks ZeroMQ CURVE
with the one key pair derived from it: receivers are CURVE servers, senders CURVE clients, and a process-wide
ZAP handler (:class:`_ZapHandler`) admits only clients presenting that key pair's public key.  A peer without
it never completes the handshake, so none of its frames is received; each refused handshake (wrong key, or no
CURVE at all) is seen on the receiver's monitor socket and counted (``TransportStats.peers_refused``).  Over
TCP and IPC every message is a CURVE box, so those endpoints ``authenticate``; ``inproc://`` never does.

Threads: a socket is only ever used by one thread at a time.  A sender's socket is guarded by a lock, so
``send`` may be called from several threads.  A receiver's socket belongs to its background thread while
started (``stop`` wakes that thread through a pipe, never touching the socket), and to the caller of ``recv``
otherwise.
"""

from __future__ import annotations

import logging
import os
import threading

import zmq
from zmq.utils import z85
from zmq.utils.monitor import recv_monitor_message

from storm_py.clock import SYSTEM_CLOCK
from storm_py.errors import TransportError
from storm_py.transport.base import (
    DEFAULT_HWM,
    DEFAULT_MAX_MESSAGE_SIZE,
    FrameHandler,
    HandlerErrorLog,
    ThreadedReceiver,
    TransportEndpoints,
    TransportStats,
    check_port,
)

log = logging.getLogger(__name__)

#: Longest single wait inside a blocking call, so that ``close`` from another thread is noticed.
_WAIT_SLICE = 0.1

#: Frames read per wake-up before the receiver thread checks for ``stop`` again.
_DRAIN_MAX = 256

#: At most this many frames are counted (and dropped) when a receiver closes with frames queued.
_DISCARD_COUNT_MAX = 100_000

#: ZeroMQ's fixed address of a context's ZAP handler.
_ZAP_ENDPOINT = "inproc://zeromq.zap.01"

#: Monitor events of a handshake a receiver refused.
_REFUSED_EVENTS = (
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_AUTH
)


def _context() -> zmq.Context[zmq.Socket[bytes]]:
    return zmq.Context.instance()


def curve_keypair(seed: bytes) -> tuple[bytes, bytes]:
    """The CURVE ``(public, secret)`` key pair (Z85) derived from ``seed`` (its first 32 bytes)."""
    if not zmq.has("curve"):
        raise TransportError("this libzmq has no CURVE support (storm.messaging.encryption: curve)")
    if len(seed) < 32:
        raise TransportError(f"a CURVE seed needs 32 bytes, got {len(seed)}", seed_bytes=len(seed))
    secret = z85.encode(seed[:32])
    return zmq.curve_public(secret), secret


class _ZapHandler:
    """The process's ZAP handler: a CURVE client is admitted on a domain only with that domain's public key."""

    _instance: _ZapHandler | None = None
    _instance_lock = threading.Lock()

    def __init__(self) -> None:
        self._allowed: dict[bytes, bytes] = {}  # ZAP domain -> the one client public key (raw 32 bytes) it admits
        self._lock = threading.Lock()
        sock = _context().socket(zmq.REP)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            sock.bind(_ZAP_ENDPOINT)
        except zmq.ZMQError as exc:
            sock.close(linger=0)
            raise TransportError(f"cannot start the ZAP handler: {exc}") from exc
        self._sock = sock
        threading.Thread(target=self._run, name="zmq-zap", daemon=True).start()

    @classmethod
    def admit(cls, domain: bytes, public: bytes) -> None:
        """Admit clients with ``public`` (Z85) on ``domain`` (started on first use)."""
        with cls._instance_lock:
            if cls._instance is None:
                cls._instance = _ZapHandler()
            handler = cls._instance
        with handler._lock:
            handler._allowed[domain] = z85.decode(public)

    def _run(self) -> None:
        sock = self._sock
        while True:
            try:
                request = sock.recv_multipart()
            except zmq.ZMQError:
                return  # the context is being terminated
            version, request_id = [*request, b"", b""][:2]
            ok = False
            if len(request) >= 7 and request[5] == b"CURVE":
                with self._lock:
                    wanted = self._allowed.get(request[2])
                ok = wanted is not None and request[6] == wanted
            status = (b"200", b"OK") if ok else (b"400", b"not this topology's key")
            try:
                sock.send_multipart([version, request_id, *status, b"", b""])
            except zmq.ZMQError:
                return


def _curve_server(sock: zmq.Socket[bytes], keys: tuple[bytes, bytes]) -> None:
    public, secret = keys
    _ZapHandler.admit(public, public)
    sock.setsockopt(zmq.ZAP_DOMAIN, public)
    sock.setsockopt(zmq.ZAP_ENFORCE_DOMAIN, 1)  # no ZAP handler answering: refuse, never admit
    sock.setsockopt(zmq.CURVE_SERVER, 1)
    sock.setsockopt(zmq.CURVE_SECRETKEY, secret)
    sock.setsockopt(zmq.CURVE_PUBLICKEY, public)


def _curve_client(sock: zmq.Socket[bytes], keys: tuple[bytes, bytes]) -> None:
    public, secret = keys
    sock.setsockopt(zmq.CURVE_SERVERKEY, public)
    sock.setsockopt(zmq.CURVE_PUBLICKEY, public)
    sock.setsockopt(zmq.CURVE_SECRETKEY, secret)


class ZmqSender:
    """A PUSH socket connected to one peer."""

    def __init__(
        self, transport: ZmqTransport, address: str, hwm: int, buffer_bytes: int = 0,
        curve: tuple[bytes, bytes] | None = None,
    ) -> None:  # fmt: skip
        self._transport = transport
        self._address = address
        self.authenticates = curve is not None and not address.startswith("inproc:")
        self._stats = TransportStats()
        self._lock = threading.Lock()
        self._closed = False
        sock = _context().socket(zmq.PUSH)
        try:
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.SNDHWM, hwm)
            if buffer_bytes:
                sock.setsockopt(zmq.SNDBUF, buffer_bytes)
            if curve is not None:
                _curve_client(sock, curve)
            sock.connect(address)
        except zmq.ZMQError as exc:
            sock.close(linger=0)
            raise TransportError(f"cannot connect to {address}: {exc}", address=address) from exc
        self._sock = sock

    @property
    def address(self) -> str:
        return self._address

    @property
    def stats(self) -> TransportStats:
        return self._stats

    def send(self, frame: bytes, block: bool = True, timeout: float | None = None) -> bool:
        stats = self._stats
        with self._lock:
            if self._closed:
                raise TransportError(f"sender to {self._address} is closed", address=self._address)
            sock = self._sock
            try:
                try:
                    sock.send(frame, zmq.NOBLOCK)
                except zmq.Again:
                    stats.send_blocked += 1
                    if not block or (timeout is not None and timeout <= 0):
                        stats.send_refused += 1
                        return False
                    if not self._send_waiting(sock, frame, timeout):
                        stats.send_refused += 1
                        return False
            except zmq.ZMQError as exc:
                raise TransportError(f"send to {self._address} failed: {exc}", address=self._address) from exc
            stats.frames_sent += 1
            stats.bytes_sent += len(frame)
            return True

    def _send_waiting(self, sock: zmq.Socket[bytes], frame: bytes, timeout: float | None) -> bool:
        """Wait for room in the queue (holding the lock) and send; False when ``timeout`` ran out first."""
        deadline = None if timeout is None else SYSTEM_CLOCK.now() + timeout
        while True:
            if self._closed:
                raise TransportError(
                    f"sender to {self._address} was closed while waiting to send", address=self._address
                )
            wait = _WAIT_SLICE
            if deadline is not None:
                wait = min(wait, deadline - SYSTEM_CLOCK.now())
                if wait <= 0:
                    return False
            if sock.poll(max(1, int(wait * 1000)), zmq.POLLOUT):
                try:
                    sock.send(frame, zmq.NOBLOCK)
                    return True
                except zmq.Again:
                    continue

    def close(self) -> None:
        self._closed = True  # seen by a send waiting for room, which then gives up the lock
        with self._lock:
            sock = self._sock
            if sock.closed:
                return
            sock.close(linger=0)
        self._transport._release(self)


class ZmqReceiver(ThreadedReceiver):
    """A PULL socket bound to this worker slot's address."""

    def __init__(
        self, transport: ZmqTransport, endpoint: str, hwm: int, max_message_size: int, buffer_bytes: int = 0,
        curve: tuple[bytes, bytes] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(log)
        self._monitor: zmq.Socket[bytes] | None = None
        self._transport = transport
        self._wake_w: int | None = None
        self._recv_lock = threading.Lock()
        sock = _context().socket(zmq.PULL)
        try:
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.RCVHWM, hwm)
            sock.setsockopt(zmq.MAXMSGSIZE, max_message_size)
            if buffer_bytes:
                sock.setsockopt(zmq.RCVBUF, buffer_bytes)
            if curve is not None:
                _curve_server(sock, curve)
                self._monitor = sock.get_monitor_socket(_REFUSED_EVENTS)
            sock.bind(endpoint)
            address = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        except zmq.ZMQError as exc:
            self._close_monitor(sock)
            sock.close(linger=0)
            raise TransportError(f"cannot bind {endpoint}: {exc}", address=endpoint) from exc
        self._sock = sock
        self._address = address or endpoint
        self.authenticates = curve is not None and not self._address.startswith("inproc:")
        self._errors = HandlerErrorLog(log, self._address)

    def _prepare_run(self) -> tuple[int]:
        """A pipe whose write end :meth:`_wake_thread` writes to; the thread gets the read end."""
        wake_r, wake_w = os.pipe()
        self._wake_w = wake_w
        return (wake_r,)

    def _run(self, on_frame: FrameHandler, wake_r: int) -> None:
        sock = self._sock
        stats = self._stats
        recv = sock.recv
        noblock = zmq.NOBLOCK
        again = zmq.Again
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        poller.register(wake_r, zmq.POLLIN)
        monitor = self._monitor
        if monitor is not None:
            poller.register(monitor, zmq.POLLIN)
        try:
            while True:
                events = dict(poller.poll())
                if wake_r in events:
                    return
                if monitor is not None and monitor in events:
                    self._count_refused()
                for _ in range(_DRAIN_MAX):
                    try:
                        frame = recv(noblock)
                    except again:
                        break
                    stats.frames_received += 1
                    stats.bytes_received += len(frame)
                    try:
                        on_frame(frame)
                    except Exception:
                        stats.handler_errors += 1
                        self._errors.report(stats.handler_errors)
        except zmq.ZMQError:
            log.exception("receiver on %s failed; it no longer receives", self._address)
        finally:
            os.close(wake_r)

    def _count_refused(self) -> None:
        """Count the handshakes this receiver refused since the last call (see the module docstring)."""
        monitor = self._monitor
        if monitor is None:
            return
        while True:
            try:
                event = recv_monitor_message(monitor, zmq.NOBLOCK)
            except zmq.ZMQError:
                return
            if event["event"] & _REFUSED_EVENTS:
                self._stats.peers_refused += 1
                if self._stats.peers_refused <= 5 or self._stats.peers_refused % 1000 == 0:
                    log.warning("receiver on %s refused a peer without the topology's CURVE key (%d so far)",
                                self._address, self._stats.peers_refused)  # fmt: skip

    def _close_monitor(self, sock: zmq.Socket[bytes]) -> None:
        monitor, self._monitor = self._monitor, None
        if monitor is not None:
            try:
                sock.disable_monitor()
            except zmq.ZMQError:
                pass
            monitor.close(linger=0)

    def _wake_thread(self) -> None:
        wake_w = self._wake_w
        self._wake_w = None
        if wake_w is not None:
            os.write(wake_w, b"x")
            os.close(wake_w)

    def recv(self, timeout: float | None = None) -> bytes | None:
        self._check_recv()
        with self._recv_lock:
            if self._closed:
                raise TransportError(f"receiver on {self._address} is closed", address=self._address)
            return self._recv_locked(timeout)

    def _recv_locked(self, timeout: float | None) -> bytes | None:
        sock = self._sock
        deadline = None if timeout is None else SYSTEM_CLOCK.now() + timeout
        try:
            while True:
                wait = _WAIT_SLICE
                if deadline is not None:
                    wait = min(wait, deadline - SYSTEM_CLOCK.now())
                self._count_refused()
                if sock.poll(max(0, int(wait * 1000)), zmq.POLLIN):
                    try:
                        frame = sock.recv(zmq.NOBLOCK)
                    except zmq.Again:
                        continue
                    self._stats.frames_received += 1
                    self._stats.bytes_received += len(frame)
                    return frame
                if deadline is not None and SYSTEM_CLOCK.now() >= deadline:
                    return None
                if self._closed:
                    raise TransportError(f"receiver on {self._address} is closed", address=self._address)
        except zmq.ZMQError as exc:
            raise TransportError(f"recv on {self._address} failed: {exc}", address=self._address) from exc

    def close(self) -> None:
        if not self._close_thread():  # a recv waiting in another thread sees it closed and gives up the lock
            return
        with self._recv_lock:
            sock = self._sock
            discarded = 0
            try:
                while discarded < _DISCARD_COUNT_MAX:
                    sock.recv(zmq.NOBLOCK)
                    discarded += 1
            except zmq.ZMQError:
                pass
            self._count_refused()
            self._close_monitor(sock)
            sock.close(linger=0)
        if discarded:
            self._stats.frames_discarded += discarded
            log.warning("receiver on %s closed with %d frames not received", self._address, discarded)
        self._transport._release(self)
        log.debug("receiver on %s closed", self._address)


class ZmqTransport(TransportEndpoints[ZmqSender, ZmqReceiver]):
    """The ZeroMQ :class:`~storm_py.transport.base.TransportContext`; ``hwm`` caps each socket's queue and
    ``max_message_size`` (bytes, -1 for none) each frame a receiver accepts; ``buffer_bytes`` (0: the kernel's
    sizing) sets each TCP socket's kernel buffer; ``curve_seed`` turns on CURVE (see the module docstring)."""

    def __init__(
        self, hwm: int = DEFAULT_HWM, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, buffer_bytes: int = 0,
        curve_seed: bytes | None = None,
    ) -> None:  # fmt: skip
        super().__init__("zmq", hwm, ZmqSender)
        if max_message_size == 0 or max_message_size < -1:
            raise TransportError(f"maximum message size must be positive (or -1 for none), got {max_message_size}",
                                 max_message_size=max_message_size)  # fmt: skip
        self.max_message_size = max_message_size
        if buffer_bytes < 0:
            raise TransportError(f"socket buffer size must be 0 or positive, got {buffer_bytes}",
                                 buffer_bytes=buffer_bytes)  # fmt: skip
        self.buffer_bytes = buffer_bytes
        self.curve = None if curve_seed is None else curve_keypair(curve_seed)

    def bind(self, host: str, port: int) -> ZmqReceiver:
        check_port(port)
        return self.bind_address(f"tcp://{host}:{port if port else '*'}")

    def bind_address(self, address: str) -> ZmqReceiver:
        with self._lock:
            self._check_open()
            receiver = ZmqReceiver(self, address, self.hwm, self.max_message_size, self.buffer_bytes, self.curve)
            self._receivers.add(receiver)
        log.debug("bound %s", receiver.address)
        return receiver

    def connect(self, address: str) -> ZmqSender:
        with self._lock:
            self._check_open()
            sender = ZmqSender(self, address, self.hwm, self.buffer_bytes, self.curve)
            self._senders.add(sender)
        return sender

    def _release(self, endpoint: ZmqSender | ZmqReceiver) -> None:
        with self._lock:
            self._forget(endpoint)

    def close(self) -> None:
        """Close this transport's sockets; the shared process-wide zmq context stays up for other users."""
        self._close_endpoints()
