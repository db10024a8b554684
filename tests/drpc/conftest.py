"""Fixtures of the DRPC tests: ``storm-py drpc`` as a real child process, stopped at teardown."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from storm_py.clock import wait_until
from tests.cluster.harness import storm_py_command

TOKEN = "drpc-test-token-0123456789"


class DRPCServerProcess:
    """``storm-py drpc --config FILE`` with every port picked free; ``port``, ``invocations_port``, ``http_port``."""

    def __init__(self, workdir: Path, conf: dict[str, Any]) -> None:
        self.workdir = workdir
        merged = {"drpc.port": 0, "drpc.invocations.port": 0, "drpc.http.port": 0, "nimbus.auth.token": TOKEN,
                  **conf}
        self.conf = {k: v for k, v in merged.items() if v is not None}  # None: leave the key out
        self.config = workdir / "drpc.yaml"
        self.out = workdir / "drpc.out"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = self.invocations_port = self.http_port = 0


    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config.write_text(yaml.safe_dump(self.conf), encoding="utf-8")
        with self.out.open("wb") as out:
            self.proc = subprocess.Popen([*storm_py_command(), "drpc", "--config", str(self.config)], stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        proc = self.proc

        def ready() -> bool:
            assert proc.poll() is None, f"storm-py drpc exited with {proc.returncode}: {self.output()}"
            return any(line.startswith("drpc: ") for line in self.output().splitlines())

        wait_until(ready, 60, interval=0.05, what="the DRPC server to listen")
        line = next(x for x in self.output().splitlines() if x.startswith("drpc: "))
        words = line.split()
        self.port = int(words[1].rsplit(":", 1)[1])
        self.invocations_port = int(words[3].rsplit(":", 1)[1])
        self.http_port = int(words[5].rsplit(":", 1)[1])

    def output(self) -> str:
        try:
            return self.out.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def stop(self) -> int | None:
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        return proc.returncode


@pytest.fixture
def drpc_server(tmp_path: Path) -> Iterator[Callable[..., DRPCServerProcess]]:
    """Start DRPC servers (``storm-py drpc``) with extra config; all stopped at teardown."""
    started: list[DRPCServerProcess] = []

    def start(conf: dict[str, Any] | None = None, name: str = "drpc") -> DRPCServerProcess:
        server = DRPCServerProcess(tmp_path / name, dict(conf or {}))
        started.append(server)
        server.start()
        return server

    yield start
    for server in reversed(started):
        server.stop()
