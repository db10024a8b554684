"""Acceptance: at-least-once through failures — kill -9 a worker, a supervisor, the leading nimbus; restart ZooKeeper.

Each test runs the ``ackcheck`` wheel: 20,000 message ids from a SQLite ledger through two bolt layers spread
over four workers, paced so that the failure strikes mid-stream.  Every id must end up acked; replays are
allowed and reported.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import SYSTEM_CLOCK, wait_until
from tests.cluster.conftest import zk_root_conf
from tests.cluster.harness import FAST_CONF, DevClusterProcess, Ledger, alive

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(400)]

IDS = 20_000
RATE = 3_000  # ids per second: the stream lasts about seven seconds
ALL_ACKED_WITHIN = 180.0


def submit_ackcheck(cluster: DevClusterProcess, wheel: Path, db: Path, name: str = "ackcheck") -> Ledger:
    ledger = Ledger(db, IDS)
    out = cluster.cli(
        "submit", str(wheel), "ackcheck.topology:build", "--name", name,
        "-c", "topology.workers=4", "-c", f"ackcheck.db={db}", "-c", f"ackcheck.rate={RATE}",
        "-c", "topology.message.timeout.secs=6", "-c", "topology.max.spout.pending=2000",
    )
    assert f"Finished submitting topology: {name}" in out.stdout
    return ledger


def spout_slot(cluster: DevClusterProcess, name: str = "ackcheck") -> tuple[str, int]:
    """``(supervisor id, port)`` of the worker running the ledger spout."""
    client = cluster.client()
    found: list[tuple[str, int]] = []

    def located() -> bool:
        stats = client.component(name, "ledger")["executorStats"]
        found[:] = [(s["supervisorId"], int(s["port"])) for s in stats]
        return len(found) == 1

    wait_until(located, 30, interval=0.2, what="the spout's heartbeat")
    return found[0]


def supervisor_daemon(cluster: DevClusterProcess, supervisor_id: str) -> dict[str, Any]:
    """The dev cluster's record of the supervisor with that id."""
    for d in cluster.info()["daemons"]:
        if d["kind"] == "supervisor":
            local = Path(d["config"]).with_suffix("")  # <workdir>/supervisor-N is its storm.local.dir
            if (local / "supervisor" / "id").read_text().strip() == supervisor_id:
                return d
    raise AssertionError(f"no supervisor {supervisor_id}")


def report(record_property: Any, ledger: Ledger) -> None:
    record_property("replays", ledger.replays())
    print(f"all {ledger.count} ids acked; {ledger.replays()} replays")


def test_kill_9_of_a_worker_is_restarted_and_every_id_acked(
    dev_cluster, wheels, zookeeper, request, tmp_path, record_property
) -> None:
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    ledger = submit_ackcheck(cluster, wheels["ackcheck"], tmp_path / "ledger.db")
    wait_until(lambda: ledger.acked() >= 2000, 120, interval=0.2, what="the stream to flow")
    tid = cluster.client().topology_id("ackcheck")
    _, port = spout_slot(cluster)
    victim = cluster.worker_pid(tid, port)
    os.kill(victim, signal.SIGKILL)
    assert ledger.acked() < IDS, "the stream ended before the failure: raise IDS or lower RATE"

    # the supervisor restarts the worker on the same slot, and records how the old one died
    wait_until(lambda: cluster.worker_pid(tid, port) != victim, 60, interval=0.2, what="a new worker")
    assert alive(cluster.worker_pid(tid, port))
    ledger.wait_all_acked(ALL_ACKED_WITHIN)
    codes = (cluster.artifacts(tid) / str(port) / "exit-codes").read_text()
    assert f"pid={victim} " in codes and "exit=-9" in codes
    report(record_property, ledger)
    cluster.cli("kill", "ackcheck", "-w", "0")


def test_a_hung_worker_is_replaced_and_every_id_acked(
    dev_cluster, wheels, zookeeper, request, tmp_path, record_property
) -> None:
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    ledger = submit_ackcheck(cluster, wheels["ackcheck"], tmp_path / "ledger.db")
    wait_until(lambda: ledger.acked() >= 2000, 120, interval=0.2, what="the stream to flow")
    tid = cluster.client().topology_id("ackcheck")
    _, port = spout_slot(cluster)
    victim = cluster.worker_pid(tid, port)
    os.kill(victim, signal.SIGSTOP)  # alive but silent: its heartbeats stop
    try:
        wait_until(lambda: not alive(victim), 90, interval=0.2, what="the silent worker to be killed")
    finally:
        if alive(victim):
            os.kill(victim, signal.SIGKILL)
    ledger.wait_all_acked(ALL_ACKED_WITHIN)
    report(record_property, ledger)
    cluster.cli("kill", "ackcheck", "-w", "0")


