"""The supervisor's log viewer on its own: which files it serves, ranges, and what it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storm_py.node.http_api import JsonApiServer
from storm_py.supervisor.logviewer import LogFiles, logviewer_routes

TID = "words-1-1700000000"


@pytest.fixture
def api(tmp_path: Path) -> JsonApiServer:
    port_dir = tmp_path / TID / "6700"
    port_dir.mkdir(parents=True)
    (port_dir / "worker.log").write_text("line one\nline two\n", encoding="utf-8")
    (port_dir / "worker.log.err").write_bytes(b"bad byte \xff\n")
    (port_dir / "secret.txt").write_text("not a worker file", encoding="utf-8")
    (tmp_path / "outside.log").write_text("nope", encoding="utf-8")
    server = JsonApiServer("127.0.0.1", 0, logviewer_routes(LogFiles(tmp_path)), name="logviewer")
    yield server
    server.stop()


def get(api: JsonApiServer, path: str) -> tuple[int, dict]:
    reply = api.dispatch("GET", path, {}, b"")
    return reply.status, json.loads(reply.body)


def test_lists_a_topologys_worker_files_only(api) -> None:
    status, body = get(api, f"/api/v1/logs/{TID}")
    assert status == 200
    assert body["files"] == [
        {"file": f"{TID}/6700/worker.log", "size": 18},
        {"file": f"{TID}/6700/worker.log.err", "size": 11},
    ]
    assert get(api, "/api/v1/logs/unknown-1-1")[1]["files"] == []


def test_reads_ranges_and_says_where_the_next_read_starts(api) -> None:
    status, body = get(api, f"/api/v1/log?file={TID}/6700/worker.log&start=5&length=3")
    assert status == 200
    assert (body["data"], body["start"], body["next"], body["size"]) == ("one", 5, 8, 18)
    body = get(api, f"/api/v1/log?file={TID}/6700/worker.log&start=100")[1]
    assert (body["data"], body["next"]) == ("", 18)
    assert get(api, f"/api/v1/log?file={TID}/6700/worker.log.err")[1]["data"] == "bad byte \ufffd\n"


@pytest.mark.parametrize(
    ("path", "status", "words"),
    [
        (f"/api/v1/log?file={TID}/6700/secret.txt", 400, "secret.txt"),
        ("/api/v1/log?file=../outside.log", 400, "outside.log"),
        (f"/api/v1/log?file={TID}/../../outside.log", 400, "outside.log"),
        (f"/api/v1/log?file={TID}/..%2F..%2Fx/worker.log", 400, ".."),
        (f"/api/v1/log?file={TID}/6701/worker.log", 404, "6701"),
        (f"/api/v1/log?file={TID}/6700/worker.log&start=x", 400, "start"),
        ("/api/v1/log", 400, "file"),
        ("/api/v1/logs/..", 400, ".."),
    ],
)
def test_refuses_what_is_not_a_worker_file_with_the_thing_named(api, path, status, words) -> None:
    got, body = get(api, path)
    assert got == status
    assert words in body["errorMessage"]


def test_log_page_serves_the_text_itself_for_people(api) -> None:
    """The UI's worker links open ``/log``: the file's lines as plain text (its tail), never JSON with escapes."""
    reply = api.dispatch("GET", f"/log?file={TID}/6700/worker.log", {}, b"")
    assert reply.status == 200 and reply.body == b"line one\nline two\n"
    assert reply.content_type == "text/plain; charset=utf-8" and reply.headers["X-Content-Type-Options"] == "nosniff"
    assert api.dispatch("GET", f"/log?file={TID}/6700/worker.log&length=9", {}, b"").body == b"line two\n"
    assert api.dispatch("GET", f"/log?file={TID}/6700/worker.log&start=5&length=3", {}, b"").body == b"one"
    refused = api.dispatch("GET", f"/log?file={TID}/6700/secret.txt", {}, b"")
    assert refused.status == 400 and "secret.txt" in json.loads(refused.body)["errorMessage"]
