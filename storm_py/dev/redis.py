"""This module owns a development Redis server run as a child process (``storm-py dev-redis``).

It runs Debian's ``redis-server`` (or ``$STORM_PY_REDIS_SERVER``) on loopback, its data in an append-only file
under a directory of its own, so a server stopped and started again on the same directory and port (an outage)
comes back with everything committed before.  It is ready when it answers ``PING``.  It is what the managed-state
tests run against.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
from pathlib import Path

from storm_py.clock import wait_until
from storm_py.dev.zookeeper import _die_with_parent, free_port, stop_child
from storm_py.errors import StormPyError, WaitTimeoutError

log = logging.getLogger(__name__)

#: environment variable naming a redis-server binary to use instead of the one on PATH
SERVER_ENV = "STORM_PY_REDIS_SERVER"


class RedisUnavailableError(StormPyError):
    """No Redis server can be started here (binary missing, or it failed to serve)."""

    code = "redis_unavailable"


def find_server() -> str:
    """``$STORM_PY_REDIS_SERVER``, else ``redis-server`` on the PATH."""
    explicit = os.environ.get(SERVER_ENV)
    if explicit:
        return explicit
    found = shutil.which("redis-server")
    if found is None:
        raise RedisUnavailableError(
            f"no redis-server: install Debian's redis-server package (scripts/bootstrap.sh --with-services) or set "
            f"{SERVER_ENV} to a redis-server binary"
        )
    return found


def pings(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether a Redis server on ``host:port`` answers ``PING``."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServerProcess:
    """A redis-server on ``host:port`` with its data in ``data_dir``, its output in ``data_dir/redis.log``.

    Args:
        data_dir: where the append-only file lives (created when missing).
        port: the port (``None``: a free one, kept across restarts).
        host: the loopback address it binds.
        die_with_parent: on Linux, SIGTERM the server when this process dies without stopping it.
    """

    def __init__(self, data_dir: Path, port: int | None = None, host: str = "127.0.0.1",
                 die_with_parent: bool = False) -> None:
        self.data_dir = Path(data_dir)
        self.host = host
        self.port = port if port else free_port(host)
        self.die_with_parent = die_with_parent
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"

    def command(self) -> list[str]:
        return [
            find_server(), "--bind", self.host, "--port", str(self.port), "--dir", str(self.data_dir),
            "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no",
            "--logfile", str(self.data_dir / "redis.log"),
        ]

    def start(self, timeout: float = 20.0) -> None:
        """Start the server (unless it runs) and wait until it answers ``PING``.

        Raises:
            RedisUnavailableError: no server binary, the server exited, or it did not answer in time.
        """
        if self.running:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = self.command()
        self.proc = proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # prctl is one system call in the child, taking no lock a parent thread could hold.
            preexec_fn=_die_with_parent if self.die_with_parent else None,  # noqa: PLW1509
        )

        def serving() -> bool:
            if proc.poll() is not None:
                raise RedisUnavailableError(f"redis-server exited with code {proc.returncode}: {' '.join(cmd)}")
            return pings(self.host, self.port)

        try:
            wait_until(serving, timeout, interval=0.02, what=f"redis-server to serve on {self.address}")
        except WaitTimeoutError as err:
            self.stop()
            raise RedisUnavailableError(f"redis-server did not serve within {timeout:g}s") from err
        log.info("Redis serving on %s (pid %d)", self.address, proc.pid)

    @property
    def running(self) -> bool:
        """Whether the server process runs."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL); its append-only file stays."""
        proc, self.proc = self.proc, None
        if proc is not None:
            stop_child(proc, timeout)
