"""Frames from a raw ZeroMQ socket: an oversized frame never reaches the worker, and does not stop others."""

from __future__ import annotations

import zmq

from storm_py.clock import wait_until
from storm_py.node.session import local_hostname
from storm_py.transport import open_transport


def test_an_oversized_frame_is_dropped_before_it_is_held() -> None:
    transport = open_transport("zmq", hwm=10, max_message_size=4096)
    receiver = transport.bind("127.0.0.1", 0)
    got: list[bytes] = []
    receiver.start(got.append)
    attacker: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.PUSH)
    attacker.setsockopt(zmq.LINGER, 0)
    try:
        attacker.connect(receiver.address)
        attacker.send(b"x" * (4096 + 1))
        attacker.send(b"after the oversized one")  # same connection: dropped with it
        honest = transport.connect(receiver.address)
        for i in range(20):
            honest.send(b"ok-%d" % i)
        wait_until(lambda: len(got) >= 20, 10.0, what="the honest sender's frames")
        assert got == [b"ok-%d" % i for i in range(20)]
        assert all(len(frame) <= 4096 for frame in got)
    finally:
        attacker.close(linger=0)
        transport.close()


def test_a_frame_at_the_limit_passes() -> None:
    transport = open_transport("zmq", hwm=10, max_message_size=4096)
    receiver = transport.bind("127.0.0.1", 0)
    got: list[bytes] = []
    receiver.start(got.append)
    try:
        transport.connect(receiver.address).send(b"y" * 4096)
        wait_until(lambda: bool(got), 10.0, what="the frame at the limit")
        assert got == [b"y" * 4096]
    finally:
        transport.close()


def test_daemons_listen_on_loopback_unless_told_otherwise() -> None:
    assert local_hostname({}) == "127.0.0.1"
    assert local_hostname({"storm.local.hostname": None}) == "127.0.0.1"
    assert local_hostname({"storm.local.hostname": "10.20.0.2"}) == "10.20.0.2"
