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
from pathlib import Path

from storm_py.clock import wait_until
from storm_py.dev.child import ChildServer, absolute, port_taken_message
from storm_py.dev.zookeeper import free_port
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
        data_dir: where the append-only file lives (created when missing; a relative one is taken against the
            current directory now, as the server changes into it).
        port: the port (``None``: a free one, kept across restarts).
        host: the loopback address it binds.
        die_with_parent: on Linux, SIGTERM the server when this process dies without stopping it.
    """

    def __init__(self, data_dir: Path, port: int | None = None, host: str = "127.0.0.1",
                 die_with_parent: bool = False) -> None:
        self.data_dir = absolute(data_dir)
        self.host = host
        self.port = port if port else free_port(host)
        self.die_with_parent = die_with_parent
        self.child: ChildServer | None = None

    @property
    def log_path(self) -> Path:
        """Where the server's output goes."""
        return self.data_dir / "redis.log"

    @property
    def address(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"

    def command(self) -> list[str]:
        """The server's command line; it logs to its stdout, which :class:`ChildServer` puts in :attr:`log_path`."""
        return [
            find_server(), "--bind", self.host, "--port", str(self.port), "--dir", str(self.data_dir),
            "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no", "--logfile", "",
        ]

    def start(self, timeout: float = 20.0) -> None:
        """Start the server (unless it runs) and wait until it answers ``PING``.

        Raises:
            RedisUnavailableError: no server binary, the server exited, or it did not answer in time.
        """
        if self.running:
            return
        taken = port_taken_message("redis-server", self.host, self.port)
        if taken is not None:
            raise RedisUnavailableError(taken)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.child = child = ChildServer(self.command(), self.log_path, die_with_parent=self.die_with_parent)

        def serving() -> bool:
            failure = child.exited("redis-server")
            if failure is not None:
                raise RedisUnavailableError(failure, log=str(self.log_path))
            return pings(self.host, self.port)

        try:
            wait_until(serving, timeout, interval=0.02, what=f"redis-server to serve on {self.address}")
        except WaitTimeoutError as err:
            message = f"redis-server did not serve within {timeout:g}s (log: {self.log_path}):\n{child.output_tail()}"
            self.stop()
            raise RedisUnavailableError(message) from err
        except RedisUnavailableError:
            self.stop()
            raise
        log.info("Redis serving on %s (pid %d)", self.address, child.pid)

    @property
    def running(self) -> bool:
        """Whether the server process runs."""
        return self.child is not None and self.child.running

    def exited(self) -> str | None:
        """None while the server runs (or before it started); once it has exited, why, in its own last lines."""
        return self.child.exited("redis-server") if self.child is not None else None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL); its append-only file stays."""
        child, self.child = self.child, None
        if child is not None:
            child.stop(timeout)
