"""Pytest plugin owning the real ZooKeeper server of the test session and per-test chroots.

``zookeeper`` (session scope) starts ``org.apache.zookeeper.server.ZooKeeperServerMain`` on a free loopback
port with a temporary data dir and yields a :class:`ZooKeeperServer`.  The classpath comes from
``$STORM_ZK_CLASSPATH``, else Debian's ``/usr/share/java/zookeeper.jar`` (whose manifest carries its
dependencies).  A missing ``java`` or jar fails the test with the fix to apply: CI must run these tests.
``zk_chroot`` gives each test its own chroot path, so tests never see each other's nodes.
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.clock import wait_until
from storm_py.errors import WaitTimeoutError

log = logging.getLogger(__name__)

DEBIAN_JAR = "/usr/share/java/zookeeper.jar"
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
_PR_SET_PDEATHSIG = 1


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def four_letter_word(host: str, port: int, word: bytes = b"srvr", timeout: float = 1.0) -> bytes:
    """Send a ZooKeeper four-letter command and return the whole reply (b"" if nothing answers)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(word)
            chunks = []
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks)
    except OSError:
        return b""


def _die_with_parent() -> None:
    """In the child, before exec: have Linux SIGTERM the server if pytest dies without cleaning up."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidates = [str(Path(java_home) / "bin" / "java")] if java_home else []
    found = shutil.which("java")
    if found:
        candidates.append(found)
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    pytest.fail(
        "ZooKeeper tests need a Java runtime: no `java` on PATH and no $JAVA_HOME/bin/java "
        "(install one: apt-get install -y default-jre-headless)",
        pytrace=False,
    )


def find_classpath() -> str:
    explicit = os.environ.get("STORM_ZK_CLASSPATH")
    if explicit:
        return explicit
    if Path(DEBIAN_JAR).is_file():
        return DEBIAN_JAR
    pytest.fail(
        f"ZooKeeper tests need a ZooKeeper server: {DEBIAN_JAR} is missing and $STORM_ZK_CLASSPATH is unset "
        "(install one: apt-get install -y zookeeper)",
        pytrace=False,
    )


class ZooKeeperServer:
    """A standalone ZooKeeper process on ``127.0.0.1:<port>``; keeps its port and data dir across restarts."""

    host = "127.0.0.1"

    def __init__(self, java: str, classpath: str, base_dir: Path) -> None:
        self.java = java
        self.classpath = classpath
        self.base_dir = base_dir
        self.port = free_port(self.host)
        self.data_dir = base_dir / "data"
        self.config = base_dir / "zoo.cfg"
        self.log_path = base_dir / "zookeeper.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config.write_text(
            "\n".join(
                [
                    "tickTime=500",
                    f"dataDir={self.data_dir}",
                    f"clientPort={self.port}",
                    f"clientPortAddress={self.host}",
                    "maxClientCnxns=0",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=srvr,ruok,stat,mntr,envi,conf",
                    "forceSync=no",
                    "",
                ]
            ),
            encoding="utf-8",
        )

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the server and return once it answers ``srvr`` (fails the test after 30 s)."""
        if self.running:
            return
        with self.log_path.open("ab") as out:
            self._proc = subprocess.Popen(
                [
                    self.java,
                    "-Xmx256m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-Dzookeeper.admin.enableServer=false",
                    "-cp",
                    self.classpath,
                    MAIN_CLASS,
                    str(self.config),
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.base_dir,
                preexec_fn=_die_with_parent,
            )
        proc = self._proc

        def ready() -> bool:
            if proc.poll() is not None:
                pytest.fail(
                    f"ZooKeeper exited with code {proc.returncode}:\n{self.log_tail()}", pytrace=False
                )
            return four_letter_word(self.host, self.port).startswith(b"Zookeeper version")

        try:
            wait_until(
                ready, START_TIMEOUT, interval=0.02, what=f"ZooKeeper to serve on {self.connect_string}"
            )
        except WaitTimeoutError:
            self.stop()
            pytest.fail(f"ZooKeeper did not start within {START_TIMEOUT}s:\n{self.log_tail()}", pytrace=False)
        log.info("ZooKeeper serving on %s (pid %d)", self.connect_string, proc.pid)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL if it lingers); the data dir stays."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_TIMEOUT)

    def restart(self) -> None:
        """Stop, then start on the same port and data dir (sessions and znodes survive)."""
        self.stop()
        self.start()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(
                self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            )
        except OSError:
            return "(no log)"


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperServer]:
    """A real ZooKeeper server for the whole session."""
    java = find_java()
    classpath = find_classpath()
    base_dir = Path(tempfile.mkdtemp(prefix="storm-py-zk-"))
    server = ZooKeeperServer(java, classpath, base_dir)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(base_dir, ignore_errors=True)


@pytest.fixture
def zk_chroot(zookeeper: ZooKeeperServer, request: pytest.FixtureRequest) -> str:
    """A fresh chroot path for this test (and a running server: a test that stopped it gets it back)."""
    if not zookeeper.running:
        zookeeper.start()
    name = "".join(c if c.isalnum() else "_" for c in request.node.name)[:60]
    return f"/tests/{name}-{uuid.uuid4().hex[:8]}"
