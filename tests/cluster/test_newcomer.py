"""The newcomer's path through the CLI: `jar`, what `submit DIR` packs, nimbus hints, `list`, dev-cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from pathlib import Path

import pytest
from click.testing import CliRunner

from storm_py.cli.main import cli
from storm_py.cli.topology import topology_table
from storm_py.client import NimbusClient, NimbusUnreachableError
from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.dev.cluster import running_owner
from storm_py.dev.zookeeper import free_port
from storm_py.packaging.package import read_package
from tests.cluster.harness import alive, storm_py_command


def test_jar_is_submit_under_storms_name(tmp_path: Path) -> None:
    runner = CliRunner()
    jar = runner.invoke(cli, ["jar", "--help"])
    assert jar.exit_code == 0 and "Same as `submit`" in jar.output
    for option in ("--name", "--inactive", "--config", "-c, --conf"):
        assert option in jar.output
    result = runner.invoke(cli, ["jar", str(tmp_path), "no-colon"])
    assert result.exit_code == 1 and "is not of the form MODULE:FUNCTION" in result.output


def test_submit_dir_leaves_out_build_outputs_vcs_caches_and_dev_cluster_work_dirs(tmp_path: Path) -> None:
    src = tmp_path / "project"
    files = {
        "mytopo/__init__.py": "", "mytopo/build/__init__.py": "", "mytopo/topology.py": "x = 1\n",
        "pyproject.toml": "", "build/lib/mytopo/topology.py": "", "dist/mytopo-0.1.whl": "",
        "mytopo.egg-info/PKG-INFO": "", ".git/HEAD": "", ".hg/store": "", ".svn/entries": "",
        "mytopo/__pycache__/topology.cpython-311.pyc": "", ".venv/bin/python": "",
        "dev-cluster/dev-cluster.json": "{}", "dev-cluster/logs/nimbus-1.log": "",
        "scratch/cluster/dev-cluster.json": "{}",
    }
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text, encoding="utf-8")
    left_out: list[str] = []
    data, filename = read_package(src, left_out)
    names = sorted(zipfile.ZipFile(BytesIO(data)).namelist())
    assert filename == "project.zip"
    assert names == ["mytopo/__init__.py", "mytopo/build/__init__.py", "mytopo/topology.py", "pyproject.toml"]
    assert {"build/", "dist/", "mytopo.egg-info/", ".git/", ".hg/", ".svn/", ".venv/", "dev-cluster/",
            "scratch/cluster/", "mytopo/__pycache__/"} == set(left_out)


def test_a_stopped_cluster_fails_fast_and_asks_whether_it_runs(tmp_path: Path) -> None:
    port = free_port()
    conf = tmp_path / "cluster.yaml"
    conf.write_text(f"nimbus.seeds: ['127.0.0.1:{port}']\n", encoding="utf-8")  # the default retries
    started = SYSTEM_CLOCK.now()
    proc = subprocess.run([*storm_py_command(), "list", "--config", str(conf)], capture_output=True, text=True,
                          timeout=60, check=False, cwd=tmp_path)
    took = SYSTEM_CLOCK.now() - started
    assert proc.returncode == 1 and took < 10, (took, proc.stderr)
    notice, error = proc.stderr.splitlines()
    assert notice.startswith("nimbus is not answering (") and notice.endswith("); retrying for up to 3s")
    assert error.startswith("Error: ") and "cannot reach nimbus" in error
    assert error.endswith(f"; nothing listens at 127.0.0.1:{port}, the nimbus config {conf} names: "
                          "is the cluster running?")
    assert "--config FILE" not in error


def test_a_nimbus_that_knows_no_leader_yet_is_retried_the_long_way() -> None:
    asked: list[str] = []

    class NoLeaderYet(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            body = json.dumps({"nimbuses": [{"host": "127.0.0.1", "port": 1, "status": "Not a Leader"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), NoLeaderYet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    told: list[str] = []
    try:
        client = NimbusClient({"nimbus.seeds": [f"127.0.0.1:{server.server_address[1]}"],
                               "storm.nimbus.retry.times": 3, "storm.nimbus.retry.interval.millis": 10,
                               "storm.nimbus.retry.intervalceiling.millis": 20}, on_retry=told.append)
        with pytest.raises(NimbusUnreachableError) as err:
            client.topology_summaries()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
    assert not err.value.refused and "knows no leader yet" in err.value.message
    assert len(asked) == 4  # the first try and three retries: an election may end
    assert told == [f"nimbus is not answering ({err.value.message}); retrying up to 3 times, backing off to 0.02s"]


def test_without_a_config_the_error_says_where_it_looked(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no conf/storm.yaml here
    result = CliRunner().invoke(cli, ["kill", "t", "-c", f"nimbus.seeds=['127.0.0.1:{free_port()}']",
                                      "-c", "storm.nimbus.retry.times=0"])
    assert result.exit_code == 1
    assert "used no config file (conf/storm.yaml not found)" in result.output and "--config FILE" in result.output
    assert "is the cluster running?" not in result.output


def test_list_columns_stay_aligned_for_long_names() -> None:
    rows = [
        {"name": "wc", "status": "ACTIVE", "tasksTotal": 5, "workersTotal": 2, "uptimeSeconds": 7},
        {"name": "a-very-long-topology-name-from-a-team", "status": "REBALANCING", "tasksTotal": 12345,
         "workersTotal": 3, "uptimeSeconds": 86400},
    ]
    header, rule, *lines = topology_table(rows)
    starts = [header.index(h) for h in ("Status", "Num_tasks", "Num_workers", "Uptime_secs")]
    for line, row in zip(lines, rows, strict=True):
        cells = [row["status"], row["tasksTotal"], row["workersTotal"], row["uptimeSeconds"]]
        assert [line.index(str(c), s) for c, s in zip(cells, starts, strict=True)] == starts
        assert line[starts[0] - 1] == " "
    assert set(rule) == {"-"} and len(rule) >= len(max(lines, key=len))


def test_dev_cluster_refuses_a_work_dir_a_running_cluster_owns(tmp_path: Path) -> None:
    workdir = tmp_path / "dev"
    workdir.mkdir()
    # a process standing in for a dev cluster's daemon (its command line names storm) until its stdin closes
    holder = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", "storm-py-nimbus"],
                              stdin=subprocess.PIPE)
    try:
        record = {"pid": 0, "zookeeper_pid": None,
                  "daemons": [{"name": "nimbus-1", "kind": "nimbus", "pid": holder.pid}]}
        (workdir / "dev-cluster.json").write_text(json.dumps(record), encoding="utf-8")
        wait_until(lambda: running_owner(workdir) != "", 10, what="the stand-in to exec")
        assert running_owner(workdir) == f"nimbus-1 pid {holder.pid}"
        proc = subprocess.Popen([*storm_py_command(), "dev-cluster", "--workdir", str(workdir), "--timeout", "5"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=60)
        finally:  # were it to start a cluster after all, stop all of it
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(10)
        assert proc.returncode == 1
        assert "belongs to a running dev cluster (nimbus-1 pid" in stderr and "--workdir" in stderr
        assert not (workdir / "zookeeper").exists()  # nothing was started
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
    assert not alive(holder.pid) and running_owner(workdir) == ""


def test_dev_cluster_with_two_nimbuses_prints_the_leader(dev_cluster) -> None:
    cluster = dev_cluster(supervisors=1, nimbuses=2)
    wait_until(lambda: "leader: " in cluster.output(), 30, what="the leader line")
    leader = cluster.client().find_leader()
    line = next(x for x in cluster.output().splitlines() if x.startswith("leader: "))
    name = next(d["name"] for d in cluster.info()["daemons"] if f"127.0.0.1:{d['port']}" == leader)
    assert line == f"leader: {name} (http://{leader})"
