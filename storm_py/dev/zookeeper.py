"""This module owns a development ZooKeeper server run as a child process (Storm's ``storm dev-zookeeper``).

The server is ``org.apache.zookeeper.server.ZooKeeperServerMain`` on Java; the classpath comes from
``$STORM_ZK_CLASSPATH``, else Debian's ``/usr/share/java/zookeeper.jar`` (its manifest lists its
dependencies).  It listens on loopback only, is ready when it answers the ``srvr`` command, and keeps its data
(and so its sessions) across restarts on the same directory.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import socket
from pathlib import Path

from storm_py.clock import wait_until
from storm_py.dev.child import ChildServer, absolute, log_tail, port_taken_message
from storm_py.errors import StormPyError, WaitTimeoutError

log = logging.getLogger(__name__)

DEBIAN_JAR = "/usr/share/java/zookeeper.jar"
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"


class ZooKeeperUnavailableError(StormPyError):
    """A ZooKeeper server cannot be started here (no Java, no ZooKeeper jar, or it failed)."""

    code = "zookeeper_unavailable"


def find_java() -> str:
    """``$JAVA_HOME/bin/java`` or ``java`` on the PATH."""
    home = os.environ.get("JAVA_HOME")
    candidates = [str(Path(home) / "bin" / "java")] if home else []
    found = shutil.which("java")
    if found:
        candidates.append(found)
    for c in candidates:
        if os.access(c, os.X_OK):
            return c
    raise ZooKeeperUnavailableError(
        "no Java runtime: set JAVA_HOME or install one (apt-get install default-jre-headless)"
    )


def find_classpath() -> str:
    """``$STORM_ZK_CLASSPATH`` or Debian's ZooKeeper jar."""
    explicit = os.environ.get("STORM_ZK_CLASSPATH")
    if explicit:
        return explicit
    if Path(DEBIAN_JAR).is_file():
        return DEBIAN_JAR
    raise ZooKeeperUnavailableError(
        f"no ZooKeeper: {DEBIAN_JAR} is missing and STORM_ZK_CLASSPATH is unset (apt-get install zookeeper)"
    )


#: where Linux keeps the range of ports it hands out itself (outgoing connections' local ports, binds of port 0)
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: how many ports below that range :func:`free_port` picks from
PICK_SPAN = 12_000


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now, for a daemon to listen on shortly.

    Picked at random below the kernel's ephemeral range: a port the kernel handed out (a bind of port 0) may be
    handed out again, before the daemon binds it, as the local port of an outgoing connection, such as the
    daemon's own ZooKeeper client, and the daemon could not listen.  A port below the range is never given to a
    connection; it is checked free by binding it.  Where the range cannot be read, the kernel picks as before.
    """
    low = ephemeral_low()
    if low is not None and low > 1024:
        chooser = random.SystemRandom()
        for _ in range(64):
            port = chooser.randrange(max(1024, low - PICK_SPAN), low)
            if _bindable(host, port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def ephemeral_low(path: Path = EPHEMERAL_RANGE_FILE) -> int | None:
    """The first port of the kernel's ephemeral range; None when ``path`` cannot be read or parsed."""
    try:
        first = path.read_text().split()[0]
    except (OSError, IndexError):
        return None
    return int(first) if first.isdigit() else None


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def four_letter_word(host: str, port: int, word: bytes = b"srvr", timeout: float = 1.0) -> bytes:
    """ZooKeeper's reply to a four-letter command (b"" when nothing answers)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(word)
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks)
    except OSError:
        return b""


def zoo_cfg(data_dir: Path, host: str, port: int, tick_ms: int = 500) -> str:
    """A standalone server's ``zoo.cfg``: loopback only, no admin server, the four-letter words we poll."""
    return "\n".join(
        [
            f"tickTime={tick_ms}",
            f"dataDir={data_dir}",
            f"clientPort={port}",
            f"clientPortAddress={host}",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=srvr,ruok,stat,mntr,envi,conf",
            "forceSync=no",
            "",
        ]
    )


def server_command(java: str, classpath: str, config: Path) -> list[str]:
    """The command line of a small standalone ZooKeeper server reading ``config``."""
    return [java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dzookeeper.admin.enableServer=false", "-cp", classpath, MAIN_CLASS, str(config)]


class ZooKeeperProcess:
    """A standalone ZooKeeper on ``host:port`` with its data under ``data_dir``; keeps both across restarts.

    Args:
        data_dir: where the configuration, the data and ``zookeeper.log`` live (a relative one is taken against the
            current directory now: the server runs in it).
        port: the client port (loopback only).
        host: the address it listens on.
        tick_ms: ZooKeeper's tick (sessions time out after 2 to 20 ticks).
        die_with_parent: on Linux, have the server SIGTERMed when this process dies without stopping it
            (test sessions and the ``dev-zookeeper`` command want this).
    """

    def __init__(
        self, data_dir: Path, port: int, host: str = "127.0.0.1", tick_ms: int = 500, die_with_parent: bool = False
    ) -> None:
        self.data_dir = absolute(data_dir)
        self.host = host
        self.port = port
        self.tick_ms = tick_ms
        self.die_with_parent = die_with_parent
        self.child: ChildServer | None = None
        self.config = self.data_dir / "zoo.cfg"
        self.log_path = self.data_dir / "zookeeper.log"

    @property
    def connect_string(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        """Start the server (unless it runs) and wait until it serves.

        Raises:
            ZooKeeperUnavailableError: no Java or ZooKeeper here, the server exited, or it did not serve in time.
        """
        if self.running:
            return
        java, classpath = find_java(), find_classpath()
        taken = port_taken_message("ZooKeeper", self.host, self.port)
        if taken is not None:
            raise ZooKeeperUnavailableError(taken)
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        self.config.write_text(zoo_cfg(self.data_dir / "data", self.host, self.port, self.tick_ms), encoding="utf-8")
        self.child = child = ChildServer(server_command(java, classpath, self.config), self.log_path,
                                         cwd=self.data_dir, die_with_parent=self.die_with_parent)

        def serving() -> bool:
            failure = child.exited("ZooKeeper")
            if failure is not None:
                raise ZooKeeperUnavailableError(failure)
            return four_letter_word(self.host, self.port).startswith(b"Zookeeper version")

        try:
            wait_until(serving, timeout, interval=0.02, what=f"ZooKeeper to serve on {self.connect_string}")
        except WaitTimeoutError as err:
            self.stop()
            raise ZooKeeperUnavailableError(
                f"ZooKeeper did not serve within {timeout:g}s (log: {self.log_path}):\n{self.log_tail()}"
            ) from err
        except ZooKeeperUnavailableError:
            self.stop()
            raise
        log.info("ZooKeeper serving on %s (pid %d)", self.connect_string, child.pid)

    @property
    def running(self) -> bool:
        """Whether the server process runs."""
        return self.child is not None and self.child.running

    def exited(self) -> str | None:
        """None while the server runs (or before it started); once it has exited, why, in its own last lines."""
        return self.child.exited("ZooKeeper") if self.child is not None else None

    @property
    def pid(self) -> int | None:
        """The server's process id while it was started (None before)."""
        return self.child.pid if self.child is not None else None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL); its data stays."""
        child, self.child = self.child, None
        if child is not None:
            child.stop(timeout)

    def restart(self) -> None:
        """Stop, then start on the same port and data (sessions and znodes survive)."""
        self.stop()
        self.start()

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the server's log."""
        return log_tail(self.log_path, lines)
