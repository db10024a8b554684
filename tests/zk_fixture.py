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
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.clock import wait_until
from storm_py.dev import zookeeper as dev_zookeeper
from storm_py.dev.zookeeper import four_letter_word, free_port
from storm_py.errors import WaitTimeoutError

log = logging.getLogger(__name__)

START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: have Linux SIGTERM the server if pytest dies without cleaning up."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def find_java() -> str:
    """The Java runtime ZooKeeper runs on; fail the session (never skip) when there is none."""
    try:
        return dev_zookeeper.find_java()
    except dev_zookeeper.ZooKeeperUnavailableError as err:
        pytest.fail(f"ZooKeeper tests need a Java runtime: {err.message}", pytrace=False)


def find_classpath() -> str:
    """ZooKeeper's classpath; fail the session (never skip) when ZooKeeper is not installed."""
    try:
        return dev_zookeeper.find_classpath()
    except dev_zookeeper.ZooKeeperUnavailableError as err:
        pytest.fail(f"ZooKeeper tests need a ZooKeeper server: {err.message}", pytrace=False)


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
        self.config.write_text(dev_zookeeper.zoo_cfg(self.data_dir, self.host, self.port), encoding="utf-8")

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
                dev_zookeeper.server_command(self.java, self.classpath, self.config),
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
