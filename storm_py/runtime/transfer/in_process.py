"""This module owns the transfer between the workers of one process (LocalCluster).

A worker whose topology sets ``topology.testing.always.try.serialize`` (Storm's key; the test kit sets it) is
bound to a :class:`~storm_py.runtime.transfer.socket_transfer.SocketTransfer` over in-process mailboxes: every
tuple it sends to another worker is encoded and decoded by the real codec and frames, what the codec refuses
fails as on a cluster, and the socket transfer's backpressure runs.  Other workers hand batches over as
objects, by worker key.  Either way the part is swapped at bind time; the runtime and the worker do not know
which one they got.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable

from storm_py.runtime.transfer import Entries, TransferHost
from storm_py.runtime.transfer.socket_transfer import SocketTransfer, split_key
from storm_py.transport.base import DEFAULT_HWM, FrameHandler, Receiver, Sender, TransportContext, TransportStats
from storm_py.transport.memory import MemoryTransport

log = logging.getLogger(__name__)

#: tuples held for a worker that is not (yet) bound before further ones are dropped and counted
MAX_HELD = 200_000

#: Storm's topology key: serialize every tuple that leaves a worker, also in a local cluster
ALWAYS_TRY_SERIALIZE = "topology.testing.always.try.serialize"


class InProcessTransfer:
    """The transport of a LocalCluster's workers, keyed ``node:port`` (see the module docstring).

    Like a ZeroMQ PUSH socket connecting before its peer binds, object batches for a worker that is not bound
    yet are held (up to :data:`MAX_HELD` tuples per worker) and handed over when it binds; beyond that they are
    dropped and counted in ``dropped``.  A slot's key outlives its worker: a topology killed and submitted again
    may get the same slot, so object batches go only to a worker of the sender's topology (a worker of the killed
    one still running drops nothing into its successor's tasks, whose ids name other components).
    """

    def __init__(self, hwm: int = DEFAULT_HWM) -> None:
        self._lock = threading.Lock()
        #: each bound worker's topology and delivery
        self._receivers: dict[str, tuple[str, Callable[[Entries], None]]] = {}
        #: what waits for a worker that is not bound, by ``(topology id, worker key)``
        self._held: dict[tuple[str, str], list[Entries]] = {}
        self._held_count: dict[tuple[str, str], int] = {}
        self.dropped = 0
        self._mailboxes = CountingTransport(MemoryTransport(hwm=hwm))
        self._framed: dict[str, SocketTransfer] = {}

    def bind(self, worker_key: str, runtime: TransferHost) -> None:
        """Start delivering to ``runtime`` what arrives for ``worker_key`` and become its sender."""
        if runtime.conf.get(ALWAYS_TRY_SERIALIZE):
            node, _ = split_key(worker_key)
            framed = SocketTransfer(self._mailboxes, node, resolve=lambda n: n, scheme="memory://{host}:{port}")
            framed.bind(worker_key, runtime)
            with self._lock:
                self._framed[worker_key] = framed
            return
        deliver = runtime.deliver
        topology = runtime.topology_id
        runtime.send_remote = functools.partial(self.send_from, topology)
        with self._lock:
            self._receivers[worker_key] = (topology, deliver)
            held = self._held.pop((topology, worker_key), [])
            self._held_count.pop((topology, worker_key), None)
        for entries in held:
            deliver(entries)

    def unbind(self, worker_key: str) -> None:
        """Stop delivering to the worker (what is sent to it later waits for its next bind).

        The other framed workers forget it as a peer, as a worker process prunes peers that left its
        assignment: what they hold for it in their overflow is dropped and counted, and a later send
        connects again.
        """
        with self._lock:
            self._receivers.pop(worker_key, None)
            framed = self._framed.pop(worker_key, None)
            others = list(self._framed.values())
            bound = list(self._framed)
        if framed is not None:
            framed.unbind(worker_key)
        for other in others:
            other.prune(bound)

    def metrics(self) -> dict[str, int]:
        """No counters per worker: objects are handed over, never framed (a framed worker's are not reported)."""
        return {}

    def send(self, worker_key: str, entries: Entries) -> None:
        """Hand a batch to the worker bound to ``worker_key`` as objects, whatever its topology (a bound worker
        sends through :meth:`send_from`, which checks it and holds what waits for a worker to bind)."""
        receiver = self._receivers.get(worker_key)
        if receiver is not None:
            receiver[1](entries)
            return
        n = sum(len(items) for _, items in entries)
        self.dropped += n
        log.warning("dropped %d tuples for worker %s, which is not running", n, worker_key)

    def send_from(self, topology: str, worker_key: str, entries: Entries) -> None:
        """Hand a batch of a worker of ``topology`` to a worker as objects (held while none is bound to the key);
        a worker of another topology bound to the key gets nothing: the batch is dropped and counted."""
        receiver = self._receivers.get(worker_key)
        if receiver is None:
            n = sum(len(items) for _, items in entries)
            with self._lock:
                receiver = self._receivers.get(worker_key)
                if receiver is None:
                    key = (topology, worker_key)
                    count = self._held_count.get(key, 0)
                    if count + n > MAX_HELD:
                        self.dropped += n
                        log.warning("dropped %d tuples for worker %s, which is not running", n, worker_key)
                        return
                    self._held.setdefault(key, []).append(entries)
                    self._held_count[key] = count + n
                    return
        bound, deliver = receiver
        if bound != topology:
            n = sum(len(items) for _, items in entries)
            self.dropped += n
            log.warning("dropped %d tuples of topology %s for worker %s, which now runs topology %s", n, topology,
                        worker_key, bound)
            return
        deliver(entries)

    def idle(self) -> bool:
        """No frame is on its way to a running worker, waiting in a sender's overflow or being delivered.

        What is held for a worker that is not running is dropped (and counted) first: nothing will take it.
        """
        with self._lock:
            framed = list(self._framed.values())
            bound = list(self._framed)
        for transfer in framed:
            transfer.prune(bound)
        return self._mailboxes.idle() and not any(f.busy() for f in framed)

    def close(self) -> None:
        """Unbind every framed worker and close the mailboxes."""
        with self._lock:
            framed = list(self._framed.items())
            self._framed.clear()
        for key, transfer in framed:
            transfer.unbind(key)
        self._mailboxes.close()


class CountingTransport:
    """A transport context that counts frames sent to each bound address and not yet handled there.

    It wraps another context (in-process mailboxes) so that a local cluster can tell exactly when nothing is
    in flight between its workers; frames for an address nobody is bound to do not count.
    """

    def __init__(self, inner: TransportContext) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}
        self._bound: set[str] = set()

    @property
    def scheme(self) -> str:
        return self._inner.scheme

    def bind(self, host: str, port: int) -> Receiver:
        return _CountingReceiver(self._inner.bind(host, port), self)

    def bind_address(self, address: str) -> Receiver:
        return _CountingReceiver(self._inner.bind_address(address), self)

    def connect(self, address: str) -> Sender:
        return _CountingSender(self._inner.connect(address), self)

    def stats(self) -> TransportStats:
        return self._inner.stats()

    def close(self) -> None:
        self._inner.close()

    def idle(self) -> bool:
        """No frame sent to a bound address is still unhandled."""
        with self._lock:
            return not any(self._in_flight.get(a, 0) for a in self._bound)

    def _count(self, address: str, delta: int) -> None:
        with self._lock:
            self._in_flight[address] = self._in_flight.get(address, 0) + delta

    def _set_bound(self, address: str, bound: bool) -> None:
        with self._lock:
            if bound:
                self._bound.add(address)
            else:
                self._bound.discard(address)


