"""The topology commands against a running cluster: deactivate/activate, rebalance, logs -f, ui, kill -w."""

from __future__ import annotations

import json
import signal
import subprocess
import urllib.request
from collections.abc import Iterator

import pytest

from storm_py.clock import wait_until
from storm_py.dev.zookeeper import free_port
from tests.cluster.harness import DevClusterProcess, Ledger, storm_py_command, thread_stacks

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster(zookeeper, wheels, tmp_path_factory) -> Iterator[tuple[DevClusterProcess, Ledger]]:
    root = tmp_path_factory.mktemp("commands")
    # with a token: the CLI sends it from the client configuration, supervisors when they download packages
    dc = DevClusterProcess(root / "cluster", zookeeper=zookeeper.connect_string,
                           conf={"storm.zookeeper.root": f"/tests/commands-{root.name}/storm",
                                 "nimbus.auth.token": "t0ken"})
    try:
        dc.start()
        ledger = Ledger(root / "ledger.db", 500_000)
        dc.cli("submit", str(wheels["ackcheck"]), "ackcheck.topology:build", "--name", "steady",
               "-c", "topology.workers=3", "-c", f"ackcheck.db={ledger.path}", "-c", "ackcheck.rate=500",
               "-c", "ackcheck.parallelism=2")
        wait_until(lambda: ledger.acked() > 0, 120, interval=0.2, what="the topology to flow")
        yield dc, ledger
    finally:
        dc.stop()


def progressing(ledger: Ledger, by: int = 100, timeout: float = 60) -> None:
    start = ledger.acked()
    wait_until(lambda: ledger.acked() >= start + by, timeout, interval=0.2, what="the topology to make progress")


def status(dc: DevClusterProcess, name: str) -> str | None:
    for line in dc.cli("list").stdout.splitlines()[2:]:
        parts = line.split()
        if parts and parts[0] == name:
            return parts[1]
    return None


def test_without_the_token_nothing_changes(cluster) -> None:
    dc, _ = cluster
    for args in (["deactivate", "steady"], ["kill", "steady"], ["rebalance", "steady", "-n", "1"]):
        proc = dc.cli(*args, "-c", "nimbus.auth.token=null", check=False)
        assert proc.returncode == 1
        assert proc.stderr.strip() == ("Error: this request needs a valid token (nimbus.auth.token: the cluster's or "
                                       "a user's)")
    proc = dc.cli("deactivate", "steady", "-c", "nimbus.auth.token=wrong", check=False)
    assert proc.returncode == 1 and "nimbus.auth.token" in proc.stderr
    assert status(dc, "steady") == "ACTIVE"  # reads need no token


def test_deactivate_stops_the_spout_and_activate_resumes_it(cluster) -> None:
    dc, ledger = cluster
    assert dc.cli("deactivate", "steady").stdout.strip() == "Deactivated topology: steady"
    assert status(dc, "steady") == "INACTIVE"
    settled: list[int] = []

    def quiet() -> bool:  # no acks for a second: in-flight trees done, nothing new emitted
        settled.append(ledger.acked())
        return len(settled) > 5 and settled[-1] == settled[-6]

    wait_until(quiet, 60, interval=0.2, what="the spout to stop")
    assert dc.cli("activate", "steady").stdout.strip() == "Activated topology: steady"
    assert status(dc, "steady") == "ACTIVE"
    progressing(ledger)