def test_kill_9_of_a_supervisor_moves_its_executors_and_every_id_acked(
    dev_cluster, wheels, zookeeper, request, tmp_path, record_property
) -> None:
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    ledger = submit_ackcheck(cluster, wheels["ackcheck"], tmp_path / "ledger.db")
    wait_until(lambda: ledger.acked() >= 2000, 120, interval=0.2, what="the stream to flow")
    client = cluster.client()
    tid = client.topology_id("ackcheck")
    dead_id, _ = spout_slot(cluster)
    daemon = supervisor_daemon(cluster, dead_id)
    orphans = [cluster.worker_pid(tid, w["port"]) for w in client.topology("ackcheck")["workers"]
               if w["supervisorId"] == dead_id]
    os.kill(daemon["pid"], signal.SIGKILL)
    assert ledger.acked() < IDS, "the stream ended before the failure: raise IDS or lower RATE"

    # nimbus notices the supervisor is gone and moves its executors to the other one
    def moved() -> bool:
        workers = client.topology("ackcheck")["workers"]
        return len(workers) == 4 and all(w["supervisorId"] != dead_id for w in workers)

    wait_until(moved, 90, interval=0.25, what="the executors to move off the dead supervisor")
    wait_until(lambda: not any(alive(p) for p in orphans), 30, interval=0.2, what="its workers to exit")
    ledger.wait_all_acked(ALL_ACKED_WITHIN)
    assert all(r["id"] != dead_id for r in client.supervisor_summary())
    report(record_property, ledger)
    cluster.cli("kill", "ackcheck", "-w", "0")


def test_kill_9_of_the_leading_nimbus_hands_over_to_the_standby(
    dev_cluster, wheels, zookeeper, request, tmp_path, record_property
) -> None:
    conf = {**zk_root_conf(request), "topology.min.replication.count": 2}
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=conf, nimbuses=2)
    ledger = submit_ackcheck(cluster, wheels["ackcheck"], tmp_path / "ledger.db")
    client = cluster.client()
    assert client.topology_summaries()[0]["replicationCount"] == 2  # the standby holds the package too
    wait_until(lambda: ledger.acked() >= 2000, 120, interval=0.2, what="the stream to flow")

    old_leader = client.find_leader()
    leader_daemon = next(d for d in cluster.info()["daemons"]
                         if d["kind"] == "nimbus" and f"127.0.0.1:{d['port']}" == old_leader)
    os.kill(leader_daemon["pid"], signal.SIGKILL)

    # workers do not need nimbus: the stream goes on while the standby takes over
    wait_until(lambda: _leader(cluster) not in (None, old_leader), 60, interval=0.25, what="a new leader")
    ledger.wait_all_acked(ALL_ACKED_WITHIN)
    report(record_property, ledger)

    # the new leader accepts submit and kill (the CLI finds it through nimbus.seeds); with one nimbus left,
    # the package can only be held once (else submit waits topology.max.replication.wait.time.secs, as Storm's)
    out = cluster.cli("submit", str(wheels["wordcount"]), "examples.word_count:build", "--name", "after-failover",
                      "-c", "wordcount.sentences=100", "-c", "topology.min.replication.count=1")
    assert "Finished submitting topology: after-failover" in out.stdout
    wait_until(lambda: client.topology("after-failover")["spouts"][0]["acked"] == 100, 120, interval=0.25,
               what="the new topology to run")
    cluster.cli("kill", "ackcheck", "-w", "0")
    cluster.cli("kill", "after-failover", "-w", "0")
    wait_until(lambda: "No topologies running." in cluster.cli("list").stdout, 60, interval=0.25,
               what="both topologies gone")


def _leader(cluster: DevClusterProcess) -> str | None:
    try:
        return cluster.client().find_leader()
    except Exception:
        return None


def test_a_zookeeper_outage_and_restart_is_ridden_out_without_manual_action(
    dev_cluster, wheels, zookeeper, request, tmp_path, record_property
) -> None:
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    ledger = submit_ackcheck(cluster, wheels["ackcheck"], tmp_path / "ledger.db")
    wait_until(lambda: ledger.acked() >= 2000, 120, interval=0.2, what="the stream to flow")
    client = cluster.client()
    tid = client.topology_id("ackcheck")
    workers = {w["port"]: cluster.worker_pid(tid, w["port"]) for w in client.topology("ackcheck")["workers"]}
    daemons = [d["pid"] for d in cluster.info()["daemons"]]

    # ZooKeeper goes away for longer than the sessions' timeout and the supervisors' timeout
    zookeeper.stop()
    down_at, acked_at_stop = SYSTEM_CLOCK.now(), ledger.acked()
    outage = 2 * FAST_CONF["nimbus.supervisor.timeout.secs"]
    assert acked_at_stop < IDS, "the stream ended before the failure: raise IDS or lower RATE"
    wait_until(lambda: SYSTEM_CLOCK.now() - down_at > outage and ledger.acked() > acked_at_stop + 1000, 120,
               interval=0.25, what="the stream to go on while ZooKeeper is down")
    zookeeper.start()

    ledger.wait_all_acked(ALL_ACKED_WITHIN)
    assert all(alive(p) for p in daemons)  # nobody had to be restarted by hand
    # sessions expired and came back: no worker was restarted and nothing was moved
    assert {w["port"]: cluster.worker_pid(tid, w["port"]) for w in client.topology("ackcheck")["workers"]} == workers
    report(record_property, ledger)
    # the cluster still takes orders
    out = cluster.cli("submit", str(wheels["wordcount"]), "examples.word_count:build", "--name", "after-restart",
                      "-c", "wordcount.sentences=100")
    assert "Finished submitting topology: after-restart" in out.stdout
    wait_until(lambda: client.topology("after-restart")["spouts"][0]["acked"] == 100, 120, interval=0.25,
               what="the new topology to run")
    cluster.cli("kill", "ackcheck", "-w", "0")
    cluster.cli("kill", "after-restart", "-w", "0")
