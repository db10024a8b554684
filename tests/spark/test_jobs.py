"""Spark jobs over committed txids: incremental steps, ``spark-job --follow`` through kill -9, standalone == local."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.spark import DatasetWriter, read_output, run_step
from storm_py.spark.jobs import AttachedJob, JobError, JobOutput, check_job_options
from tests.spark.conftest import REPO, spark_env, storm_py_cli
from tests.spark.helpers import SCHEMA, rows_for, sort_key
from tests.spark.sample_jobs import GATE_ENV, per_key, per_row

pytestmark = pytest.mark.spark


def rows(spark, output) -> list[dict]:
    return sorted((r.asDict() for r in read_output(spark, output).collect()), key=sort_key)


def commit(root, txids, n=4) -> None:
    w = DatasetWriter(root, SCHEMA, ["day"])
    for t in txids:
        w.commit(t, t, rows_for(t, n))


def test_steps_process_each_txid_once_and_match_one_run(tmp_path, spark):
    root, steps, single = tmp_path / "data", tmp_path / "steps", tmp_path / "single"
    commit(root, range(1, 4))
    assert run_step(spark, per_key, root, steps) == (1, 3)
    assert run_step(spark, per_key, root, steps) is None
    commit(root, range(4, 9))
    assert run_step(spark, per_key, root, steps, max_txids=2) == (4, 5)
    assert run_step(spark, per_key, root, steps) == (6, 8)
    assert run_step(spark, per_key, root, single) == (1, 8)
    assert rows(spark, steps) == rows(spark, single)
    assert JobOutput(steps).done_through() == 8
    (steps / "_staging" / "x").mkdir(parents=True)
    (steps / "_staging" / "x" / "part-0.parquet").write_bytes(b"junk")
    plain = spark.read.option("recursiveFileLookup", "true").parquet(str(steps))
    assert plain.count() == read_output(spark, single).count(), "a recursive read sees every step, nothing staged"


def test_a_step_killed_before_publishing_leaves_nothing_and_is_redone(tmp_path, spark):
    root, out = tmp_path / "data", tmp_path / "out"
    commit(root, range(1, 3))

    def crash(spark_, df):
        raise RuntimeError("the job died")

    with pytest.raises(RuntimeError):
        run_step(spark, crash, root, out)
    (out / "_staging" / "left-by-a-kill").mkdir(parents=True)
    assert JobOutput(out).done_through() == 0
    assert run_step(spark, per_row, root, out) == (1, 2)
    assert not list((out / "_staging").glob("*"))
    with pytest.raises(JobError, match="not a DataFrame"):
        commit(root, [3])
        run_step(spark, lambda s, df: df.collect(), root, out)


@pytest.mark.slow
def test_follow_killed_with_sigkill_mid_job_then_restarted_equals_a_single_run(tmp_path, spark):
    root, out, single, gate = tmp_path / "data", tmp_path / "out", tmp_path / "single", tmp_path / "gate"
    gate.mkdir()
    commit(root, range(1, 4))
    cmd = [sys.executable, "-m", "storm_py", "spark-job", "tests.spark.sample_jobs:gated", "--input", str(root),
           "--output", str(out), "--follow", "--poll", "0.2"]
    first = start(cmd, gate, tmp_path / "follow-1.log")
    try:
        wait_until(lambda: (gate / "started-1").exists() or first.poll() is not None, 180, interval=0.1,
                   what="the follow job inside its first step")
        assert first.poll() is None, (tmp_path / "follow-1.log").read_text()
        commit(root, range(4, 7))  # more commits while the step runs
        os.kill(first.pid, signal.SIGKILL)
        first.wait(30)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(30)
        if _group_alive(first.pid):  # the killed driver's JVM goes with it
            os.killpg(first.pid, signal.SIGKILL)
    assert JobOutput(out).done_through() == 0, "the killed step published nothing"

    (gate / "release").touch()
    second = start(cmd, gate, tmp_path / "follow-2.log")
    try:
        wait_until(lambda: JobOutput(out).done_through() >= 6 or second.poll() is not None, 180, interval=0.1,
                   what="the restarted follow job caught up")
        commit(root, range(7, 9))
        wait_until(lambda: JobOutput(out).done_through() >= 8 or second.poll() is not None, 120, interval=0.1,
                   what="the follow job processed new commits")
        assert second.poll() is None, (tmp_path / "follow-2.log").read_text()
    finally:
        second.send_signal(signal.SIGTERM)
        try:
            second.wait(60)
        except subprocess.TimeoutExpired:
            second.kill()
            second.wait(30)
    assert second.returncode == 0, (tmp_path / "follow-2.log").read_text()
    assert not list((out / "_staging").glob("*"))
    run_step(spark, per_row, root, single)
    assert rows(spark, out) == rows(spark, single)
    assert len({r["txid"] for r in rows(spark, out)}) == 8


def start(cmd: list[str], gate, log_path) -> subprocess.Popen[bytes]:
    """``cmd`` in its own process group (its JVM too), output to ``log_path``."""
    with open(log_path, "wb") as log:
        return subprocess.Popen(cmd, cwd=REPO, env=spark_env(**{GATE_ENV: str(gate)}), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_the_same_job_on_a_standalone_cluster_gives_the_same_output_as_local(tmp_path, spark, spark_standalone):
    root, remote, local = tmp_path / "data", tmp_path / "remote", tmp_path / "local"
    commit(root, range(1, 6), n=20)
    done = storm_py_cli("spark-job", "tests.spark.sample_jobs:per_key", "--input", str(root), "--output",
                        str(remote), "--master", spark_standalone.url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "processed txids 1..5" in done.stdout
    assert "app-" in spark_standalone.master_log.read_text(), "the job ran as an application of the cluster"
    run_step(spark, per_key, root, local)
    assert rows(spark, remote) == rows(spark, local)


def test_cli_usage_errors_are_one_line(tmp_path):
    bad = storm_py_cli("spark-job", "nocolon", "--input", str(tmp_path), "--output", str(tmp_path / "o"))
    assert bad.returncode != 0 and "MODULE:FUNCTION" in bad.stderr


def test_attached_job_runs_every_k_commits(tmp_path, spark):
    root, out = tmp_path / "data", tmp_path / "out"
    options = check_job_options("tests.spark.sample_jobs:per_row", out, 3, None, None)
    runner = AttachedJob(str(root), options, SYSTEM_CLOCK)
    w = DatasetWriter(root, SCHEMA, ["day"])
    for t in (1, 2):
        w.commit(t, t, rows_for(t))
        runner.committed(t)
    w.commit(3, 3, rows_for(3))
    runner.committed(3)
    wait_until(lambda: JobOutput(out).done_through() == 3, 120, interval=0.1, what="the attached job's run")
    assert JobOutput(out).steps() == [(1, 3)], "it waited for three commits"
    runner.stop()
    assert not runner._thread.is_alive(), "stopped"
    with pytest.raises(JobError, match="job_output"):
        check_job_options("m:f", None, None, None, None)

