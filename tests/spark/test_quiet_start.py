"""A local Spark session starts without the JVM's and log4j's start-up notices on stderr, and its errors still
show there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from storm_py.spark.session import LOG4J2_CONFIG, is_jvm_noise

REPO = Path(__file__).resolve().parents[2]

_SCRIPT = """
from storm_py.spark.session import spark_session
spark = spark_session()
print("rows", spark.range(3).count(), flush=True)
try:
    spark.sql("select raise_error('boom-in-a-job')").collect()
except Exception as err:
    print("failed", type(err).__name__, flush=True)
spark.stop()
"""


def test_a_local_session_prints_no_start_up_notices_and_keeps_errors_visible(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=300,
                          check=False, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "rows 3" and proc.stdout.splitlines()[1].startswith("failed ")
    assert proc.stderr.split(" ERROR ", 1)[0].count("\n") == 0, proc.stderr[:2000]  # nothing before the error
    assert "ERROR" in proc.stderr and "boom-in-a-job" in proc.stderr


def test_only_the_jvms_start_up_notice_is_dropped() -> None:
    assert is_jvm_noise(b"WARNING: Using incubator modules: jdk.incubator.vector\n")
    assert not is_jvm_noise(b"Exception in thread \"main\" java.lang.OutOfMemoryError\n")
    assert not is_jvm_noise(b"26/11/28 20:06:44 ERROR Executor: Exception in task 0.0\n")


def test_the_log4j_configuration_ships_with_the_package() -> None:
    assert LOG4J2_CONFIG.is_file() and "rootLogger.level = warn" in LOG4J2_CONFIG.read_text(encoding="utf-8")
    setup = (REPO / "setup.cfg").read_text(encoding="utf-8")
    assert "spark/log4j2.properties" in setup.split("\n[options.package_data]\n", 1)[1].split("\n[", 1)[0]