def test_rebalance_changes_workers_and_executors(cluster) -> None:
    dc, ledger = cluster
    client = dc.client()
    out = dc.cli("rebalance", "steady", "-w", "0", "-n", "2", "-e", "relay=1").stdout
    assert out.strip() == "Topology steady is rebalancing"

    def rebalanced() -> bool:
        page = client.topology("steady")
        relay = next(b for b in page["bolts"] if b["boltId"] == "relay")
        return page["workersTotal"] == 2 and relay["executors"] == 1 and page["status"] == "ACTIVE"

    wait_until(rebalanced, 60, interval=0.25, what="the new layout")
    progressing(ledger)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_logs_follow_prints_the_workers_logs_until_interrupted(cluster, inherited: str) -> None:
    """Ctrl-C stops ``logs -f``, also when its parent started it with SIGINT ignored (as shells do for
    background jobs)."""
    dc, _ = cluster
    proc = subprocess.Popen([*storm_py_command(), "logs", "steady", "-f", "--config", str(dc.config)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ignore_sigint if inherited == "ignored" else None)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("==> ") and "/worker.log" in line
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
    assert proc.returncode == 0


def test_logs_come_from_the_supervisors_log_viewers_when_this_machine_has_none(cluster, tmp_path) -> None:
    dc, _ = cluster
    out = dc.cli("logs", "steady", "-c", f"storm.log.dir={tmp_path}").stdout
    headers = [line for line in out.splitlines() if line.startswith("==> ")]
    assert headers and all(" on http://" in h for h in headers)
    assert any("/worker.log on " in h for h in headers)
    workers = dc.client().topology("steady")["workers"]
    assert workers and all(w["workerLogLink"].startswith("http://") for w in workers)
    link = urllib.request.Request(workers[0]["workerLogLink"],
                                  headers={"Authorization": f"Bearer {dc.client_conf()['nimbus.auth.token']}"})
    with urllib.request.urlopen(link, timeout=10) as resp:  # the UI's link: the log's text, for token holders
        assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
        text = resp.read().decode("utf-8")
    assert text.count("\n") > 1 and not text.startswith("{")
    proc = dc.cli("logs", "no-such-topology", check=False)
    assert proc.returncode == 1 and "no-such-topology" in proc.stderr


def test_ui_serves_the_api_of_the_leader(cluster) -> None:
    dc, _ = cluster
    port = free_port()
    proc = subprocess.Popen([*storm_py_command(), "ui", "--config", str(dc.config), "-c", f"ui.port={port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.strip() == f"ui: http://127.0.0.1:{port}/"  # the pages' address, the API under it
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as resp:
            assert resp.headers["Content-Type"].startswith("text/html")
        summary = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/topology/summary",
                                         headers={"Authorization": f"Bearer {dc.client_conf()['nimbus.auth.token']}"})
        with urllib.request.urlopen(summary, timeout=10) as resp:
            names = [t["name"] for t in json.loads(resp.read())["topologies"]]
        assert "steady" in names
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # where it is stuck
            pytest.fail(f"ui still running 30 s after SIGTERM; its threads:\n{thread_stacks(proc.pid)}")
        finally:
            proc.kill()  # nothing when it stopped; a ui that did not stop is not left behind
            proc.wait()
    assert proc.returncode == 0


def test_submit_warns_when_the_cluster_has_fewer_free_slots_than_workers_asked(cluster, wheels, tmp_path) -> None:
    """Storm schedules what fits: the topology runs on the free slots (or none), its status unchanged; submit
    says so on stderr, and `list` shows running/asked workers with the scheduler's reason."""
    dc, _ = cluster
    ledger = Ledger(tmp_path / "greedy.db", 0)
    proc = dc.cli("submit", str(wheels["ackcheck"]), "ackcheck.topology:build", "--name", "greedy",
                  "-c", "topology.workers=100", "-c", f"ackcheck.db={ledger.path}", "-c", "ackcheck.rate=10")
    try:
        assert "Finished submitting topology: greedy" in proc.stdout
        assert "Warning: topology greedy asked for 100 workers but the cluster had fewer free slots" in proc.stderr
        page = dc.client().topology("greedy")
        assert page["requestedWorkers"] == 100 and page["workersTotal"] < 100 and page["schedulerInfo"]
        listed = dc.cli("list").stdout.splitlines()
        row = next(x.split() for x in listed[2:] if x.startswith("greedy "))
        assert row[1] == "ACTIVE" and row[3] == f"{page['workersTotal']}/100"
        assert f"greedy: {page['schedulerInfo']}" in listed
    finally:
        dc.cli("kill", "greedy", "-w", "0")
        wait_until(lambda: status(dc, "greedy") is None, 60, interval=0.25, what="greedy to be removed")


def test_kill_with_a_wait_shows_killed_then_removes(cluster) -> None:
    dc, _ = cluster
    assert dc.cli("kill", "steady", "-w", "3").stdout.strip() == "Killed topology: steady"
    assert status(dc, "steady") == "KILLED"
    wait_until(lambda: status(dc, "steady") is None, 60, interval=0.25, what="the topology to be removed")
    assert "No topologies running." in dc.cli("list").stdout
