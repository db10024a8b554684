"""streamparse projects run with ``storm-py streamparse run`` as on Storm: streamparse's quickstart wordcount
unchanged, and the same project with a finite reliable spout giving exact counts, every spout tuple acked, with
both serializers."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.streamparse import build_topology, find_project
from storm_py.streamparse.translate import load_topology_class, topology_conf
from tests.streamparse.projects import ALL_ACKED, EXPECTED, SENT, exact_project, read_counts

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


class _Run:
    """``storm-py streamparse run`` until interrupted, in a child process whose output is read when it ends."""

    def __init__(self, root: Path, *args: str, tmp_path: Path) -> None:
        self.out = open(tmp_path / "run.out", "w+")  # noqa: SIM115 - read back after the process ends
        self.err_path = tmp_path / "run.err"
        self.err = open(self.err_path, "w+")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "storm_py", "--log-level", "INFO", "streamparse", "run", *args, "-t", "0"],
            cwd=root, stdout=self.out, stderr=self.err, text=True,
        )

    def log(self) -> str:
        return self.err_path.read_text()

    def interrupt(self) -> str:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(120)
        self.out.seek(0)
        return self.out.read()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.out.close()
        self.err.close()


def _done(stdout: str) -> dict[str, int]:
    line = next(x for x in stdout.splitlines() if x.startswith("done:"))
    parts = dict(p.strip().split(" ") for p in line.removeprefix("done:").split(","))
    return {k: int(v) for k, v in parts.items()}


def test_streamparse_quickstart_wordcount_runs_unchanged(wordcount_project: Path, tmp_path: Path) -> None:
    run = _Run(wordcount_project, tmp_path=tmp_path)
    try:
        # the quickstart's count bolt logs every 1,000 words it counted, through pystorm's log to storm_py
        wait_until(lambda: "counted [1,000] words" in run.log() or run.proc.poll() is not None, 120,
                   interval=0.2, what="the count bolt to count 1,000 words")
        stdout = run.interrupt()
    finally:
        run.close()
    assert run.proc.returncode == 0, run.log()[-2000:]
    assert "storm_py.multilang.count_bolt" in run.log()
    assert _done(stdout)["emitted"] > 0 and _done(stdout)["failed"] == 0
    assert "last error" not in stdout


def test_exact_counts_every_tuple_acked_msgpack_through_the_cli(wordcount_project: Path, tmp_path: Path) -> None:
    sink = tmp_path / "counts.json"
    root = exact_project(wordcount_project, tmp_path, sink, serializer="msgpack")
    run = _Run(root, "exact", tmp_path=tmp_path)
    try:
        # the counts are final before the last acks reach the spout: wait for its log of the last one too
        wait_until(lambda: (read_counts(sink) == EXPECTED and ALL_ACKED in run.log()) or run.proc.poll() is not None,
                   120, interval=0.2, what="the exact counts and every tuple acked")
        stdout = run.interrupt()
    finally:
        run.close()
    assert read_counts(sink) == EXPECTED, run.log()[-2000:]
    assert "-s', 'msgpack'" in run.log()
    done = _done(stdout)
    assert done["acked"] == SENT and done["failed"] == 0


def test_exact_counts_every_tuple_acked_json_in_a_local_cluster(wordcount_project: Path, tmp_path: Path) -> None:
    sink = tmp_path / "counts.json"
    project = find_project(exact_project(wordcount_project, tmp_path, sink), "exact")
    cls = load_topology_class(project.topology_file, project.src)
    topology = build_topology(cls, project.src, project.serializer)
    conf = topology_conf(cls, project.options(), project.serializer, {})
    with LocalCluster() as cluster:
        cluster.submit_topology("exact", conf, topology)

        def spout() -> dict[str, int]:
            return dict(cluster.get_topology_summary("exact")["spouts"][0])

        wait_until(lambda: spout()["acked"] == SENT, 120, interval=0.2, what=f"{SENT} spout tuples acked")
        wait_until(lambda: read_counts(sink) == EXPECTED, 30, interval=0.1, what="the exact counts")
        assert spout()["failed"] == 0
        cluster.kill_topology("exact", 0)


def test_in_process_opt_in_gives_the_same_exact_counts(wordcount_project: Path, tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    from storm_py.streamparse.inprocess import InProcessPystormBolt, InProcessPystormSpout

    sink = tmp_path / "counts.json"
    project = find_project(exact_project(wordcount_project, tmp_path, sink), "exact")
    cls = load_topology_class(project.topology_file, project.src)
    topology = build_topology(cls, project.src, project.serializer, in_process=True)
    assert isinstance(topology.spouts["word_spout"].obj, InProcessPystormSpout)
    assert all(isinstance(b.obj, InProcessPystormBolt) for b in topology.bolts.values())
    conf = topology_conf(cls, project.options(), project.serializer, {})
    caplog.set_level("INFO", logger="storm_py.multilang")
    with LocalCluster() as cluster:
        cluster.submit_topology("exact-inproc", conf, topology)

        def spout() -> dict[str, int]:
            return dict(cluster.get_topology_summary("exact-inproc")["spouts"][0])

        wait_until(lambda: spout()["acked"] == SENT, 60, interval=0.1, what=f"{SENT} spout tuples acked")
        wait_until(lambda: read_counts(sink) == EXPECTED, 30, interval=0.1, what="the exact counts")
        assert spout()["failed"] == 0
        cluster.kill_topology("exact-inproc", 0)
    # pystorm's own log records come back as multilang log messages, to the component's logger
    assert any(r.name == "storm_py.multilang.sink" and "StormHandler logging enabled" in r.getMessage()
               for r in caplog.records)