class _CountingSender:
    def __init__(self, inner: Sender, counter: CountingTransport) -> None:
        self._inner = inner
        self._counter = counter

    @property
    def address(self) -> str:
        return self._inner.address

    @property
    def stats(self) -> TransportStats:
        return self._inner.stats

    @property
    def authenticates(self) -> bool:
        return self._inner.authenticates

    def send(self, frame: bytes, block: bool = True, timeout: float | None = None) -> bool:
        address = self._inner.address
        self._counter._count(address, 1)  # counted before the receiver can see it
        sent = self._inner.send(frame, block, timeout)
        if not sent:
            self._counter._count(address, -1)
        return sent

    def close(self) -> None:
        self._inner.close()


class _CountingReceiver:
    def __init__(self, inner: Receiver, counter: CountingTransport) -> None:
        self._inner = inner
        self._counter = counter
        counter._set_bound(inner.address, True)

    @property
    def address(self) -> str:
        return self._inner.address

    @property
    def stats(self) -> TransportStats:
        return self._inner.stats

    @property
    def authenticates(self) -> bool:
        return self._inner.authenticates

    @property
    def running(self) -> bool:
        return self._inner.running

    def start(self, on_frame: FrameHandler) -> None:
        address = self._inner.address
        count = self._counter._count

        def handle(frame: bytes) -> None:
            try:
                on_frame(frame)
            finally:
                count(address, -1)

        self._inner.start(handle)

    def stop(self) -> None:
        self._inner.stop()

    def recv(self, timeout: float | None = None) -> bytes | None:
        frame = self._inner.recv(timeout)
        if frame is not None:
            self._counter._count(self._inner.address, -1)
        return frame

    def close(self) -> None:
        self._counter._set_bound(self._inner.address, False)
        self._inner.close()
