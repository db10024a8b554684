"""A real redis-server per test, on a free loopback port, its data in the test's temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.dev.redis import RedisServerProcess


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServerProcess]:
    server = RedisServerProcess(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()
