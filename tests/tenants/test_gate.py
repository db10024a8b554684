"""Nimbus's gate (storm_py.nimbus.access) in the API server: 401/403/200 for every kind of caller, on routes the
server knew and on routes added later, and the audit lines; no sockets (requests are dispatched directly)."""

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
from storm_py.errors import InvalidTopologyException
from storm_py.nimbus.access import NimbusGate
from storm_py.node.http_api import JsonApiServer, Reply, Request, Route

CLUSTER_TOKEN = "cluster-secret-cluster-secret"
TID = "wc-1-100"


class World:
    def __init__(self, log_dir: Path) -> None:
        self.conf: dict[str, Any] = {"nimbus.auth.token": CLUSTER_TOKEN, "storm.log.dir": str(log_dir),
                                     "nimbus.admins": ["root"]}
        self.state = ClusterState(MemoryStorage(MemoryStore()), self.conf)
        conf = {"topology.submitter.user": "alice", "topology.users": ["bob"], "topology.readonly.users": ["carol"]}
        self.state.set_storm_base(TID, StormBase("wc", ACTIVE, 0.0, 1, topology_conf=conf))
        self.gate = NimbusGate(self.conf, self.state, lambda name: TID if name == "wc" else None, SimulatedClock())
        store = UserStore(self.state)
        self.tokens = {"cluster": CLUSTER_TOKEN}
        for name, role in (("root", "user"), ("alice", "user"), ("bob", "user"), ("carol", "user"),
                           ("dave", "user"), ("eve", "readonly"), ("adm", "admin")):
            self.tokens[name] = store.add(name, role, 0.0)

        def ok(req: Request) -> Any:
            return {"user": req.user}

        # the routes of the server as it is, plus two added later by another part (their rights follow their paths)
        routes = [Route("GET", "/api/v1/cluster/summary", ok), Route("GET", "/api/v1/topology/{id}", ok),
                  Route("POST", "/api/v1/topology/{id}/kill", ok, protected=True),
                  Route("POST", "/api/v1/topology/{id}/profiling/dumpjstack/{hp}", ok, protected=True),
                  Route("GET", "/api/v1/topology/{id}/autoscale", ok),
                  Route("POST", "/api/v1/uploadTopology", ok, protected=True),
                  Route("GET", "/api/v1/users", ok, protected=True), Route("GET", "/metrics", ok),
                  Route("GET", "/", lambda _r: Reply(200, b"<html>", "text/html"), public=True)]
        self.server = JsonApiServer("127.0.0.1", 0, routes, token=CLUSTER_TOKEN, gate=self.gate)

    def call(self, who: str | None, method: str, path: str) -> int:
        headers = {"Content-Type": "application/json", "Host": "127.0.0.1"}
        if who is not None:
            headers["Authorization"] = f"Bearer {self.tokens.get(who, who)}"
        reply = self.server.refusal(method, path, headers, client="10.0.0.1")
        if reply is None:
            reply = self.server.dispatch(method, path, headers, b"")
        return reply.status

    def audit(self) -> list[dict[str, Any]]:
        path = self.gate.audit.path
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path / "logs")
    yield w
    w.server.stop()


KILL, PROFILE = f"/api/v1/topology/{TID}/kill", f"/api/v1/topology/{TID}/profiling/dumpjstack/h:6700"
PAGE, AUTOSCALE = f"/api/v1/topology/{TID}", f"/api/v1/topology/{TID}/autoscale"

# caller -> (cluster summary, topology page, autoscale, kill, profile, submit, users, /metrics)
MATRIX = {
    None: (401, 401, 401, 401, 401, 401, 401, 401),
    "unknown-token": (401, 401, 401, 401, 401, 401, 401, 401),
    "cluster": (200, 200, 200, 200, 200, 200, 200, 200),
    "adm": (200, 200, 200, 200, 200, 200, 200, 200),
    "root": (200, 200, 200, 200, 200, 200, 200, 200),  # role user, but listed in nimbus.admins
    "alice": (200, 200, 200, 200, 200, 200, 403, 403),  # the submitter
    "bob": (200, 200, 200, 200, 200, 200, 403, 403),  # topology.users
    "carol": (200, 200, 200, 403, 403, 200, 403, 403),  # topology.readonly.users
    "dave": (200, 403, 403, 403, 403, 200, 403, 403),  # a user the topology does not name
    "eve": (200, 200, 200, 403, 403, 403, 403, 200),  # role readonly
}
REQUESTS = [("GET", "/api/v1/cluster/summary"), ("GET", PAGE), ("GET", AUTOSCALE), ("POST", KILL),
            ("POST", PROFILE), ("POST", "/api/v1/uploadTopology"), ("GET", "/api/v1/users"), ("GET", "/metrics")]


