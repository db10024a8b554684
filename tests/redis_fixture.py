"""Pytest plugin: a real ``redis-server`` for the session (``storm_py.dev.redis``, as ``storm-py dev-redis`` runs it)
on a free loopback port; a missing server fails the test with the fix to apply.  ``redis_server``: one per test,
its data in the test's temporary directory."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.dev.redis import RedisServerProcess


@pytest.fixture(scope="session")
def redis_port() -> Iterator[int]:
    """The port of a redis-server run for the session (loopback)."""
    if shutil.which("redis-server") is None:
        pytest.fail("Redis tests need redis-server: apt-get install -y redis-server "
                    "(scripts/bootstrap.sh --with-services)", pytrace=False)
    workdir = Path(tempfile.mkdtemp(prefix="storm-py-redis-"))
    server = RedisServerProcess(workdir / "redis")
    server.start()
    try:
        yield server.port
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServerProcess]:
    server = RedisServerProcess(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()
