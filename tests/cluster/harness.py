"""Running real clusters in tests: wheels built from source trees, `storm-py dev-cluster` as a child, CLI calls.

Every process a test starts runs in its own process group (the dev cluster's daemons and workers are its
children) and is stopped at teardown: SIGTERM first, SIGKILL for the group after a deadline.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from storm_py.client import NimbusClient
from storm_py.clock import wait_until
from storm_py.dev.cluster import RECORD
from storm_py.supervisor.profiler import find_py_spy

APPS = Path(__file__).parent / "apps"
REPO = Path(__file__).resolve().parents[2]

#: Daemon timings for tests: failures are noticed in seconds, not Storm's minutes.
FAST_CONF: dict[str, Any] = {
    "nimbus.monitor.freq.secs": 0.5,
    "nimbus.task.timeout.secs": 8,
    "nimbus.supervisor.timeout.secs": 8,
    "nimbus.task.launch.secs": 40,
    "supervisor.monitor.frequency.secs": 0.5,
    "supervisor.worker.timeout.secs": 8,
    "supervisor.worker.start.timeout.secs": 40,
    "worker.heartbeat.frequency.secs": 0.5,
    "storm.zookeeper.session.timeout": 4000,
    "storm.zookeeper.connection.timeout": 15000,
    "storm.nimbus.retry.times": 40,
    "storm.nimbus.retry.interval.millis": 250,
    "storm.nimbus.retry.intervalceiling.millis": 1000,
    "storm.nimbus.retry.refused.secs": 10,  # a nimbus the chaos tests restart refuses connections meanwhile
}

START_TIMEOUT = 90.0
STOP_TIMEOUT = 40.0


def storm_py_command() -> list[str]:
    """The `storm-py` script of this interpreter's environment (else `python -m storm_py`)."""
    script = Path(sys.executable).parent / "storm-py"
    return [str(script)] if script.exists() else [sys.executable, "-m", "storm_py"]


