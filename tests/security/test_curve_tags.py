"""Frame tags under CURVE: a worker neither seals nor checks tags where CURVE authenticates every frame (TCP, IPC),
still does everywhere else (``inproc://``, the in-memory transport, no CURVE), and a peer without the topology's
CURVE key gets nothing through, tagged or not."""

from __future__ import annotations

from typing import Any

import zmq

from storm_py.api.tuple import Fields, Tuple
from storm_py.clock import wait_until
from storm_py.dev.zookeeper import free_port
from storm_py.runtime.transfer.auth import TAG_BYTES, FrameAuth, topology_curve_seed, topology_frame_key
from storm_py.runtime.transfer.frames import encode_entries
from storm_py.runtime.transfer.socket_transfer import SocketTransfer
from storm_py.transport import open_transport
from storm_py.transport.zmq import ZmqReceiver, ZmqTransport
from tests.security.test_curve_transport import leaked_key_socket
from tests.security.test_frame_fuzz import WORKERS, Cluster

CONF = {"storm.messaging.encryption": "curve", "nimbus.auth.token": "a-cluster-token-0123456789"}
TOPOLOGY = "wc-1-1"


def _keys() -> tuple[bytes, bytes]:
    """The topology's CURVE seed and frame key."""
    seed, key = topology_curve_seed(CONF, TOPOLOGY), topology_frame_key(CONF, TOPOLOGY)
    assert seed is not None and key is not None
    return seed, key


def _curve_transfer(seed: bytes, key: bytes, peer_host: str | None) -> SocketTransfer:
    """A worker's transfer under CURVE with the topology's frame key; every peer at ``peer_host``."""
    return SocketTransfer(ZmqTransport(curve_seed=seed), "127.0.0.1", lambda _n: peer_host, auth=FrameAuth(key))


def _relay_tuple(rt: Any) -> list[tuple[int, list[Any]]]:
    """Entries carrying one tuple the worker's relay bolt subscribes to."""
    bolt = next(t for ex in rt.executors if not ex.is_spout and not ex.is_acker and ex.component_id == "relay"
                for t in ex.task_ids)  # fmt: skip
    spout = next(t for t, c in rt.task_to_component.items() if c == "numbers")
    return [(bolt, [Tuple([7], Fields("n"), "numbers", "default", spout, None)])]


def test_only_curve_over_a_network_address_authenticates() -> None:
    seed = topology_curve_seed(CONF, TOPOLOGY)
    curve, plain = ZmqTransport(curve_seed=seed), ZmqTransport()
    memory = open_transport("memory")
    try:
        tcp = curve.bind("127.0.0.1", 0)
        assert tcp.authenticates and curve.connect(tcp.address).authenticates
        ipc = curve.bind_address(f"ipc:///tmp/storm-py-curve-tags-{free_port()}")
        assert ipc.authenticates and curve.connect(ipc.address).authenticates
        # ZeroMQ applies no security mechanism to inproc: the tags stay
        inproc = curve.bind_address(f"inproc://curve-tags-{free_port()}")
        assert not inproc.authenticates and not curve.connect(inproc.address).authenticates
        clear = plain.bind("127.0.0.1", 0)
        assert not clear.authenticates and not plain.connect(clear.address).authenticates
        mem = memory.bind("127.0.0.1", free_port())
        assert not mem.authenticates and not memory.connect(mem.address).authenticates
    finally:
        for transport in (curve, plain, memory):
            transport.close()


