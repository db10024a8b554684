"""The unit tier tests pure cores: no network.  Opening a socket here fails the test (use the process tier)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


class NetworkInUnitTier(AssertionError):
    pass


def _refuse(*args: object, **kwargs: object) -> None:
    raise NetworkInUnitTier("a unit test opened a network connection: move it out of tests/unit")


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", _refuse)
    monkeypatch.setattr(socket.socket, "bind", _refuse)
    yield
