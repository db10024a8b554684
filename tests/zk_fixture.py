"""Pytest plugin: the session's real ZooKeeper (``storm-py dev-zookeeper``'s server) and per-test chroots.

``zookeeper`` (session scope) runs :class:`~storm_py.dev.zookeeper.ZooKeeperProcess` on a free loopback port
with a temporary data dir.  A missing Java or ZooKeeper fails the test with the fix to apply (never a skip: CI
must run these tests).  ``zk_chroot`` gives each test its own chroot path, so tests never see each other's nodes;
:func:`digest_conf` is a cluster's settings on that server and chroot, with digest auth.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py.dev.zookeeper import ZooKeeperProcess, ZooKeeperUnavailableError, free_port

#: The session's server is the development one; tests use its ``connect_string``, ``port``, ``restart()``.
ZooKeeperServer = ZooKeeperProcess


def _start(server: ZooKeeperProcess) -> None:
    try:
        server.start()
    except ZooKeeperUnavailableError as err:
        pytest.fail(f"ZooKeeper tests need a ZooKeeper server: {err.message}", pytrace=False)


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperProcess]:
    """A real ZooKeeper server for the whole session."""
    base_dir = Path(tempfile.mkdtemp(prefix="storm-py-zk-"))
    server = ZooKeeperProcess(base_dir, free_port(), die_with_parent=True)
    try:
        _start(server)
        yield server
    finally:
        server.stop()
        shutil.rmtree(base_dir, ignore_errors=True)


@pytest.fixture
def zk_chroot(zookeeper: ZooKeeperProcess, request: pytest.FixtureRequest) -> str:
    """A fresh chroot path for this test (and a running server: a test that stopped it gets it back)."""
    if not zookeeper.running:
        _start(zookeeper)
    name = "".join(c if c.isalnum() else "_" for c in request.node.name)[:60]
    return f"/tests/{name}-{uuid.uuid4().hex[:8]}"


def digest_conf(zookeeper: ZooKeeperProcess, chroot: str, payload: str) -> dict[str, Any]:
    """A cluster's ZooKeeper settings: this server, the cluster's root under ``chroot``, digest auth ``payload``."""
    return {
        "storm.zookeeper.servers": [zookeeper.connect_string],
        "storm.zookeeper.port": zookeeper.port,
        "storm.zookeeper.session.timeout": 6000,
        "storm.zookeeper.connection.timeout": 10000,
        "storm.zookeeper.root": f"{chroot}/storm",
        "storm.zookeeper.auth.scheme": "digest",
        "storm.zookeeper.auth.payload": payload,
    }
