"""This module owns a worker process's traffic with its peers: one bound socket, one sender per peer, backpressure.

:class:`SocketTransfer` implements the worker's transport seam (``bind`` / ``send`` / ``unbind``) over a
:class:`~storm_py.transport.base.TransportContext` (ZeroMQ between processes).  Frames are encoded once per
destination worker (:mod:`storm_py.runtime.transfer.frames`).

Backpressure, without ever blocking the worker's loop thread (two workers sending to each other would
deadlock if both waited):

* receiving: the socket's thread hands a batch to the runtime only while the runtime's queued work is under
  ``topology.executor.receive.buffer.size`` (and its loop has taken in what it was handed); otherwise it
  waits, so the socket's bounded queue fills up and the peers' sends find it full (``receive_waits`` counts
  those waits);
* sending: a frame the peer's queue refuses goes to that peer's overflow, which a pump thread pushes in order
  (``send_blocked`` counts them).  The tuples held there shrink the runtime's work budget, so spouts stop
  emitting until the overflow drains: the sender waits, bolts keep running.

Nothing is dropped silently: frames for peers that are gone and items that cannot be encoded are counted
(``dropped_*``), a frame without the topology's tag (:mod:`~storm_py.runtime.transfer.auth`; no tag is sealed
or checked where the transport authenticates every frame itself, ZeroMQ CURVE between processes) is dropped unread,
logged and counted (``frames_unauthenticated``), and a corrupted frame is rejected whole, logged and counted
(``frames_rejected``); the spouts' message timeouts replay what was lost.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from storm_py.api.tuple import Tuple
from storm_py.errors import CodecError, TransportError
from storm_py.runtime.system_topology import ACKER_COMPONENT
from storm_py.runtime.transfer import Entries, TransferHost
from storm_py.runtime.transfer.auth import FrameAuth
from storm_py.runtime.transfer.frames import FrameDecoder, FrameTargets, encode_entries
from storm_py.transport.base import Sender, TransportContext

log = logging.getLogger(__name__)

#: How long the pump waits for room in one peer's queue before looking at the other peers again.
PUMP_SLICE_SECS = 0.05
#: Batches handed to the runtime and not yet taken in by its loop, beyond which the receiving thread waits.
INBOUND_BATCHES_MAX = 64
#: Longest single wait of the receiving thread while the runtime is over its budget.
RECEIVE_WAIT_MAX_SECS = 0.01
#: How many occurrences of a repeated problem are logged in full (then every 1000th).
LOGGED = 5


def split_key(worker_key: str) -> tuple[str, int]:
    """``node:port`` -> ``(node, port)``."""
    node, sep, port = worker_key.rpartition(":")
    if not sep or not node or not port.isdigit():
        raise TransportError(f"not a worker key (node:port): {worker_key!r}", key=worker_key)
    return node, int(port)


@dataclass
class TransferMetrics:
    """Counters of one worker's transfer (reported in its heartbeat)."""

    frames_sent: int = 0
    tuples_sent: int = 0
    frames_received: int = 0
    tuples_received: int = 0
    frames_rejected: int = 0
    frames_unauthenticated: int = 0
    send_blocked: int = 0
    receive_waits: int = 0
    overflow_tuples: int = 0
    overflow_max: int = 0
    dropped_no_peer: int = 0
    dropped_unencodable: int = 0
    dropped_pruned: int = 0
    #: peers refused at the handshake: without the topology's CURVE key, none of their frames is received
    peers_refused: int = 0

    def as_dict(self) -> dict[str, int]:
        """A JSON-ready snapshot."""
        return dict(self.__dict__)


@dataclass
class _Peer:
    key: str
    address: str
    sender: Sender
    lock: threading.Lock = field(default_factory=threading.Lock)
    overflow: deque[tuple[bytes, int]] = field(default_factory=deque)


