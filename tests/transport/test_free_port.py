"""Ports for dev daemons: below the kernel's ephemeral range, free when picked."""

from __future__ import annotations

import socket

from storm_py.dev.zookeeper import ephemeral_low, free_port


def test_a_free_port_is_below_the_range_outgoing_connections_take_their_ports_from() -> None:
    low = ephemeral_low()
    assert low is not None, "this suite runs on Linux, which says its ephemeral range"
    ports = {free_port() for _ in range(20)}
    assert all(1024 <= p < low for p in ports), (ports, low)
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))  # free when picked
