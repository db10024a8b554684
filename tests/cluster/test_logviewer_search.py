"""The log viewer's search, deepSearch, downloads and daemon logs, and the token they ask for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storm_py.node.http_api import JsonApiServer
from storm_py.supervisor.logviewer import DaemonLogFiles, LogFiles, logviewer_routes, search_routes

TID = "words-1-1700000000"
TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def api(tmp_path: Path) -> JsonApiServer:
    artifacts = tmp_path / "workers-artifacts"
    for port, text in (("6700", "start\nneedle one\nmiddle\nneedle two\n"), ("6701", "nothing here\n")):
        (artifacts / TID / port).mkdir(parents=True)
        (artifacts / TID / port / "worker.log").write_text(text, encoding="utf-8")
    (tmp_path / "supervisor-1.log").write_text("supervisor started\nneedle in a daemon\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a log", encoding="utf-8")
    files = LogFiles(artifacts)
    routes = logviewer_routes(files) + search_routes(files, DaemonLogFiles(tmp_path), "host-a", 8 << 20)
    server = JsonApiServer("127.0.0.1", 0, routes, token=TOKEN, name="logviewer")
    yield server
    server.stop()


def get(api: JsonApiServer, path: str, headers: dict[str, str] = AUTH) -> tuple[int, dict]:
    reply = api.dispatch("GET", path, headers, b"")
    return reply.status, (json.loads(reply.body) if reply.content_type == "application/json" else reply.body)


def test_search_pages_through_one_file(api) -> None:
    status, body = get(api, f"/api/v1/search?file={TID}/6700/worker.log&search-string=needle&num-matches=1")
    assert status == 200
    [match] = body["matches"]
    assert (match["byteOffset"], match["matchString"], match["beforeString"]) == (6, "needle", "start\n")
    assert match["afterString"].startswith(" one\nmiddle")
    assert match["logviewerURL"] == f"/log?file={TID}/6700/worker.log&start=6"
    nxt = body["nextByteOffset"]
    body = get(api, f"/api/v1/search?file={TID}/6700/worker.log&search-string=needle&start-byte-offset={nxt}")[1]
    assert [m["afterString"][:4] for m in body["matches"]] == [" two"] and "nextByteOffset" not in body


def test_deep_search_finds_the_workers_holding_a_line(api) -> None:
    body = get(api, f"/api/v1/deepSearch/{TID}?search-string=needle%20two&num-matches=5")[1]
    assert [(m["port"], m["host"], len(m["matches"])) for m in body["matches"]] == [(6700, "host-a", 1)]
    assert get(api, f"/api/v1/deepSearch/{TID}?search-string=needle&port=6701")[1]["matches"] == []


def test_daemon_logs_are_listed_read_searched_and_downloaded(api) -> None:
    assert get(api, "/api/v1/daemonlogs")[1] == {"files": ["supervisor-1.log"]}
    assert get(api, "/api/v1/daemonlog?file=supervisor-1.log&start=11&length=7")[1]["data"] == "started"
    body = get(api, "/api/v1/search?file=supervisor-1.log&search-string=daemon&is-daemon=yes")[1]
    assert body["isDaemon"] == "yes" and body["matches"][0]["byteOffset"] == 31
    assert get(api, "/api/v1/daemondownload?file=supervisor-1.log")[1].startswith(b"supervisor started")
    reply = api.dispatch("GET", f"/api/v1/download?file={TID}/6701/worker.log", AUTH, b"")
    assert reply.body == b"nothing here\n" and "attachment" in reply.headers["Content-Disposition"]


@pytest.mark.parametrize(
    ("path", "status", "words"),
    [
        (f"/api/v1/search?file={TID}/6700/worker.log", 400, "search-string"),
        (f"/api/v1/search?file={TID}/6700/worker.log&search-string=x&num-matches=0", 400, "num-matches"),
        (f"/api/v1/search?file={TID}/6700/worker.log&search-string={'x' * 1025}", 400, "search-string"),
        (f"/api/v1/search?file={TID}/../../notes.txt&search-string=x", 400, "notes.txt"),
        ("/api/v1/search?file=../notes.txt&search-string=x&is-daemon=yes", 400, "notes.txt"),
        (f"/api/v1/deepSearch/{TID}?search-string=x&port=abc", 400, "port"),
        ("/api/v1/daemonlog?file=notes.txt", 400, "notes.txt"),
        ("/api/v1/daemonlog?file=gone.log", 404, "gone.log"),
        (f"/api/v1/download?file={TID}/6799/worker.log", 404, "6799"),
    ],
)
def test_bad_requests_name_what_is_wrong(api, path: str, status: int, words: str) -> None:
    got, body = get(api, path)
    assert got == status and words in body["errorMessage"]


@pytest.mark.parametrize("path", [
    f"/api/v1/search?file={TID}/6700/worker.log&search-string=needle", f"/api/v1/deepSearch/{TID}?search-string=x",
    f"/api/v1/download?file={TID}/6700/worker.log", "/api/v1/daemonlog?file=supervisor-1.log",
    "/api/v1/daemondownload?file=supervisor-1.log", "/api/v1/daemonlogs", f"/api/v1/logs/{TID}",
    f"/api/v1/log?file={TID}/6700/worker.log",
])
def test_every_api_route_needs_the_token(api, path: str) -> None:
    host = {"Host": f"127.0.0.1:{api.port}"}  # a request of this server's own (a foreign Host is refused with 403)
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        assert api.refusal("GET", path, {**host, **headers}).status == 401
        assert get(api, path, headers)[0] == 401
