"""A cluster across a real network: ZooKeeper, nimbus, two supervisors, the UI and the DRPC server each in its own
network namespace with its own address, joined by veth pairs; a word count whose two workers run on different
nodes, and every HTTP route of every daemon attacked from outside (the test's own namespace).

Skipped only where network namespaces cannot be created (the reason is printed loudly); everything the test
makes (namespaces, links, processes) is removed afterwards, which the test checks.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from storm_py.client import NimbusClient, NimbusUnreachableError
from storm_py.clock import wait_until
from storm_py.drpc.server import DRPCServer
from storm_py.nimbus.api import NimbusApi
from storm_py.node.http_api import Route
from storm_py.supervisor.logviewer import LogFiles, logviewer_routes
from tests.cluster.harness import build_wheel, storm_py_command, word_count_project
from tests.security.endpoints import call, concrete
from tests.security.netns import NetNamespaces, namespaces, start_zookeeper, write_conf

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(400)]

ZK_PORT = 2181
NIMBUS_PORT = 6627
SECRET = "storm:netns-cluster-secret"
TOKEN = "netns-cluster-token"
UI_PORT = 8080
DRPC_PORTS = {"drpc.port": 3772, "drpc.invocations.port": 3773, "drpc.http.port": 3774}


@pytest.fixture
def network() -> Iterator[NetNamespaces]:
    with namespaces("the cluster was NOT tested across a real network") as net:
        yield net


def drpc_route_tables() -> dict[str, list[Route]]:
    """The route table of each of the DRPC server's three ports, read from a server built here and closed."""
    local = DRPCServer({"nimbus.auth.token": TOKEN, "drpc.port": 0, "drpc.invocations.port": 0, "drpc.http.port": 0})
    try:
        return {name: list(server.routes) for name, server in local.servers.items()}
    finally:
        local.stop()


