"""A real PostgreSQL server for tests: Debian's ``postgresql`` initialised (``initdb``) into a temporary directory
and started on a free loopback port, with a password-protected role ``storm`` owning database ``storm``.

As root the server runs as the ``postgres`` system user (PostgreSQL refuses to run as root)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from storm_py.dev.zookeeper import free_port

USER = "storm"
PASSWORD = "storm-secret"
DATABASE = "storm"


def _bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for root in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (root / name).exists():
            return str(root / name)
    return None


@dataclass
class PostgresServer:
    """A running server: its port and data directory, and how to stop and start it again."""

    port: int
    datadir: Path
    pg_ctl: str
    run_as: list[str]

    @property
    def url(self) -> str:
        return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{DATABASE}"

    def ctl(self, *args: str) -> None:
        subprocess.run([*self.run_as, self.pg_ctl, "-D", str(self.datadir), "-w", "-t", "60", *args],
                       check=True, capture_output=True, timeout=90)

    def stop(self) -> None:
        self.ctl("-m", "fast", "stop")

    def start(self) -> None:
        self.ctl("-l", str(self.datadir / "server.log"), "-o", f"-p {self.port} -k {self.datadir}", "start")


def start_server() -> tuple[PostgresServer, Path]:
    """Initialise and start a server; its working directory (remove it after ``stop``)."""
    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.fail("PostgreSQL tests need initdb and pg_ctl: apt-get install -y postgresql "
                    "(scripts/bootstrap.sh --with-services)", pytrace=False)
    workdir = Path(tempfile.mkdtemp(prefix="storm-py-pg-"))
    datadir = workdir / "data"
    run_as: list[str] = []
    if os.geteuid() == 0:
        pw = pwd.getpwnam("postgres")
        os.chown(workdir, pw.pw_uid, pw.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    pwfile = workdir / "pw"
    pwfile.write_text(PASSWORD + "\n", encoding="utf-8")
    if run_as:
        os.chown(pwfile, pwd.getpwnam("postgres").pw_uid, -1)
    subprocess.run([*run_as, initdb, "-D", str(datadir), "-U", USER, "--pwfile", str(pwfile), "-A", "scram-sha-256",
                    "-E", "UTF8", "--no-sync"], check=True, capture_output=True, timeout=120)
    with (datadir / "postgresql.conf").open("a", encoding="utf-8") as conf:
        conf.write("listen_addresses = '127.0.0.1'\nfsync = off\nmax_connections = 50\n")
    server = PostgresServer(free_port(), datadir, pg_ctl, run_as)
    server.start()
    env = {**os.environ, "PGPASSWORD": PASSWORD}
    psql = _bin("psql") or "psql"
    subprocess.run([psql, "-h", "127.0.0.1", "-p", str(server.port), "-U", USER, "-d", "postgres", "-c",
                    f"CREATE DATABASE {DATABASE}"], check=True, capture_output=True, timeout=60, env=env)
    return server, workdir


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the session (loopback, a free port)."""
    server, workdir = start_server()
    try:
        yield server
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
