"""Pytest plugin: a real ``redis-server`` for the session (a missing server fails the test with the fix to apply)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.clock import wait_until
from storm_py.dev.zookeeper import free_port


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture(scope="session")
def redis_port() -> Iterator[int]:
    """The port of a redis-server run for the session (loopback, no persistence)."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("Redis tests need redis-server: apt-get install -y redis-server "
                    "(scripts/bootstrap.sh --with-services)", pytrace=False)
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix="storm-py-redis-"))
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: _answers(port) or proc.poll() is not None, 20, what="redis-server")
        if proc.poll() is not None:
            pytest.fail(f"redis-server exited with {proc.returncode}", pytrace=False)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)
