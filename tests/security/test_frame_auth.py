"""Frame tags: the topology key, sealing and opening, and a raw ZeroMQ attacker against a worker's socket."""

from __future__ import annotations

import zmq

from storm_py.api.tuple import Fields, Tuple
from storm_py.clock import wait_until
from storm_py.dev.zookeeper import free_port
from storm_py.runtime.transfer.auth import TAG_BYTES, FrameAuth, topology_frame_key
from storm_py.runtime.transfer.frames import encode_entries
from storm_py.runtime.transfer.socket_transfer import SocketTransfer
from storm_py.transport.zmq import ZmqTransport
from tests.security.test_frame_fuzz import WORKERS, Cluster


def test_keys_are_per_topology_and_need_the_cluster_secret() -> None:
    conf = {"storm.zookeeper.auth.payload": "storm:secret"}
    one, two = topology_frame_key(conf, "wc-1-1"), topology_frame_key(conf, "wc-2-1")
    assert one is not None and two is not None and one != two and len(one) == 32
    assert topology_frame_key({"storm.zookeeper.auth.payload": "storm:other"}, "wc-1-1") != one
    assert topology_frame_key({"nimbus.auth.token": "t"}, "wc-1-1") is not None
    assert topology_frame_key({}, "wc-1-1") is None


def test_seal_and_open() -> None:
    auth, other = FrameAuth(b"a" * 32), FrameAuth(b"b" * 32)
    sealed = auth.seal(b"frame bytes")
    assert len(sealed) == len(b"frame bytes") + TAG_BYTES
    assert auth.open(sealed) == b"frame bytes"
    assert other.open(sealed) is None  # another topology's key
    assert auth.open(b"frame bytes") is None  # no tag
    assert auth.open(sealed[:-1]) is None and auth.open(b"") is None
    for i in range(len(sealed)):
        flipped = sealed[:i] + bytes([sealed[i] ^ 1]) + sealed[i + 1:]
        assert auth.open(flipped) is None


def test_a_raw_zmq_sender_without_the_key_cannot_inject_a_tuple() -> None:
    """A well-formed frame carrying a tuple a bolt subscribes to, sent from a raw socket: never delivered."""
    cluster = Cluster(limit=0)
    port = free_port()
    key = b"t" * 32
    transfer = SocketTransfer(ZmqTransport(), "127.0.0.1", lambda _n: None, auth=FrameAuth(key))
    rt = cluster.runtimes[WORKERS[1]]
    before = len(rt.inbound)
    transfer.bind(f"w1:{port}", rt)
    bolt = next(t for ex in rt.executors if not ex.is_spout and not ex.is_acker and ex.component_id == "relay"
                for t in ex.task_ids)  # fmt: skip
    spout = next(t for t, c in rt.task_to_component.items() if c == "numbers")
    forged = encode_entries("w0:1", [(bolt, [Tuple([7], Fields("n"), "numbers", "default", spout, None)])]).frame
    assert forged is not None
    attacker: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.PUSH)
    attacker.setsockopt(zmq.LINGER, 0)
    try:
        attacker.connect(f"tcp://127.0.0.1:{port}")
        attacker.send(forged)
        attacker.send(forged + b"\x00" * TAG_BYTES)  # a made-up tag
        attacker.send(FrameAuth(b"x" * 32).seal(forged))  # another topology's key
        wait_until(lambda: transfer.counters.frames_unauthenticated == 3, 10.0, what="three frames dropped")
        assert transfer.counters.frames_received == 0 and len(rt.inbound) == before
        # The same frame sealed with the topology's key is delivered.
        attacker.send(FrameAuth(key).seal(forged))
        wait_until(lambda: transfer.counters.frames_received == 1, 10.0, what="the sealed frame")
    finally:
        attacker.close(linger=0)
        transfer.close()
        cluster.close()
