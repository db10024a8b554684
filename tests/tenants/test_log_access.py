"""A supervisor's log viewer under users and roles (storm_py.supervisor.log_access): what each request asks for, the
status each caller gets on another's topology logs, killed topologies, the audit of refusals; and the actions the
rights core lets each caller take (what the UI shows).  No sockets: requests are dispatched directly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import SimulatedClock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import ACTIVE, StormBase
from storm_py.cluster_state.users import UserStore
from storm_py.nimbus.users import (
    TOPOLOGY_ACTIONS,
    Principal,
    Right,
    Target,
    TopologyAcl,
    cluster_actions,
    topology_actions,
)
from storm_py.node.http_api import JsonApiServer
from storm_py.supervisor.log_access import LogViewerGate, log_target
from storm_py.supervisor.logviewer import DaemonLogFiles, LogFiles, logviewer_routes, search_routes

CLUSTER_TOKEN = "cluster-secret-cluster-secret"
TID, GONE = "wc-1-100", "old-2-200"


@pytest.mark.parametrize(("method", "target", "expected"), [
    ("GET", f"/api/v1/logs/{TID}", Target(Right.TOPOLOGY_READ, "log read", TID)),
    ("GET", f"/api/v1/log?file={TID}/6700/worker.log&start=0", Target(Right.TOPOLOGY_READ, "log read", TID)),
    ("GET", f"/log?file={TID}%2F6700%2Fworker.log", Target(Right.TOPOLOGY_READ, "log read", TID)),
    ("GET", f"/api/v1/download?file={TID}/6700/worker.log", Target(Right.TOPOLOGY_READ, "log read", TID)),
    ("GET", f"/api/v1/search?file={TID}/6700/worker.log&search-string=x",
     Target(Right.TOPOLOGY_READ, "log read", TID)),
    ("GET", "/api/v1/search?file=supervisor.log&is-daemon=yes&search-string=x",
     Target(Right.READ_ALL, "daemon log read")),
    ("GET", f"/api/v1/deepSearch/{TID}?search-string=x", Target(Right.TOPOLOGY_READ, "log read", TID)),
    ("GET", f"/api/v1/profiling/dumps/{TID}/6700", Target(Right.TOPOLOGY_READ, "log read", TID)),
    ("POST", f"/api/v1/profiling/jstack/{TID}/6700", Target(Right.TOPOLOGY_CHANGE, "profile", TID)),
    ("GET", "/api/v1/daemonlogs", Target(Right.READ_ALL, "daemon log read")),
    ("GET", "/api/v1/daemonlog?file=nimbus.log", Target(Right.READ_ALL, "daemon log read")),
    ("GET", "/api/v1/log", Target(Right.CLUSTER_READ, "log read")),  # no file: the handler says which is missing
    ("DELETE", f"/api/v1/logs/{TID}", Target(Right.ADMIN, f"delete /api/v1/logs/{TID}")),
    ("GET", "/api/v1/other", Target(Right.ADMIN, "get /api/v1/other")),
])
def test_each_log_viewer_request_names_the_topology_it_reads(method: str, target: str, expected: Target) -> None:
    assert log_target(method, target) == expected


class World:
    def __init__(self, tmp: Path) -> None:
        self.conf: dict[str, Any] = {"nimbus.auth.token": CLUSTER_TOKEN, "storm.log.dir": str(tmp / "logs"),
                                     "nimbus.admins": ["root"]}
        self.state = ClusterState(MemoryStorage(MemoryStore()), self.conf)
        conf = {"topology.submitter.user": "alice", "topology.users": ["bob"], "topology.readonly.users": ["carol"]}
        self.state.set_storm_base(TID, StormBase("wc", ACTIVE, 0.0, 1, topology_conf=conf))
        store = UserStore(self.state)
        self.tokens = {"cluster": CLUSTER_TOKEN}
        for name, role in (("root", "user"), ("alice", "user"), ("bob", "user"), ("carol", "user"),
                           ("dave", "user"), ("eve", "readonly"), ("adm", "admin")):
            self.tokens[name] = store.add(name, role, 0.0)
        root = tmp / "logs" / "workers-artifacts"
        for tid in (TID, GONE):  # GONE: a killed topology whose logs are still on the host
            (root / tid / "6700").mkdir(parents=True)
            (root / tid / "6700" / "worker.log").write_text("hello from the worker\n", encoding="utf-8")
        (tmp / "logs" / "supervisor.log").write_text("supervisor started\n", encoding="utf-8")
        files = LogFiles(root)
        self.gate = LogViewerGate(self.conf, self.state, SimulatedClock())
        routes = logviewer_routes(files) + search_routes(files, DaemonLogFiles(root.parent), "h", 1 << 20)
        self.server = JsonApiServer("127.0.0.1", 0, routes, token=CLUSTER_TOKEN, gate=self.gate, name="logviewer")

    def call(self, who: str | None, method: str, target: str) -> int:
        headers = {"Host": "127.0.0.1"}
        if who is not None:
            headers["Authorization"] = f"Bearer {self.tokens.get(who, who)}"
        reply = self.server.refusal(method, target, headers, client="10.0.0.1")
        if reply is None:
            reply = self.server.dispatch(method, target, headers, b"")
        return reply.status

    def audit(self) -> list[dict[str, Any]]:
        path = self.gate.audit.path
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    yield w
    w.server.stop()


FILE = f"{TID}/6700/worker.log"
REQUESTS = [f"/api/v1/logs/{TID}", f"/api/v1/log?file={FILE}", f"/log?file={FILE}",
            f"/api/v1/search?file={FILE}&search-string=hello", f"/api/v1/deepSearch/{TID}?search-string=hello",
            f"/api/v1/download?file={FILE}", "/api/v1/daemonlogs", "/api/v1/daemonlog?file=supervisor.log",
            f"/api/v1/log?file={GONE}/6700/worker.log"]
# caller -> the status of each request above (the topology's six log reads, two daemon log reads, a killed one's)
MATRIX = {
    None: (401,) * 9,
    "not-a-token": (401,) * 9,
    "cluster": (200,) * 9,
    "adm": (200,) * 9,
    "root": (200,) * 9,  # role user, but listed in nimbus.admins
    "alice": (200,) * 6 + (403, 403, 403),  # the submitter: its topology's logs, no daemon's, none of a killed one
    "bob": (200,) * 6 + (403, 403, 403),  # topology.users
    "carol": (200,) * 6 + (403, 403, 403),  # topology.readonly.users
    "dave": (403,) * 9,  # a user the topology does not name
    "eve": (200,) * 9,  # role readonly: every log
}


@pytest.mark.parametrize("who", list(MATRIX))
def test_each_caller_reads_exactly_the_logs_its_rights_allow(world: World, who: str | None) -> None:
    assert tuple(world.call(who, "GET", t) for t in REQUESTS) == MATRIX[who]


def test_a_file_parameter_cannot_smuggle_another_topology(world: World) -> None:
    assert world.call("dave", "GET", f"/api/v1/log?file={FILE}&file=mine/6700/worker.log") == 403
    assert world.call("alice", "GET", f"/api/v1/log?file=../{TID}/6700/worker.log") in (400, 403)
    assert world.call("alice", "GET", "/api/v1/log") == 400  # a missing file is named, not hidden behind a 403


def test_refused_log_reads_are_audited_with_their_topology_and_allowed_ones_are_not(world: World) -> None:
    world.call("alice", "GET", f"/api/v1/log?file={FILE}")
    world.call("dave", "GET", f"/api/v1/log?file={FILE}")
    world.call("not-a-token", "GET", f"/api/v1/logs/{TID}")
    world.call("alice", "GET", "/api/v1/daemonlogs")
    assert [(e["user"], e["action"], e["target"], e["path"], e["result"]) for e in world.audit()] == [
        ("dave", "log read", TID, "/api/v1/log", "forbidden"),
        ("-", "log read", TID, f"/api/v1/logs/{TID}", "unauthorized"),
        ("alice", "daemon log read", "", "/api/v1/daemonlogs", "forbidden"),
    ]
    text = world.gate.audit.path.read_text()
    assert all(t not in text for t in world.tokens.values()) and "not-a-token" not in text


ACL = TopologyAcl.of("alice", {"topology.users": ["bob"], "topology.readonly.users": ["carol"]})


@pytest.mark.parametrize(("who", "cluster", "topology"), [
    (Principal("adm", "admin"), ["submit", "users"], list(TOPOLOGY_ACTIONS)),
    (Principal("alice", "user"), ["submit"], list(TOPOLOGY_ACTIONS)),
    (Principal("bob", "user"), ["submit"], list(TOPOLOGY_ACTIONS)),
    (Principal("carol", "user"), ["submit"], []),
    (Principal("dave", "user"), ["submit"], []),
    (Principal("eve", "readonly"), [], []),
    (Principal("mallory", ""), [], []),
])
def test_the_actions_each_caller_may_take(who: Principal, cluster: list[str], topology: list[str]) -> None:
    assert cluster_actions(who) == cluster
    assert topology_actions(who, TID, ACL) == topology
    assert topology_actions(who, TID, None) == (list(TOPOLOGY_ACTIONS) if who.role == "admin" else [])


def test_a_refusal_says_who_may_not_read_what(world: World) -> None:
    headers = {"Host": "127.0.0.1", "Authorization": f"Bearer {world.tokens['dave']}"}
    reply = world.server.dispatch("GET", f"/api/v1/log?file={FILE}", headers, b"")
    assert json.loads(reply.body)["errorMessage"] == (
        f"user 'dave' (role user) may not read the logs of topology '{TID}' on this log viewer")
    headers["Authorization"] = f"Bearer {world.tokens['alice']}"
    reply = world.server.dispatch("GET", "/api/v1/daemonlogs", headers, b"")
    assert json.loads(reply.body)["errorMessage"] == (
        "user 'alice' (role user) may not read the daemons' logs on this log viewer")