def build_wheel(source: Path, out: Path) -> Path:
    """Build ``source`` (a project with a pyproject.toml) into a wheel under ``out``, offline."""
    work = out / f"src-{source.name}"
    shutil.copytree(source, work, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", str(out), str(work)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, f"building a wheel of {source} failed:\n{proc.stdout}\n{proc.stderr}"
    wheels = sorted(out.glob(f"{source.name.replace('-', '_')}-*.whl"))
    assert wheels, f"no wheel of {source.name} in {out}"
    return wheels[-1]


def word_count_project(root: Path) -> Path:
    """A project packaging the repository's examples/word_count.py as module ``examples.word_count``."""
    project = root / "wordcount"
    (project / "examples").mkdir(parents=True)
    shutil.copy(REPO / "examples" / "word_count.py", project / "examples" / "word_count.py")
    (project / "examples" / "__init__.py").write_text('"""storm_py examples."""\n', encoding="utf-8")
    (project / "pyproject.toml").write_text(
        "[build-system]\nrequires = [\"setuptools>=64\", \"wheel\"]\nbuild-backend = \"setuptools.build_meta\"\n\n"
        "[project]\nname = \"wordcount\"\nversion = \"0.1.0\"\n\n[tool.setuptools]\npackages = [\"examples\"]\n",
        encoding="utf-8",
    )
    return project


class DevClusterProcess:
    """`storm-py dev-cluster` running as a child of the test, in its own process group."""

    def __init__(
        self,
        workdir: Path,
        conf: Mapping[str, Any] | None = None,
        supervisors: int = 2,
        nimbuses: int = 1,
        zookeeper: str | None = None,
        tls: bool = False,
        supervisor_confs: tuple[str, ...] = (),
    ) -> None:
        self.workdir = workdir
        self.tls = tls
        self.supervisor_confs = supervisor_confs  # "N:KEY=VALUE": a key for supervisor N only
        self.conf = {**FAST_CONF, **(conf or {})}
        self.supervisors = supervisors
        self.nimbuses = nimbuses
        self.zookeeper = zookeeper
        self.proc: subprocess.Popen[bytes] | None = None
        self.out = workdir.parent / f"{workdir.name}.out"
        self.base_conf_path = workdir.parent / f"{workdir.name}-base.yaml"

    @property
    def config(self) -> Path:
        """The client configuration the dev cluster wrote."""
        return self.workdir / "storm.yaml"

    def start(self) -> None:
        self.base_conf_path.write_text(yaml.safe_dump(self.conf), encoding="utf-8")
        cmd = [*storm_py_command(), "dev-cluster", "--workdir", str(self.workdir),
               "--supervisors", str(self.supervisors), "--nimbuses", str(self.nimbuses),
               "--config", str(self.base_conf_path)]
        if self.zookeeper:
            cmd += ["--zookeeper", self.zookeeper]
        if self.tls:
            cmd.append("--tls")
        for item in self.supervisor_confs:
            cmd += ["--supervisor-conf", item]
        with self.out.open("wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        proc = self.proc

        def ready() -> bool:
            assert proc.poll() is None, f"dev-cluster exited with {proc.returncode}: {self.output()}"
            return "nimbus: http://" in self.output() or "nimbus: https://" in self.output()

        wait_until(ready, START_TIMEOUT, interval=0.1, what="the dev cluster to accept work")

    def output(self) -> str:
        try:
            return self.out.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def nimbus_url(self) -> str:
        line = next(x for x in self.output().splitlines() if x.startswith("nimbus: "))
        return line.split(" ", 1)[1].strip()

    def info(self) -> dict[str, Any]:
        return json.loads((self.workdir / RECORD).read_text(encoding="utf-8"))

    def daemon(self, name: str) -> dict[str, Any]:
        return next(d for d in self.info()["daemons"] if d["name"] == name)

    def client_conf(self) -> dict[str, Any]:
        return dict(yaml.safe_load(self.config.read_text(encoding="utf-8")))

    def client(self) -> NimbusClient:
        return NimbusClient(self.client_conf())

    def cli(self, *args: str, check: bool = True, timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
        """Run `storm-py ARGS --config <client config>`."""
        proc = subprocess.run([*storm_py_command(), *args, "--config", str(self.config)],
                              capture_output=True, text=True, timeout=timeout, check=False)
        if check:
            assert proc.returncode == 0, f"storm-py {' '.join(args)} failed ({proc.returncode}): {proc.stderr}"
        return proc

    def artifacts(self, topology_id: str) -> Path:
        return self.workdir / "logs" / "workers-artifacts" / topology_id

    def worker_pid(self, topology_id: str, port: int) -> int:
        meta = json.loads((self.artifacts(topology_id) / str(port) / "worker.yaml").read_text(encoding="utf-8"))
        return int(meta["pid"])

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever of its group is left
        except ProcessLookupError:
            pass
        if proc.poll() is None:
            proc.wait(10)


def thread_stacks(pid: int) -> str:
    """What each thread of process ``pid`` is doing (py-spy's dump), for a test to print when the process hangs."""
    py_spy = find_py_spy("py-spy")
    if py_spy is None:
        return "(py-spy not found)"
    dump = subprocess.run([py_spy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=60, check=False)
    return dump.stdout + dump.stderr


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of someone else still answers kill(0); look at its state
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


class Ledger:
    """The ackcheck topology's SQLite ledger."""

    def __init__(self, path: Path, count: int) -> None:
        self.path = path
        self.count = count
        sys.path.insert(0, str(APPS / "ackcheck"))
        try:
            from ackcheck.topology import create_ledger
        finally:
            sys.path.remove(str(APPS / "ackcheck"))
        create_ledger(str(path), count)

    def _query(self, sql: str) -> int:
        db = sqlite3.connect(self.path, timeout=60)
        try:
            return int(db.execute(sql).fetchone()[0] or 0)
        finally:
            db.close()

    def acked(self) -> int:
        return self._query("SELECT COUNT(*) FROM ids WHERE acked = 1")

    def emits(self) -> int:
        return self._query("SELECT SUM(emits) FROM ids")

    def replays(self) -> int:
        return self.emits() - self._query("SELECT COUNT(*) FROM ids WHERE emits > 0")

    def wait_all_acked(self, timeout: float) -> None:
        wait_until(lambda: self.acked() == self.count, timeout, interval=0.25,
                   what=f"all {self.count} ids acked (acked {self.acked()})")

