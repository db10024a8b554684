"""Spark fixtures: one local SparkSession for the whole run, and a standalone master + worker on loopback.

The session is what ``storm_py.spark.spark_session()`` builds (local[2], loopback, no UI, this Python), so
code under test that asks for a session reuses it.  The standalone cluster is started from pyspark's own jars
(``org.apache.spark.deploy.master.Master`` and ``worker.Worker``) on free loopback ports and stopped after.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyspark
import pytest

from storm_py.clock import wait_until
from storm_py.spark import spark_session

SPARK_HOME = Path(pyspark.__file__).parent
REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scala_version() -> str:
    """The Scala version of pyspark's jars (a worker launching executors needs it, as load-spark-env.sh sets it)."""
    core = next(SPARK_HOME.glob("jars/spark-core_*.jar"))
    return core.name.split("_", 1)[1].split("-", 1)[0]


def spark_env(**extra: str) -> dict[str, str]:
    """The environment Spark processes started by tests get (loopback, this Python, pyspark's jars)."""
    env = dict(os.environ)
    env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_SCALA_VERSION=scala_version(), **extra)
    if "JAVA_HOME" not in env and Path("/usr/lib/jvm/java-17-openjdk-amd64").is_dir():
        env["JAVA_HOME"] = "/usr/lib/jvm/java-17-openjdk-amd64"
    return env


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The run's SparkSession (about 10 s to start; every Spark test shares it)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = spark_session(extra={"spark.sql.warehouse.dir": str(tmp_path_factory.mktemp("spark-warehouse"))})
    yield session
    session.stop()


@dataclass
class Standalone:
    """A running standalone cluster: its master URL and the processes' logs."""

    url: str
    master_log: Path
    worker_log: Path


def _java(cls: str, args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    java = str(Path(env["JAVA_HOME"]) / "bin" / "java") if "JAVA_HOME" in env else "java"
    cmd = [java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", f"{SPARK_HOME}/jars/*", cls, *args]
    with open(log, "wb") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=log.parent)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _log_has(proc: subprocess.Popen[bytes], log: Path, text: str) -> bool:
    if proc.poll() is not None:
        raise AssertionError(f"{log.name} exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
    return text in log.read_text(errors="replace")


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    """A Spark standalone master and one worker (2 cores, 1 GiB) on loopback, from pyspark's jars."""
    base = tmp_path_factory.mktemp("spark-standalone")
    env = spark_env()
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    master_log, worker_log = base / "master.log", base / "worker.log"
    master = _java("org.apache.spark.deploy.master.Master",
                   ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port())], master_log, env)
    worker = None
    try:
        wait_until(lambda: _log_has(master, master_log, "I have been elected leader"), 90, interval=0.1,
                   what="the Spark master")
        work = base / "work"
        work.mkdir()
        worker = _java("org.apache.spark.deploy.worker.Worker",
                       ["--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
                        "--cores", "2", "--memory", "1g", "--work-dir", str(work), url], worker_log, env)
        wait_until(lambda: _log_has(worker, worker_log, "Successfully registered with master"), 90,
                   interval=0.1, what="the Spark worker")
        yield Standalone(url, master_log, worker_log)
    finally:
        if worker is not None:
            _stop(worker)
        _stop(master)
        shutil.rmtree(base / "work", ignore_errors=True)


def storm_py_cli(*args: str, env: dict[str, str] | None = None,
                 timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run ``storm-py ARGS`` in a new process (from the repository root, so ``tests.*`` jobs import)."""
    return subprocess.run([sys.executable, "-m", "storm_py", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env or spark_env(), check=False)
