"""Nimbus's relay of profiling results: a result read from its worker's log viewer with the cluster's token and
answered to a caller of nimbus as an attachment no script of runs; names that are not a result's, results
that are not there and replies over the bound are refused by name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py.client import LogViewerClient, LogViewerError
from storm_py.clock import Clock
from storm_py.cluster_state.models import Assignment, StormBase, SupervisorInfo
from storm_py.nimbus.profiling_api import RESULT_TYPES, profiling_routes, relay_reply, result_name
from storm_py.node.http_api import BadRequestError, JsonApiServer, NotFoundError
from storm_py.supervisor.logviewer import DaemonLogFiles, LogFiles, logviewer_routes, search_routes
from storm_py.supervisor.profiler import Profiler
from storm_py.supervisor.profiler import profiling_routes as supervisor_routes

TID = "words-1-1700000000"
TOKEN = "re1ay"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script><text>execute</text></svg>'
NAME = "profile-cpu-1700000000123.svg"


class State:
    """The two readings of the cluster state the routes make: the topology's assignment and the supervisors."""

    def __init__(self, logviewer_port: int) -> None:
        self.info = SupervisorInfo(hostname="127.0.0.1", time_secs=0.0, logviewer_port=logviewer_port)

    def assignment(self, tid: str) -> Assignment | None:
        return Assignment(node_host={"sup-1": "node-1"}, executor_node_port={(1, 1): ("sup-1", 6700)}) \
            if tid == TID else None

    def supervisors(self) -> dict[str, SupervisorInfo]:
        return {"sup-1": self.info}


class Node:
    def __init__(self, logviewer_port: int) -> None:
        self.conf: dict[str, Any] = {"nimbus.auth.token": TOKEN}
        self.state: Any = State(logviewer_port)


def base_of(tid: str) -> tuple[str, StormBase]:
    if tid != TID:
        raise NotFoundError(f"no topology {tid}")
    return tid, StormBase(name="words", status="ACTIVE", launch_time=0.0, num_workers=1)


@pytest.fixture
def nimbus(tmp_path: Path) -> Iterator[JsonApiServer]:
    """Nimbus's profiling routes over a real log viewer serving one worker directory."""
    worker = tmp_path / TID / "6700"
    worker.mkdir(parents=True)
    (worker / NAME).write_bytes(SVG)
    (worker / "profile-stack-1700000000124.txt").write_text("Thread 1 (idle)\n    parked (x.py:3)\n", "utf-8")
    (worker / "worker.log").write_text("secret log\n", encoding="utf-8")
    viewer = log_viewer(tmp_path)
    try:
        yield JsonApiServer("127.0.0.1", 0, profiling_routes(Node(viewer.port), base_of), token=TOKEN, name="nimbus")
    finally:
        viewer.stop()


def log_viewer(root: Path) -> JsonApiServer:
    """A started log viewer serving the worker directories under ``root``."""
    files = LogFiles(root)
    routes = logviewer_routes(files) + search_routes(files, DaemonLogFiles(root), "node-1", 1 << 20)
    routes += supervisor_routes(Profiler({"worker.profiler.command": ""}, root, lambda tid, port: None, Clock()))
    viewer = JsonApiServer("127.0.0.1", 0, routes, token=TOKEN, name="logviewer")
    viewer.start()
    return viewer


def get(api: JsonApiServer, path: str, headers: dict[str, str] = AUTH) -> tuple[int, bytes, dict[str, str], str]:
    reply = api.dispatch("GET", path, headers, b"")
    return reply.status, reply.body, reply.headers, reply.content_type


