"""This module owns a development ZooKeeper server run as a child process (Storm's ``storm dev-zookeeper``).

The server is ``org.apache.zookeeper.server.ZooKeeperServerMain`` on Java; the classpath comes from
``$STORM_ZK_CLASSPATH``, else Debian's ``/usr/share/java/zookeeper.jar`` (its manifest lists its
dependencies).  It listens on loopback only, is ready when it answers the ``srvr`` command, and keeps its data
(and so its sessions) across restarts on the same directory.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from storm_py.errors import StormPyError

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


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


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
    """A standalone ZooKeeper on ``host:port`` with its data under ``data_dir``."""

    def __init__(self, data_dir: Path, port: int, host: str = "127.0.0.1", tick_ms: int = 500) -> None:
        self.data_dir = data_dir
        self.host = host
        self.port = port
        self.tick_ms = tick_ms
        self.proc: subprocess.Popen[bytes] | None = None
        self.config = data_dir / "zoo.cfg"
        self.log_path = data_dir / "zookeeper.log"

    @property
    def connect_string(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        """Start the server and wait until it serves."""
        java, classpath = find_java(), find_classpath()
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        self.config.write_text(zoo_cfg(self.data_dir / "data", self.host, self.port, self.tick_ms), encoding="utf-8")
        with self.log_path.open("ab") as out:
            self.proc = subprocess.Popen(
                server_command(java, classpath, self.config),
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=self.data_dir,
            )
        deadline = time.monotonic() + timeout
        while not four_letter_word(self.host, self.port).startswith(b"Zookeeper version"):
            if self.proc.poll() is not None:
                raise ZooKeeperUnavailableError(
                    f"ZooKeeper exited with code {self.proc.returncode} (log: {self.log_path})"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise ZooKeeperUnavailableError(f"ZooKeeper did not serve within {timeout:g}s (log: {self.log_path})")
            time.sleep(0.05)
        log.info("ZooKeeper serving on %s (pid %d)", self.connect_string, self.proc.pid)

    @property
    def running(self) -> bool:
        """Whether the server process runs."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL); its data stays."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