class SocketTransfer:
    """A worker's bound socket plus its senders (see the module docstring).

    Args:
        transport: the transport context (ZeroMQ in a worker process).
        host: the interface this worker binds (its supervisor's hostname).
        resolve: the host of a supervisor id, from the current assignment (None when unknown).
        scheme: how an address is built from host and port.
        auth: seals sent frames and checks received ones with the topology's key (None: no tags).
    """

    def __init__(
        self,
        transport: TransportContext,
        host: str,
        resolve: Callable[[str], str | None],
        scheme: str = "tcp://{host}:{port}",
        auth: FrameAuth | None = None,
    ) -> None:
        self._transport = transport
        self._auth = auth
        self._host = host
        self._resolve = resolve
        self._scheme = scheme
        self.counters = TransferMetrics()
        self._peers: dict[str, _Peer] = {}
        self._peers_lock = threading.Lock()
        self._key = ""
        self._runtime: TransferHost | None = None
        self._decoder: FrameDecoder | None = None
        self._receiver: Any = None
        self._opener: FrameAuth | None = None  # checks tags on arrival, unless the receiver authenticates
        self._base_limit = 0
        self._budget_lock = threading.Lock()
        self._queued = 0  # tuples put in overflow, ever (under _budget_lock)
        self._drained = 0  # tuples taken out of overflow, ever (under _budget_lock)
        self._closing = threading.Event()
        self._wake = threading.Condition()
        self._pump: threading.Thread | None = None
        self._log_counts: dict[str, int] = {}
        self._pumped_frames = 0  # sent from overflow (written by the pump thread only)
        self._pumped_tuples = 0
        self._handling = 0  # frames taken off the socket and not yet handed to the runtime (or rejected)

    # ------------------------------------------------------------------------------------------- the seam

    def bind(self, worker_key: str, runtime: TransferHost) -> None:
        """Bind this worker's slot port, hand arriving batches to ``runtime`` and become its sender."""
        _, port = split_key(worker_key)
        self._key = worker_key
        self._runtime = runtime
        self._base_limit = runtime.backlog_limit
        targets = FrameTargets.of(
            runtime.topology.components(), runtime.task_to_component, runtime.worker_tasks, ACKER_COMPONENT
        )
        self._decoder = FrameDecoder(runtime.task_to_component, runtime.component_streams, targets,
                                     runtime.columnar_streams)
        self._receiver = self._transport.bind(self._host, port)
        # where the transport authenticates every frame (CURVE), a tag would only repeat it: docs/DESIGN.md,
        # "Frame tags under CURVE"
        self._opener = None if self._receiver.authenticates else self._auth
        self._receiver.start(self._on_frame)
        self._pump = threading.Thread(target=self._run_pump, name=f"transfer-pump-{worker_key}", daemon=True)
        self._pump.start()
        runtime.send_remote = self.send
        runtime.peer_backlog = self.peer_backlog
        log.info("worker %s receiving on %s", worker_key, self._receiver.address)

    def peer_backlog(self, worker_key: str) -> int:
        """Tuples waiting in the overflow of the peer ``worker_key`` (its queue refused them): the load a
        load-aware shuffle reads for that worker's tasks."""
        peer = self._peers.get(worker_key)
        if peer is None:
            return 0
        with peer.lock:
            return sum(n for _, n in peer.overflow)

    def send(self, worker_key: str, entries: Entries) -> None:
        """Send one batch to a peer worker (called from the worker loop; never blocks it)."""
        encoded = encode_entries(self._key, entries)
        m = self.counters
        if encoded.rejected:
            m.dropped_unencodable += len(encoded.rejected)
            self._report_unencodable(encoded.rejected)
        if encoded.frame is None:
            return
        if self._closing.is_set():  # the worker is stopping: nothing leaves any more
            m.dropped_no_peer += encoded.count
            return
        try:
            peer = self._peer(worker_key)
        except TransportError as err:
            m.dropped_no_peer += encoded.count
            self._warn("connect_failed", "dropped %d tuple(s) for %s: %s", encoded.count, worker_key, err)
            return
        if peer is None:
            m.dropped_no_peer += encoded.count
            self._warn("no_peer", "dropped %d tuple(s) for %s: its host is unknown", encoded.count, worker_key)
            return
        if self._auth is not None and not peer.sender.authenticates:  # CURVE's boxes already authenticate
            encoded.frame = self._auth.seal(encoded.frame)
        with peer.lock:
            if not peer.overflow:
                try:
                    sent = peer.sender.send(encoded.frame, block=False)
                except TransportError as err:
                    m.dropped_no_peer += encoded.count
                    self._warn("send_failed", "dropped %d tuple(s) for %s: %s", encoded.count, worker_key, err)
                    return
                if sent:
                    m.frames_sent += 1
                    m.tuples_sent += encoded.count
                    return
            m.send_blocked += 1
            peer.overflow.append((encoded.frame, encoded.count))
        self._account(queued=encoded.count)
        with self._wake:
            self._wake.notify()

    def unbind(self, worker_key: str) -> None:
        """Stop receiving and sending; frames still in overflow are dropped (and counted)."""
        self._closing.set()
        with self._wake:
            self._wake.notify_all()
        if self._receiver is not None:
            self._receiver.close()
        if self._pump is not None and self._pump is not threading.current_thread():
            self._pump.join(5.0)
        self.prune(())

    def metrics(self) -> dict[str, int]:
        """The transfer counters (for the worker heartbeat)."""
        m = self.counters
        m.overflow_tuples = self._queued - self._drained
        if self._receiver is not None:
            m.peers_refused = self._receiver.stats.peers_refused
        out = m.as_dict()
        out["frames_sent"] += self._pumped_frames
        out["tuples_sent"] += self._pumped_tuples
        return out

    def busy(self) -> bool:
        """Whether frames of this worker wait in its overflow or are being handed to its runtime."""
        return self._handling > 0 or self._queued != self._drained

    def close(self) -> None:
        """Release every socket of this transfer."""
        self.unbind(self._key)
        self._transport.close()

    # ------------------------------------------------------------------------------------------- peers

    def prune(self, keep: Iterable[str]) -> None:
        """Forget peers not in ``keep`` (moved or gone); their overflow is dropped and counted."""
        wanted = set(keep)
        with self._peers_lock:
            gone = [p for k, p in self._peers.items() if k not in wanted]
            for p in gone:
                del self._peers[p.key]
        for peer in gone:
            with peer.lock:
                n = sum(c for _, c in peer.overflow)
                peer.overflow.clear()
            self.counters.dropped_pruned += n
            self._account(drained=n)
            peer.sender.close()
            if n:
                log.warning("dropped %d tuple(s) queued for %s, which no longer runs", n, peer.key)

    def _peer(self, worker_key: str) -> _Peer | None:
        peer = self._peers.get(worker_key)
        if peer is not None:
            return peer
        node, port = split_key(worker_key)
        host = self._resolve(node)
        if host is None:
            return None
        address = self._scheme.format(host=host, port=port)
        with self._peers_lock:
            peer = self._peers.get(worker_key)
            if peer is None:
                peer = _Peer(worker_key, address, self._transport.connect(address))
                self._peers[worker_key] = peer
                log.debug("worker %s connected to %s at %s", self._key, worker_key, address)
        return peer

    # ------------------------------------------------------------------------------------------- budget

    def _account(self, queued: int = 0, drained: int = 0) -> None:
        """Count tuples into or out of overflow and shrink the runtime's work budget by what is held there.

        The runtime's spouts stop emitting when their worker's queued work reaches the budget, so a full
        overflow pauses them until the pump has drained it.
        """
        rt = self._runtime
        with self._budget_lock:
            self._queued += queued
            self._drained += drained
            pending = self._queued - self._drained
            m = self.counters
            m.overflow_tuples = pending
            if pending > m.overflow_max:
                m.overflow_max = pending
            if rt is not None:
                rt.backlog_limit = max(0, self._base_limit - pending)
        if rt is not None and pending == 0:
            rt.wake.set()

    def _run_pump(self) -> None:
        while not self._closing.is_set():
            with self._peers_lock:
                peers = [p for p in self._peers.values() if p.overflow]
            if not peers:
                with self._wake:
                    if not any(p.overflow for p in list(self._peers.values())):
                        self._wake.wait(0.5)
                continue
            for peer in peers:
                self._drain(peer)

    def _drain(self, peer: _Peer) -> None:
        while peer.overflow and not self._closing.is_set():
            frame, count = peer.overflow[0]
            try:
                sent = peer.sender.send(frame, block=True, timeout=PUMP_SLICE_SECS)
            except TransportError:
                return  # the peer was pruned meanwhile
            if not sent:
                return
            with peer.lock:
                if not (peer.overflow and peer.overflow[0][0] is frame):
                    return  # pruned meanwhile; already accounted for
                peer.overflow.popleft()
            self._pumped_frames += 1
            self._pumped_tuples += count
            self._account(drained=count)

    # ------------------------------------------------------------------------------------------- receiving

    def _on_frame(self, data: bytes) -> None:
        rt = self._runtime
        decoder = self._decoder
        if rt is None or decoder is None:
            return
        m = self.counters
        self._handling += 1
        try:
            if self._opener is not None:
                opened = self._opener.open(data)
                if opened is None:
                    m.frames_unauthenticated += 1
                    self._warn("unauthenticated", "dropped a frame of %d bytes on %s: its tag is not this "
                               "topology's", len(data), self._key)  # fmt: skip
                    return
                data = opened
            try:
                _src, entries, n = decoder.decode(data)
            except CodecError as err:
                m.frames_rejected += 1
                self._warn("rejected", "rejected a frame of %d bytes on %s: %s", len(data), self._key, err.message)
                return
            m.frames_received += 1
            m.tuples_received += n
            if self._overloaded(rt):
                m.receive_waits += 1
                wait = 0.0005
                while self._overloaded(rt) and not self._closing.is_set():
                    self._closing.wait(wait)
                    wait = min(wait * 2, RECEIVE_WAIT_MAX_SECS)
            rt.deliver(entries)
        finally:
            self._handling -= 1

    def _overloaded(self, rt: TransferHost) -> bool:
        """The runtime has as much queued work as it may: its executors' inboxes are full, or batches handed
        over have not been taken in yet (its loop is busy)."""
        return rt.backlog >= self._base_limit or len(rt.inbound) >= INBOUND_BATCHES_MAX

    # ------------------------------------------------------------------------------------------- logging

    def _warn(self, kind: str, msg: str, *args: Any) -> None:
        n = self._log_counts.get(kind, 0) + 1
        self._log_counts[kind] = n
        if n <= LOGGED or n % 1000 == 0:
            log.warning("%s (%d so far)", msg % args, n)

    def _report_unencodable(self, rejected: list[tuple[int, Any, CodecError]]) -> None:
        """Report the first item the codec refused and fail the trees of all of them at once."""
        rt = self._runtime
        for _task, item, err in rejected[:1]:
            comp, src = (item.source_component, item.source_task) if isinstance(item, Tuple) else ("?", -1)
            self._warn("unencodable", "cannot send a tuple of %s to another worker: %s", comp, err.message)
            if rt is not None:
                rt.report_error(comp, src, err)
        if rt is not None:
            rt.fail_unsent([item for _, item, _ in rejected])
