"""A cluster spanning hosts: ZooKeeper, two nimbuses, three supervisors and the client each in its own network
namespace with its own address on a bridge, configured as docs/SECURITY.md says for such a cluster (API token,
ZooKeeper digest and ACLs, TLS on every HTTP endpoint, CURVE between workers).  The ackcheck topology's ledger
(every message id, durable) runs across them while a supervisor host is cut off (its link down) and the leading
nimbus is cut off from ZooKeeper (the other takes over within nimbus.monitor.freq.secs plus the session
timeout); the links come back and every id is acked.  A fifth namespace, a stranger on the same bridge, finds
nothing listening that should not be reachable.

Skipped only where network namespaces cannot be created (the reason is printed loudly); everything made here is
removed, which the test checks.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.client import NimbusClient
from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.dev.tls_ca import make_dev_tls
from tests.cluster.harness import APPS, Ledger, build_wheel, storm_py_command
from tests.security.netns import NetNamespaces, Node, namespaces, start_zookeeper, write_conf

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(600)]

ZK_PORT = 2181
NIMBUS_PORT = 6627
LOGVIEWER_PORT = 8000
SLOTS = [6700, 6701]
IDS = 6000
RATE = 100  # ids per second: the stream lasts a minute, through both failures
SESSION_MS = 6000
MONITOR_SECS = 1
CONF = {
    "nimbus.auth.token": "hosts-apart-token-7c1f0e9d2b",
    "storm.zookeeper.auth.scheme": "digest",
    "storm.zookeeper.auth.payload": "storm:hosts-apart-digest-51a7d3",
    "storm.messaging.encryption": "curve",
    "nimbus.monitor.freq.secs": MONITOR_SECS,
    "nimbus.task.timeout.secs": 8,
    "nimbus.supervisor.timeout.secs": 8,
    "nimbus.task.launch.secs": 40,
    "supervisor.monitor.frequency.secs": 0.5,
    "supervisor.worker.timeout.secs": 8,
    "worker.heartbeat.frequency.secs": 0.5,
    "storm.zookeeper.session.timeout": SESSION_MS,
    "storm.zookeeper.connection.timeout": 15000,
    "storm.nimbus.retry.times": 40,
    "storm.nimbus.retry.interval.millis": 250,
    "storm.nimbus.retry.intervalceiling.millis": 1000,
    "topology.min.replication.count": 2,  # the standby nimbus holds the package too
}


@pytest.fixture
def network() -> Iterator[NetNamespaces]:
    with namespaces("hosts apart were NOT tested") as net:
        yield net


def reachable(prober: Node, address: str, port: int) -> bool:
    probe = f"import socket; socket.create_connection(({address!r}, {port}), timeout=2).close()"
    return prober.run(sys.executable, "-c", probe).returncode == 0


def test_a_cluster_across_hosts_rides_out_a_lost_host_and_a_nimbus_cut_from_zookeeper(
    network: NetNamespaces, tmp_path: Path
) -> None:
    zk = network.add("zk")
    nimbuses = [network.add("nimbus1"), network.add("nimbus2")]
    supervisors = [network.add(f"sup{i}") for i in (1, 2, 3)]
    client_node, stranger = network.add("client"), network.add("stranger")
    logs = tmp_path / "logs"
    logs.mkdir()
    tls = make_dev_tls(tmp_path / "tls", [n.address for n in network.nodes.values()] + [network.gateway])

    start_zookeeper(zk, tmp_path / "zookeeper", logs, ZK_PORT)

    common = {
        **CONF, **tls,
        "storm.zookeeper.servers": [zk.address],
        "storm.zookeeper.port": ZK_PORT,
        "nimbus.seeds": [f"{n.address}:{NIMBUS_PORT}" for n in nimbuses],
        "nimbus.thrift.port": NIMBUS_PORT,
        "storm.log.dir": str(logs),
    }  # fmt: skip
    daemons = [(n, "nimbus", {"nimbus.host": n.address}) for n in nimbuses] + [
        (s, "supervisor", {"storm.local.hostname": s.address, "supervisor.slots.ports": SLOTS,
                           "logviewer.port": LOGVIEWER_PORT})
        for s in supervisors
    ]  # fmt: skip
    for node, kind, extra in daemons:
        conf = write_conf(tmp_path / f"{node.name}.yaml",
                          {**common, **extra, "storm.local.dir": str(tmp_path / node.name)})  # fmt: skip
        with (logs / f"{node.name}.log").open("ab") as out:
            node.popen([sys.executable, "-m", "storm_py", "--log-level", "INFO", kind, "--config", str(conf)], out,
                       cwd=tmp_path)  # fmt: skip
    client_conf = {**common, "storm.local.dir": str(tmp_path / "client")}
    client_path = write_conf(tmp_path / "client.yaml", client_conf)
    observer = NimbusClient(client_conf)  # the test's own view, from the gateway

    def registered() -> set[str]:
        try:
            return {s["host"] for s in observer.supervisor_summary()}
        except Exception:
            return set()

    wait_until(lambda: registered() == {s.address for s in supervisors}, 90.0, interval=0.5,
               what="three supervisors registered from their own addresses")  # fmt: skip

    wheel = build_wheel(APPS / "ackcheck", tmp_path / "wheels")
    ledger = Ledger(tmp_path / "ledger.db", IDS)
    with (logs / "submit.log").open("ab") as out:
        submitted = client_node.popen(
            [*storm_py_command(), "submit", str(wheel), "ackcheck.topology:build", "--name", "ackcheck",
             "-c", "topology.workers=3", "-c", f"ackcheck.db={ledger.path}", "-c", f"ackcheck.rate={RATE}",
             "-c", "topology.message.timeout.secs=6", "-c", "topology.max.spout.pending=500",
             "--config", str(client_path)], out, cwd=tmp_path)  # fmt: skip
        assert submitted.wait(180) == 0, (logs / "submit.log").read_text()
    wait_until(lambda: ledger.acked() >= 300, 120.0, interval=0.25, what="the stream to flow")
    page = observer.topology("ackcheck")
    assert {w["host"] for w in page["workers"]} == {s.address for s in supervisors}  # one worker per host

    # A supervisor host drops off the network: nimbus moves its worker to the two left.
    lost = supervisors[2]
    lost.link(up=False)
    try:
        def moved() -> bool:
            workers = observer.topology("ackcheck")["workers"]
            return len(workers) == 3 and lost.address not in {w["host"] for w in workers}

        wait_until(moved, 90.0, interval=0.25, what="the lost host's worker to move")
    finally:
        lost.link(up=True)
    assert ledger.acked() < IDS, "the stream ended before the second failure: raise IDS or lower RATE"

    # The leading nimbus is cut off from ZooKeeper (and only from it): the other takes over in time.
    leader = observer.find_leader()
    (old,) = [n for n in nimbuses if leader == f"{n.address}:{NIMBUS_PORT}"]
    (standby,) = [n for n in nimbuses if n is not old]
    # the standby's own view of the election (the cut-off one cannot read it any more)
    standby_view = NimbusClient({**client_conf, "nimbus.seeds": [f"{standby.address}:{NIMBUS_PORT}"]})

    def standby_leads() -> bool:
        try:
            return standby_view.find_leader() == f"{standby.address}:{NIMBUS_PORT}"
        except Exception:
            return False

    cut_at = SYSTEM_CLOCK.now()
    old.block(zk.address, blocked=True)
    try:
        wait_until(standby_leads, 60.0, interval=0.1, what="the standby nimbus to lead")
        took = SYSTEM_CLOCK.now() - cut_at
    finally:
        old.block(zk.address, blocked=False)
    assert took <= MONITOR_SECS + SESSION_MS / 1000, f"failover took {took:.1f} s"
    # with the link back, the old leader rejoins as the standby: every seed's answer agrees
    wait_until(lambda: observer.find_leader() == f"{standby.address}:{NIMBUS_PORT}", 60.0, interval=0.25,
               what="every nimbus to know the new leader")  # fmt: skip

    # Links back: every id acked, none lost.
    ledger.wait_all_acked(180.0)
    assert ledger.acked() == IDS
    print(f"\nhosts apart: failover in {took:.1f} s; all {IDS} ids acked, {ledger.replays()} replays")
    with (logs / "kill.log").open("ab") as out:
        killed = client_node.popen([*storm_py_command(), "kill", "ackcheck", "-w", "0", "--config", str(client_path)],
                                   out, cwd=tmp_path)  # fmt: skip
        assert killed.wait(120) == 0, (logs / "kill.log").read_text()

    # Nothing listens where it should not: every listener is on its host's own address or loopback, and from a
    # stranger's namespace only the cluster's ports answer.
    allowed = {zk.name: {ZK_PORT}, **{n.name: {NIMBUS_PORT} for n in nimbuses},
               **{s.name: {LOGVIEWER_PORT, *SLOTS} for s in supervisors}, client_node.name: set()}  # fmt: skip
    for node in [zk, *nimbuses, *supervisors, client_node]:
        for address, port in node.listeners():
            assert address in (node.address, "127.0.0.1", "::1"), (node.name, address, port)
            if address == node.address:
                assert port in allowed[node.name], (node.name, address, port)
            else:
                assert not reachable(stranger, node.address, port), (node.name, port)
    assert reachable(stranger, zk.address, ZK_PORT) and reachable(stranger, nimbuses[0].address, NIMBUS_PORT)
    assert not reachable(stranger, client_node.address, NIMBUS_PORT)