@pytest.mark.parametrize("who", list(MATRIX))
def test_every_caller_gets_its_rights_and_401_never_403_without_a_known_token(world: World, who) -> None:
    got = tuple(world.call(who, m, p) for m, p in REQUESTS)
    assert got == MATRIX[who]


def test_a_topology_named_by_name_has_the_same_rights(world: World) -> None:
    assert world.call("dave", "POST", "/api/v1/topology/wc/kill") == 403
    assert world.call("bob", "POST", "/api/v1/topology/wc/kill") == 200


def test_the_ui_files_need_no_token(world: World) -> None:
    assert world.call(None, "GET", "/") == 200


def test_the_handler_sees_who_called(world: World) -> None:
    reply = world.server.dispatch("GET", PAGE, {"Authorization": f"Bearer {world.tokens['carol']}"}, b"")
    assert json.loads(reply.body) == {"user": "carol"}


def test_changes_and_refusals_are_audited_reads_are_not_and_no_token_appears(world: World) -> None:
    world.call("bob", "POST", KILL)
    world.call("dave", "POST", KILL)
    world.call("unknown-token", "POST", KILL)
    world.call("eve", "GET", PAGE)  # an allowed read: not audited
    world.call("dave", "GET", PAGE)  # a refused read: audited
    lines = world.audit()
    assert [(e["user"], e["action"], e["target"], e["result"]) for e in lines] == [
        ("bob", "kill", TID, "ok"), ("dave", "kill", TID, "forbidden"), ("-", "kill", TID, "unauthorized"),
        ("dave", "read", TID, "forbidden"),
    ]
    text = world.gate.audit.path.read_text()
    assert all(t not in text for t in world.tokens.values()) and "unknown-token" not in text


def test_only_an_admin_names_another_submitter(world: World) -> None:
    asked = {"topology.submitter.user": "alice", "topology.workers": 1}
    assert world.gate.submitter_conf("dave", asked)["topology.submitter.user"] == "dave"
    assert world.gate.submitter_conf("adm", asked)["topology.submitter.user"] == "alice"
    assert world.gate.submitter_conf("adm", {})["topology.submitter.user"] == "adm"


def test_a_submit_naming_unknown_users_or_a_malformed_acl_is_refused_naming_the_key(world: World) -> None:
    known = {"topology.users": ["bob", "root"], "topology.readonly.users": ["eve", "cluster"]}
    assert world.gate.submitter_conf("alice", known)["topology.users"] == ["bob", "root"]
    with pytest.raises(InvalidTopologyException, match=r"topology.users names users .*\['mallory'\]"):
        world.gate.submitter_conf("alice", {"topology.users": ["bob", "mallory"]})
    with pytest.raises(InvalidTopologyException, match=r"topology\.readonly\.users must be a list of user names"):
        world.gate.submitter_conf("alice", {"topology.readonly.users": "eve"})


def test_the_gate_names_each_callers_role_and_the_actions_it_may_take(world: World) -> None:
    every = ["activate", "deactivate", "rebalance", "kill", "debug", "logconfig", "profile"]
    assert world.gate.whoami("cluster") == {"user": "cluster", "role": "admin", "actions": ["submit", "users"]}
    assert world.gate.whoami("root") == {"user": "root", "role": "admin", "actions": ["submit", "users"]}
    assert world.gate.whoami("eve") == {"user": "eve", "role": "readonly", "actions": []}
    assert world.gate.whoami("dave") == {"user": "dave", "role": "user", "actions": ["submit"]}
    assert {who: world.gate.topology_actions(who, TID) for who in ("adm", "alice", "bob", "carol", "dave", "eve")} == {
        "adm": every, "alice": every, "bob": every, "carol": [], "dave": [], "eve": []}
    assert world.gate.topology_actions("bob", "wc") == every  # named by its name
    assert world.gate.topology_actions("bob", "gone-9-9") == []