def test_word_count_across_network_namespaces(network: NetNamespaces, tmp_path: Path) -> None:
    zk, nimbus = network.add("zk"), network.add("nimbus")
    supervisors = [network.add("sup1"), network.add("sup2")]
    ui_node, drpc_node = network.add("ui"), network.add("drpc")
    logs = tmp_path / "logs"
    logs.mkdir()

    # ZooKeeper in its namespace, listening on its own address only.
    start_zookeeper(zk, tmp_path / "zookeeper", logs, ZK_PORT)

    common = {
        "storm.zookeeper.servers": [zk.address],
        "storm.zookeeper.port": ZK_PORT,
        "storm.zookeeper.auth.scheme": "digest",
        "storm.zookeeper.auth.payload": SECRET,
        "nimbus.auth.token": TOKEN,
        "nimbus.seeds": [f"{nimbus.address}:{NIMBUS_PORT}"],
        "nimbus.thrift.port": NIMBUS_PORT,
        "storm.log.dir": str(logs),
        "storm.nimbus.retry.times": 40,
        "storm.nimbus.retry.interval.millis": 250,
        "storm.nimbus.retry.intervalceiling.millis": 1000,
    }
    daemons = [(nimbus, "nimbus", {"nimbus.host": nimbus.address})] + [
        (sup, "supervisor", {"storm.local.hostname": sup.address, "supervisor.slots.ports": [6700, 6701],
                             "logviewer.port": 8000})
        for sup in supervisors
    ] + [
        (ui_node, "ui", {"ui.host": ui_node.address, "ui.port": UI_PORT}),
        (drpc_node, "drpc", {"drpc.host": drpc_node.address, **DRPC_PORTS}),
    ]  # fmt: skip
    for node, kind, extra in daemons:
        conf = write_conf(tmp_path / f"{node.name}.yaml",
                          {**common, **extra, "storm.local.dir": str(tmp_path / node.name)})  # fmt: skip
        with (logs / f"{node.name}.log").open("ab") as out:
            node.popen([sys.executable, "-m", "storm_py", "--log-level", "INFO", kind, "--config", str(conf)], out,
                       cwd=tmp_path)  # fmt: skip
    client_conf = {**common, "storm.local.dir": str(tmp_path / "client")}
    client_path = write_conf(tmp_path / "client.yaml", client_conf)
    client = NimbusClient(client_conf)

    def registered() -> set[str]:
        try:
            return {s["host"] for s in client.supervisor_summary()}
        except NimbusUnreachableError:  # nimbus not listening yet: refused at once, not retried
            return set()

    wait_until(lambda: registered() == {s.address for s in supervisors}, 90.0, interval=0.5,
               what="both supervisors registered from their own addresses")  # fmt: skip

    wheel = build_wheel(word_count_project(tmp_path / "src"), tmp_path / "wheels")
    sentences = 600
    submitted = subprocess.run(
        [*storm_py_command(), "submit", str(wheel), "examples.word_count:build", "--name", "wordcount",
         "-c", "topology.workers=2", "-c", f"wordcount.sentences={sentences}", "--config", str(client_path)],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr

    def acked() -> int:
        return int(client.topology("wordcount")["spouts"][0]["acked"])

    wait_until(lambda: acked() == sentences, 180.0, interval=0.5, what=f"{sentences} sentences acked")
    page = client.topology("wordcount")
    assert {w["host"] for w in page["workers"]} == {s.address for s in supervisors}  # one worker per node
    assert page["spouts"][0]["failed"] == 0

    # Over the network, every route of nimbus, of each supervisor's log viewer, of the UI (nimbus's routes, which
    # it relays) and of the DRPC server's three ports (from their route tables) refuses no token and a wrong one,
    # and a rebinding Host is refused even with the right one.
    nimbus_routes = NimbusApi(cast(Any, None)).routes()
    drpc_routes = drpc_route_tables()
    targets = [
        ("nimbus", nimbus.address, NIMBUS_PORT, nimbus_routes),
        *(("logviewer", sup.address, 8000, logviewer_routes(LogFiles(tmp_path))) for sup in supervisors),
        ("ui", ui_node.address, UI_PORT, nimbus_routes),
        *((name, drpc_node.address, DRPC_PORTS[key], drpc_routes[name])
          for name, key in (("drpc", "drpc.port"), ("drpc-invocations", "drpc.invocations.port"),
                            ("drpc-http", "drpc.http.port"))),
    ]  # fmt: skip
    attacked: dict[str, int] = {}
    for name, address, port, routes in targets:
        for route in (r for r in routes if not r.public and r.pattern != "/health"):
            for authorization in ({}, {"Authorization": "Bearer wrong"}):
                post = route.method in ("POST", "PUT")
                content = route.bodies[0]  # each route's own body type (the UI relays nimbus's routes)
                headers = {**authorization, "Content-Type": content} if post else authorization
                body = b"{}" if post else None
                status = call(port, route.method, concrete(route.pattern), headers, body, address=address)[0]
                assert status == 401, (name, address, port, route.method, route.pattern)
                attacked[name] = attacked.get(name, 0) + 1
        rebound = {"Host": f"attacker.example:{port}", "Authorization": f"Bearer {TOKEN}"}
        assert call(port, "GET", "/health", rebound, address=address)[0] == 403, (name, address, port)
    assert set(attacked) == {"nimbus", "logviewer", "ui", "drpc", "drpc-invocations", "drpc-http"}, attacked
    # The refusals are the token's, not a dead relay's: with the token, the UI in its namespace reaches nimbus in
    # its own across the network, and the DRPC server answers.
    good = {"Authorization": f"Bearer {TOKEN}"}
    status, _, summary = call(UI_PORT, "GET", "/api/v1/cluster/summary", good, address=ui_node.address)
    assert status == 200 and b"supervisors" in summary
    assert call(DRPC_PORTS["drpc.port"], "GET", "/health", good, address=drpc_node.address)[0] == 200

    # From outside the cluster (the test's own namespace), ZooKeeper gives nothing without the secret.
    stranger = KazooClient(hosts=f"{zk.address}:{ZK_PORT}", timeout=6.0)
    stranger.start(timeout=10.0)
    try:
        with pytest.raises(NoAuthError):
            stranger.get_children("/storm/storms")
        with pytest.raises(NoAuthError):
            stranger.get("/storm/assignments/" + page["id"])
    finally:
        stranger.stop()
        stranger.close()