def test_under_curve_frames_go_untagged_between_key_holders_and_nothing_gets_in_without_the_key() -> None:
    seed, key = _keys()
    cluster = Cluster(limit=0)
    port = free_port()
    receiving = _curve_transfer(seed, key, None)
    sending = _curve_transfer(seed, key, "127.0.0.1")
    rt = cluster.runtimes[WORKERS[1]]
    before = len(rt.inbound)
    receiving.bind(f"w1:{port}", rt)
    sending.bind(f"w0:{free_port()}", cluster.runtimes[WORKERS[0]])
    entries = _relay_tuple(rt)
    frame = encode_entries(sending._key, entries).frame
    assert frame is not None
    plain: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.PUSH)
    plain.setsockopt(zmq.LINGER, 0)
    try:
        # without CURVE, even a frame sealed with the topology's frame key is never received
        plain.connect(f"tcp://127.0.0.1:{port}")
        plain.send(FrameAuth(key).seal(frame))
        plain.send(frame)
        wait_until(lambda: receiving.metrics()["peers_refused"] >= 1, 10.0, what="the plain peer refused")
        assert receiving.counters.frames_received == 0 and receiving.counters.frames_unauthenticated == 0
        assert len(rt.inbound) == before
        # a worker of the topology sends the frame as it is, and it is delivered
        sending.send(f"w1:{port}", entries)
        wait_until(lambda: receiving.counters.frames_received == 1, 10.0, what="the key holder's frame")
        peer = sending._peers[f"w1:{port}"]
        assert peer.sender.authenticates and peer.sender.stats.bytes_sent == len(frame)  # no tag on it
        assert receiving.counters.frames_unauthenticated == 0 and receiving.counters.frames_rejected == 0
        wait_until(lambda: len(rt.inbound) > before, 10.0, what="the tuple handed to the worker")
    finally:
        plain.close(linger=0)
        sending.close()
        receiving.close()
        cluster.close()


class _InprocZmq(ZmqTransport):
    """Binds a worker's slot on ``inproc://`` (where ZeroMQ runs no CURVE) instead of TCP."""

    def bind(self, host: str, port: int) -> ZmqReceiver:
        return self.bind_address(f"inproc://{host}-{port}")


def test_a_curve_receiver_on_inproc_still_checks_tags() -> None:
    seed, key = _keys()
    cluster = Cluster(limit=0)
    receiving = SocketTransfer(_InprocZmq(curve_seed=seed), "127.0.0.1", lambda _n: None, auth=FrameAuth(key))
    rt = cluster.runtimes[WORKERS[1]]
    receiving.bind(f"curve-tags-{free_port()}:1", rt)
    frame = encode_entries("w0:1", _relay_tuple(rt)).frame
    assert frame is not None
    # the process's own sockets on inproc: no CURVE on the way, so an untagged frame is dropped unread
    raw: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.PUSH)
    raw.setsockopt(zmq.LINGER, 0)
    try:
        raw.connect(receiving._receiver.address)
        raw.send(frame)
        wait_until(lambda: receiving.counters.frames_unauthenticated == 1, 10.0, what="the untagged frame dropped")
        raw.send(FrameAuth(key).seal(frame))
        wait_until(lambda: receiving.counters.frames_received == 1, 10.0, what="the tagged frame")
        assert len(FrameAuth(key).seal(frame)) == len(frame) + TAG_BYTES
    finally:
        raw.close(linger=0)
        receiving.close()
        cluster.close()


def test_a_curve_client_with_the_servers_public_key_but_its_own_pair_gets_no_frame_in() -> None:
    """The one CURVE peer that could try an untagged frame: it knows the receiver's public key, not the secret."""
    seed, key = _keys()
    cluster = Cluster(limit=0)
    port = free_port()
    receiving = _curve_transfer(seed, key, None)
    rt = cluster.runtimes[WORKERS[1]]
    receiving.bind(f"w1:{port}", rt)
    frame = encode_entries("w0:1", _relay_tuple(rt)).frame
    assert frame is not None
    leaked = leaked_key_socket(seed)
    try:
        leaked.connect(f"tcp://127.0.0.1:{port}")
        leaked.send(frame)
        wait_until(lambda: receiving.metrics()["peers_refused"] >= 1, 10.0, what="the leaked-key peer refused")
        assert receiving.counters.frames_received == 0
    finally:
        leaked.close(linger=0)
        receiving.close()
        cluster.close()
