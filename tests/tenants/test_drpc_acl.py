"""drpc.authorizer.acl: users' tokens on the DRPC server's client ports, and who may invoke which function
(a DRPC server in this process over an in-memory user store; a thread plays the topology)."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.users import UserStore
from storm_py.drpc import DRPCClient, DRPCExecutionException, DRPCInvocationsClient
from storm_py.drpc.acl import may_invoke, parse_acl
from storm_py.drpc.errors import FORBIDDEN, UNAUTHORIZED
from storm_py.drpc.server import DRPCServer
from storm_py.errors import ConfigError

TOKEN = "cluster-secret-cluster-secret"
ACL = {"secret": {"client.users": ["alice"]}}


def test_the_pure_acl() -> None:
    acl = parse_acl(ACL)
    assert may_invoke(acl, "alice", "secret") and not may_invoke(acl, "bob", "secret")
    assert may_invoke(acl, "bob", "open") and may_invoke(acl, "cluster", "secret")
    assert parse_acl(None) == {} and parse_acl({"f": {"client.users": "ann"}}) == {"f": frozenset({"ann"})}
    for bad in ([1], {"f": ["alice"]}, {"f": {"client.users": [1]}}, {"f": {}}):
        with pytest.raises(ConfigError, match=r"drpc\.authorizer\.acl"):
            parse_acl(bad)


@pytest.fixture
def server() -> Iterator[tuple[DRPCServer, dict[str, str]]]:
    users = UserStore(ClusterState(MemoryStorage(MemoryStore()), {"nimbus.auth.token": TOKEN}))
    tokens = {name: users.add(name, "user", 0.0) for name in ("alice", "bob")}
    drpc = DRPCServer({"nimbus.auth.token": TOKEN, "drpc.port": 0, "drpc.invocations.port": 0, "drpc.http.port": 0,
                       "drpc.authorizer.acl": ACL}, users=users)
    drpc.start()
    stop = threading.Event()
    topology = DRPCInvocationsClient("127.0.0.1", drpc.invocations_port, TOKEN)

    def answer() -> None:
        while not stop.is_set():
            for function in ("secret", "open"):
                for inv in topology.fetch(function, 10, 0.05):
                    topology.result(inv.id, f"{function}:{inv.args}")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield drpc, tokens
    finally:
        stop.set()
        thread.join(10)
        topology.close()
        drpc.stop()


def _http(drpc: DRPCServer, path: str, token: str | None) -> int:
    req = urllib.request.Request(f"http://127.0.0.1:{drpc.http_port}{path}")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def test_users_invoke_what_the_acl_gives_them(server) -> None:
    drpc, tokens = server
    with DRPCClient("127.0.0.1", drpc.port, timeout_secs=30, token=tokens["alice"]) as alice:
        assert alice.execute("secret", "x") == "secret:x"
    with DRPCClient("127.0.0.1", drpc.port, timeout_secs=30, token=tokens["bob"]) as bob:
        assert bob.execute("open", "y") == "open:y"
        with pytest.raises(DRPCExecutionException, match="'bob' may not invoke DRPC function 'secret'") as err:
            bob.execute("secret", "x")
        assert err.value.type == FORBIDDEN
    with DRPCClient("127.0.0.1", drpc.port, timeout_secs=30, token="nobody's") as stranger:
        with pytest.raises(DRPCExecutionException) as err:
            stranger.execute("open", "x")
        assert err.value.type == UNAUTHORIZED
    assert _http(drpc, "/drpc/secret/x", tokens["alice"]) == 200
    assert _http(drpc, "/drpc/secret/x", tokens["bob"]) == 403
    assert _http(drpc, "/drpc/secret/x", TOKEN) == 200
    assert _http(drpc, "/drpc/secret/x", None) == 401


def test_a_user_token_cannot_play_a_topology(server) -> None:
    drpc, tokens = server
    with pytest.raises(DRPCExecutionException) as err:
        DRPCInvocationsClient("127.0.0.1", drpc.invocations_port, tokens["alice"]).fetch("secret", 1, 0.0)
    assert err.value.type == UNAUTHORIZED