def test_the_relay_answers_a_result_read_with_the_clusters_token(nimbus: JsonApiServer) -> None:
    status, body, headers, media = get(nimbus, f"/api/v1/topology/{TID}/profiling/download/node-1:6700/{NAME}")
    assert (status, body, media) == (200, SVG, "image/svg+xml")
    assert headers["Content-Disposition"] == f'attachment; filename="{TID}-6700-{NAME}"'
    assert headers["Content-Security-Policy"].startswith("sandbox;") and headers["X-Content-Type-Options"] == "nosniff"
    status, body, _, media = get(nimbus, f"/api/v1/topology/{TID}/profiling/download/sup-1:6700/"
                                         "profile-stack-1700000000124.txt")
    assert (status, media) == (200, "text/plain; charset=utf-8") and b"parked" in body
    status, listed, _, _ = get(nimbus, f"/api/v1/topology/{TID}/profiling/dumps/node-1:6700")
    rows = {r["name"]: r for r in json.loads(listed)["dumps"]}
    assert rows[NAME]["relay"] == f"/api/v1/topology/{TID}/profiling/download/node-1:6700/{NAME}"


def test_the_relay_wants_the_token(nimbus: JsonApiServer) -> None:
    path = f"/api/v1/topology/{TID}/profiling/download/node-1:6700/{NAME}"
    assert get(nimbus, path, {})[0] == 401
    assert get(nimbus, path, {"Authorization": "Bearer wrong"})[0] == 401


@pytest.mark.parametrize(
    ("name", "status", "words"),
    [
        ("worker.log", 400, "worker.log"),  # another file of the worker's directory
        ("..%2F..%2Fetc%2Fpasswd", 400, "passwd"),
        ("profile-cpu-1.svg", 400, "profile-cpu-1.svg"),
        ("profile-cpu-1700000000123.svg.part", 400, "name"),
        ("profile-memory-1700000000999.txt", 404, "profile-memory-1700000000999.txt"),  # not there
    ],
)
def test_the_relay_refuses_what_is_not_a_result_by_name(nimbus: JsonApiServer, name: str, status: int,
                                                        words: str) -> None:
    got, body, _, _ = get(nimbus, f"/api/v1/topology/{TID}/profiling/download/node-1:6700/{name}")
    assert got == status, body
    assert words in json.loads(body)["errorMessage"] and b"secret" not in body


def test_the_relay_reaches_only_the_topologys_own_workers(nimbus: JsonApiServer) -> None:
    got, body, _, _ = get(nimbus, f"/api/v1/topology/{TID}/profiling/download/elsewhere:6700/{NAME}")
    assert got == 404 and "elsewhere:6700" in json.loads(body)["errorMessage"]
    got, body, _, _ = get(nimbus, f"/api/v1/topology/other-1-1/profiling/download/node-1:6700/{NAME}")
    assert got == 404


def test_a_log_viewer_reply_over_the_bound_is_refused_unread(tmp_path: Path) -> None:
    (tmp_path / TID / "6700").mkdir(parents=True)
    (tmp_path / TID / "6700" / NAME).write_bytes(SVG)
    viewer = log_viewer(tmp_path)
    try:
        client = LogViewerClient(f"http://127.0.0.1:{viewer.port}", 10, {"nimbus.auth.token": TOKEN})
        assert client.download(f"{TID}/6700/{NAME}", len(SVG)) == SVG
        with pytest.raises(LogViewerError, match=f"over {len(SVG) - 1} bytes"):
            client.download(f"{TID}/6700/{NAME}", len(SVG) - 1)
    finally:
        viewer.stop()


def test_result_names_and_replies_are_checked_without_a_server() -> None:
    assert result_name(NAME) == NAME
    for bad in ("", "worker.log", "a/profile-cpu-1700000000123.svg", "profile-cpu-1700000000123.exe"):
        with pytest.raises(BadRequestError, match="profiling result's file name"):
            result_name(bad)
    for ext, media in RESULT_TYPES.items():
        reply = relay_reply(TID, 6700, f"profile-stack-1700000000123.{ext}", b"x")
        assert reply.content_type == media and "sandbox" in reply.headers["Content-Security-Policy"]
    hostile = relay_reply('my "words"\r\nSet-Cookie: x', 6700, NAME, b"x").headers["Content-Disposition"]
    assert hostile == f'attachment; filename="my__words___Set-Cookie__x-6700-{NAME}"'
