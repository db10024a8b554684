"""ZeroMQ CURVE between workers: traffic flows between holders of the topology's key; a peer without it (another
key, or no CURVE at all) completes no handshake, gets no frame through, and is counted."""

from __future__ import annotations

import pytest
import zmq

from storm_py.clock import wait_until
from storm_py.errors import ConfigError, TransportError
from storm_py.runtime.transfer.auth import topology_curve_seed
from storm_py.transport import open_transport
from storm_py.transport.zmq import curve_keypair

CONF = {"storm.messaging.encryption": "curve", "nimbus.auth.token": "a-cluster-token-0123456789"}


def leaked_key_socket(seed: bytes) -> zmq.Socket[bytes]:
    """A PUSH socket of a peer that learnt the server's public key, with a CURVE key pair of its own."""
    leaked: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.PUSH)
    leaked.setsockopt(zmq.LINGER, 0)
    own_public, own_secret = zmq.curve_keypair()
    leaked.setsockopt(zmq.CURVE_SERVERKEY, curve_keypair(seed)[0])
    leaked.setsockopt(zmq.CURVE_PUBLICKEY, own_public)
    leaked.setsockopt(zmq.CURVE_SECRETKEY, own_secret)
    return leaked


def test_holders_of_the_topology_key_talk_and_a_peer_without_it_is_refused_and_counted() -> None:
    seed = topology_curve_seed(CONF, "wc-1-1")
    other = topology_curve_seed(CONF, "other-2-2")
    assert seed is not None and other is not None and seed != other
    server = open_transport("zmq", curve_seed=seed)
    client = open_transport("zmq", curve_seed=seed)
    stranger = open_transport("zmq", curve_seed=other)
    receiver = server.bind("127.0.0.1", 0)
    got: list[bytes] = []
    receiver.start(got.append)
    plain: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.PUSH)
    plain.setsockopt(zmq.LINGER, 0)
    # a peer that learnt the server's public key, with a key pair of its own
    leaked = leaked_key_socket(seed)
    try:
        stranger.connect(receiver.address).send(b"from another topology", block=False)
        plain.connect(receiver.address)
        plain.send(b"in clear text", zmq.NOBLOCK)
        leaked.connect(receiver.address)
        leaked.send(b"with the server's public key", zmq.NOBLOCK)
        wait_until(lambda: receiver.stats.peers_refused >= 3, 10.0, what="the three strangers refused")
        honest = client.connect(receiver.address)
        for i in range(20):
            honest.send(b"ok-%d" % i)
        wait_until(lambda: len(got) >= 20, 10.0, what="the topology's own frames")
        assert got == [b"ok-%d" % i for i in range(20)]
        assert server.stats().peers_refused >= 3
    finally:
        plain.close(linger=0)
        leaked.close(linger=0)
        for transport in (server, client, stranger):
            transport.close()


def test_encryption_settings_are_checked() -> None:
    assert topology_curve_seed({"nimbus.auth.token": "x" * 20}, "t") is None
    assert topology_curve_seed({**CONF, "storm.messaging.encryption": "none"}, "t") is None
    with pytest.raises(ConfigError, match="cluster secret"):
        topology_curve_seed({"storm.messaging.encryption": "curve"}, "t")
    with pytest.raises(ConfigError, match="'none' or 'curve'"):
        topology_curve_seed({**CONF, "storm.messaging.encryption": "tls"}, "t")
    with pytest.raises(TransportError, match="32 bytes"):
        curve_keypair(b"short")
    public, secret = curve_keypair(b"s" * 32)
    assert len(public) == len(secret) == 40 and public != secret
