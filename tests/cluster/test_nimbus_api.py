"""Nimbus daemons in this process over the in-memory state store: the REST API, leadership, blobs, the token."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py.client import NimbusClient, NimbusRequestError
from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import SupervisorInfo
from storm_py.errors import (
    AlreadyAliveException,
    AuthorizationError,
    InvalidTopologyException,
    NotAliveException,
    TopologyLoadError,
)
from storm_py.nimbus.daemon import NimbusDaemon
from storm_py.packaging.package import TopologyPackage, read_package
from tests.cluster.harness import APPS

pytestmark = pytest.mark.timeout(120)

ACKCHECK = APPS / "ackcheck"
#: the fixture cluster's token (every route but the UI's files needs one)
TOKEN = "s3cret"
BADAPPS = APPS / "badapps"


class Nimbuses:
    """Nimbus daemons sharing one in-memory state store, each with its loop thread."""

    def __init__(self, tmp: Path, conf: dict[str, Any]) -> None:
        self.store = MemoryStore()
        self.tmp = tmp
        self.conf = {"nimbus.host": "127.0.0.1", "nimbus.thrift.port": 0, "nimbus.monitor.freq.secs": 0.2,
                     "nimbus.supervisor.timeout.secs": 600, "topology.message.timeout.secs": 30,
                     "topology.workers": 1, "nimbus.auth.token": TOKEN, **conf}
        self.daemons: list[NimbusDaemon] = []
        self.threads: list[threading.Thread] = []
        self.supervisor = self.store.session()

    def start(self, n: int = 1) -> list[NimbusDaemon]:
        for i in range(n):
            conf = {**self.conf, "storm.local.dir": str(self.tmp / f"nimbus-{len(self.daemons) + i}")}
            d = NimbusDaemon(conf, MemoryStorage(self.store))
            d.start()
            t = threading.Thread(target=d.run, daemon=True)
            t.start()
            self.daemons.append(d)
            self.threads.append(t)
        # a supervisor with four slots, so that topologies get scheduled
        from storm_py.cluster_state.cluster_state import ClusterState

        ClusterState(self.supervisor, self.conf).set_supervisor_info(
            "sup-1", SupervisorInfo("127.0.0.1", SYSTEM_CLOCK.wall(), ports=[7001, 7002, 7003, 7004])
        )
        return self.daemons

    def client(self, **conf: Any) -> NimbusClient:
        seeds = [f"127.0.0.1:{d.port}" for d in self.daemons]
        return NimbusClient({**self.conf, "nimbus.seeds": seeds, "storm.nimbus.retry.times": 20,
                             "storm.nimbus.retry.interval.millis": 100, **conf})

    def stop(self) -> None:
        for d in self.daemons:
            d.stop()
        for t in self.threads:
            t.join(10)


@pytest.fixture
def nimbuses(tmp_path: Path) -> Iterator[Callable[..., Nimbuses]]:
    made: list[Nimbuses] = []

    def make(**conf: Any) -> Nimbuses:
        n = Nimbuses(tmp_path / f"n{len(made)}", conf)
        made.append(n)
        return n

    yield make
    for n in made:
        n.stop()


def package(path: Path, entry: str) -> TopologyPackage:
    data, name = read_package(path)
    return TopologyPackage(data, entry, name)


def http(url: str, method: str = "GET", body: bytes | None = None, token: str | None = TOKEN) -> tuple[int, Any]:
    req = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_submit_list_pages_and_kill_over_the_rest_api(nimbuses) -> None:
    cluster = nimbuses()
    (daemon,) = cluster.start()
    client = cluster.client()
    reply = client.submit("acks", package(ACKCHECK, "ackcheck.topology:build"), {"topology.workers": 2})
    tid = reply["id"]
    assert reply["status"] == "success" and tid.startswith("acks-")

    (row,) = client.topology_summaries()
    assert row["name"] == "acks" and row["status"] == "ACTIVE" and row["workersTotal"] == 2
    assert row["replicationCount"] == 1 and row["uptime"].endswith("s")
    page = client.topology("acks")
    assert [s["spoutId"] for s in page["spouts"]] == ["ledger"]
    assert {b["boltId"] for b in page["bolts"]} == {"__acker", "relay", "sink"}
    assert page["msgTimeout"] == 30
    assert [w["window"] for w in page["topologyStats"]] == ["600", "10800", "86400", ":all-time"]
    assert {w["port"] for w in page["workers"]} <= {7001, 7002, 7003, 7004}
    comp = client.component("acks", "relay")
    assert comp["componentType"] == "bolt" and comp["executors"] == 4 and comp["boltStats"]
    summary = client.cluster_summary()
    assert summary["supervisors"] == 1 and summary["slotsTotal"] == 4 and summary["slotsUsed"] == 2
    assert client.nimbus_summary()[0]["status"] == "Leader"
    base = f"http://127.0.0.1:{daemon.port}/api/v1"
    status, workers = http(f"{base}/topology-workers/{tid}")
    assert status == 200 and len(workers["hostPortList"]) == 2

    with pytest.raises(AlreadyAliveException):
        client.submit("acks", package(ACKCHECK, "ackcheck.topology:build"))
    with pytest.raises(InvalidTopologyException, match="unknown component 'nope'"):
        client.rebalance("acks", 0, executors={"nope": 2})
    client.deactivate("acks")
    assert client.topology("acks")["status"] == "INACTIVE"
    client.activate("acks")
    client.rebalance("acks", 0, num_workers=1)
    wait_until(lambda: client.topology("acks")["workersTotal"] == 1, 10, what="the rebalance")
    client.kill("acks", 0)
    wait_until(lambda: client.topology_summaries() == [], 10, what="the kill")
    with pytest.raises(NotAliveException):
        client.kill("acks")
    assert not list((Path(daemon.blobs.root)).iterdir())  # its blobs went with it


def test_validation_errors_come_back_typed(nimbuses) -> None:
    cluster = nimbuses()
    cluster.start()
    client = cluster.client()
    with pytest.raises(TopologyLoadError, match=r"cannot import module 'badapps\.broken'"):
        client.submit("bad", package(BADAPPS, "badapps.broken:build"))
    with pytest.raises(InvalidTopologyException, match="non-existent component 'wrods'"):
        client.submit("bad", package(BADAPPS, "badapps.invalid:build"))
    with pytest.raises(TopologyLoadError, match="returned NoneType"):
        client.submit("bad", package(BADAPPS, "badapps.notopo:build"))
    assert client.topology_summaries() == []


def test_http_errors_have_storm_fields_and_statuses(nimbuses) -> None:
    cluster = nimbuses()
    (daemon,) = cluster.start()
    base = f"http://127.0.0.1:{daemon.port}/api/v1"
    status, body = http(f"{base}/topology/ghost")
    assert status == 404 and body["error"] == "not_alive" and "ghost" in body["errorMessage"]
    status, body = http(f"{base}/uploadTopology", "POST", b"{not json")
    assert status == 400 and body["error"] == "bad_request"
    status, body = http(f"{base}/topology/ghost/kill/-3", "POST", b"")
    assert status == 400
    status, body = http(f"{base}/no/such/route")
    assert status == 404


def test_mutations_and_blobs_need_the_token(nimbuses) -> None:
    cluster = nimbuses(**{"nimbus.auth.token": "s3cret"})
    (daemon,) = cluster.start()
    good = cluster.client()
    tid = good.submit("acks", package(ACKCHECK, "ackcheck.topology:build"))["id"]
    anonymous = cluster.client(**{"nimbus.auth.token": None})
    wrong = cluster.client(**{"nimbus.auth.token": "guess"})
    for client in (anonymous, wrong):
        with pytest.raises(AuthorizationError):
            client.topology_summaries()  # reads need the token too
        with pytest.raises(AuthorizationError):
            client.kill("acks", 0)
        with pytest.raises(AuthorizationError):
            client.fetch_blob(daemon.id, f"{tid}-stormjar.zip")
    assert good.fetch_blob(daemon.id, f"{tid}-stormjar.zip")[:2] == b"PK"
    configuration = http(f"http://127.0.0.1:{daemon.port}/api/v1/cluster/configuration")[1]
    assert "nimbus.auth.token" not in configuration
    good.kill("acks", 0)


def test_the_standby_copies_blobs_refuses_mutations_and_takes_over(nimbuses) -> None:
    cluster = nimbuses(**{"topology.min.replication.count": 2})
    leader, standby = cluster.start(2)
    wait_until(lambda: leader.is_leader() != standby.is_leader(), 10, what="one leader")
    if standby.is_leader():
        leader, standby = standby, leader
    client = cluster.client()
    reply = client.submit("acks", package(ACKCHECK, "ackcheck.topology:build"))
    assert reply["replicationCount"] == 2  # submit waited for the standby's copy
    tid = reply["id"]
    assert standby.blobs.has(f"{tid}-stormjar.zip") and standby.blobs.has(f"{tid}-stormcode.json")

    status, body = http(f"http://127.0.0.1:{standby.port}/api/v1/topology/{tid}/deactivate", "POST", b"")
    assert status == 503 and body["error"] == "not_leader" and body["leader"] == leader.id
    # reads work on any nimbus
    status, body = http(f"http://127.0.0.1:{standby.port}/api/v1/topology/{tid}")
    assert status == 200 and body["name"] == "acks"

    leader.stop()
    wait_until(standby.is_leader, 10, what="the standby to lead")
    client.deactivate("acks")  # found the new leader through the seeds
    assert client.topology("acks")["status"] == "INACTIVE"
    client.kill("acks", 0)
    wait_until(lambda: client.topology_summaries() == [], 10, what="the kill")


def test_an_unknown_error_code_is_kept(nimbuses) -> None:
    cluster = nimbuses()
    cluster.start()
    client = cluster.client()
    client.submit("acks", package(ACKCHECK, "ackcheck.topology:build"))
    client.kill("acks", 30)
    with pytest.raises(NimbusRequestError) as info:
        client.activate("acks")  # being killed: an invalid transition
    assert info.value.code == "invalid_transition"


def test_the_ui_relays_the_api_to_the_leader(nimbuses) -> None:
    from storm_py.ui.daemon import UiDaemon

    cluster = nimbuses(**{"nimbus.auth.token": "s3cret"})
    cluster.start()
    tid = cluster.client().submit("acks", package(ACKCHECK, "ackcheck.topology:build"))["id"]
    seeds = [f"127.0.0.1:{d.port}" for d in cluster.daemons]
    ui = UiDaemon({**cluster.conf, "nimbus.seeds": seeds, "ui.port": 0})
    ui.start()
    try:
        base = f"http://127.0.0.1:{ui.port}/api/v1"
        status, body = http(f"{base}/topology/summary")
        assert status == 200 and [t["id"] for t in body["topologies"]] == [tid]
        status, body = http(f"{base}/topology/{tid}/component/ledger")
        assert status == 200 and body["componentType"] == "spout"
        status, body = http(f"{base}/topology/summary", token=None)
        assert status == 401 and body["error"] == "unauthorized"
        status, body = http(f"{base}/topology/{tid}/kill/0", "POST", b"", token=None)
        assert status == 401 and body["error"] == "unauthorized"
        status, body = http(f"{base}/topology/{tid}/kill/0", "POST", b"", token="guess")
        assert status == 401 and body["error"] == "unauthorized"
        status, body = http(f"{base}/topology/{tid}/kill/0", "POST", b"", token="s3cret")
        assert status == 200 and body == {"topologyOperation": "kill", "topologyId": tid, "status": "success"}
        with urllib.request.urlopen(f"http://127.0.0.1:{ui.port}/index.html", timeout=10) as page:
            assert page.status == 200 and b"Topology Summary" in page.read()  # the UI's own pages
        status, _ = http(f"http://127.0.0.1:{ui.port}/api/v2/nothing")
        assert status == 404
    finally:
        ui.stop()
