"""The supervisor's profiler: which tool runs an action, its log viewer routes, and the results it serves."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.clock import Clock, wait_until
from storm_py.nimbus.profiling_api import cpu_seconds, host_port
from storm_py.node.http_api import BadRequestError, JsonApiServer
from storm_py.supervisor.logviewer import DaemonLogFiles, LogFiles, logviewer_routes, search_routes
from storm_py.supervisor.profiler import Profiler, find_py_spy, plan, profiling_routes
from storm_py.worker.profiling import REQUESTS_DIR

TID = "words-1-1700000000"
TOKEN = "pr0file"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_plan_uses_py_spy_for_stacks_and_flame_graphs_and_the_worker_for_the_rest(tmp_path: Path) -> None:
    stack = plan("stack", 1, "/bin/py-spy", 42, 1_700_000_000_123, tmp_path)
    assert stack.argv == ("/bin/py-spy", "dump", "--pid", "42") and stack.file == "profile-stack-1700000000123.txt"
    cpu = plan("cpu", 30, "/bin/py-spy", 42, 1_700_000_000_123, tmp_path)
    assert cpu.file == "profile-cpu-1700000000123.svg" and cpu.tool == "py-spy"
    assert cpu.argv is not None and cpu.argv[:4] == ("/bin/py-spy", "record", "--pid", "42")
    assert cpu.argv[cpu.argv.index("--duration") + 1] == "30" and "flamegraph" in cpu.argv
    assert cpu.argv[-1] == str(tmp_path / ".profile-cpu-1700000000123.svg.part")  # hidden until whole
    memory = plan("memory", 10, "/bin/py-spy", 42, 1_700_000_000_123, tmp_path)
    assert memory.argv is None and memory.file == "profile-memory-1700000000123.txt"
    alone = plan("cpu", 30, None, 42, 1_700_000_000_123, tmp_path)
    assert alone.argv is None and alone.tool == "in-process" and alone.file.endswith(".json")


def test_py_spy_is_found_beside_python_or_not_at_all() -> None:
    assert find_py_spy("") is None and find_py_spy(None) is None
    assert find_py_spy("no-such-profiler-here") is None
    found = find_py_spy("py-spy")
    assert found is not None and Path(found).name == "py-spy"


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time\ndef parked():\n    time.sleep(120)\nparked()"])
    yield proc
    proc.kill()
    proc.wait()


def server(tmp_path: Path, pid: int | None, command: str) -> tuple[JsonApiServer, Profiler]:
    (tmp_path / TID / "6700").mkdir(parents=True, exist_ok=True)
    (tmp_path / TID / "6700" / "worker.log").write_text("hello\n", encoding="utf-8")
    conf = {"worker.profiler.command": command, "worker.profiler.memory.trace.secs": 1}
    profiler = Profiler(conf, tmp_path, lambda tid, port: pid if (tid, port) == (TID, 6700) else None, Clock())
    files = LogFiles(tmp_path)
    routes = logviewer_routes(files) + search_routes(files, DaemonLogFiles(tmp_path), "host-a", 1 << 20)
    routes += profiling_routes(profiler)
    return JsonApiServer("127.0.0.1", 0, routes, token=TOKEN, name="logviewer"), profiler


def call(api: JsonApiServer, method: str, path: str, headers: dict[str, str] = AUTH) -> tuple[int, dict]:
    reply = api.dispatch(method, path, headers, b"")
    return reply.status, json.loads(reply.body)


def test_py_spy_dumps_a_workers_stacks_and_the_log_viewer_serves_the_result(tmp_path: Path, sleeper) -> None:
    api, _ = server(tmp_path, sleeper.pid, "py-spy")
    try:
        status, body = call(api, "POST", f"/api/v1/profiling/stack/{TID}/6700")
        assert status == 200 and body["tool"] == "py-spy" and body["status"] == "started"

        def listed() -> list[dict]:
            return call(api, "GET", f"/api/v1/profiling/dumps/{TID}/6700")[1]["dumps"]

        wait_until(listed, 60, interval=0.1, what="the stack dump")
        [row] = listed()
        assert row["file"] == body["file"] and row["action"] == "stack" and row["size"] > 0
        text = api.dispatch("GET", f"/api/v1/download?file={row['file']}", AUTH, b"").body.decode()
        assert f"Process {sleeper.pid}" in text and "parked" in text
        assert call(api, "GET", f"/api/v1/log?file={row['file']}&start=0")[1]["size"] == row["size"]
    finally:
        api.stop()


def test_without_py_spy_the_worker_is_asked_to_profile_itself(tmp_path: Path, sleeper) -> None:
    api, _ = server(tmp_path, sleeper.pid, "")
    try:
        body = call(api, "POST", f"/api/v1/profiling/cpu/{TID}/6700?seconds=3")[1]
        assert body["tool"] == "in-process" and body["seconds"] == 3 and body["file"].endswith(".json")
        requests = tmp_path / TID / "6700" / REQUESTS_DIR
        wait_until(lambda: list(requests.glob("*.json")), 20, interval=0.05, what="the request file")
        [path] = requests.glob("*.json")
        name = body["file"].split("/")[-1]
        assert json.loads(path.read_text(encoding="utf-8")) == {"action": "cpu", "seconds": 3.0, "file": name}
        memory = call(api, "POST", f"/api/v1/profiling/memory/{TID}/6700")[1]
        assert memory["seconds"] == 1 and memory["tool"] == "in-process"  # worker.profiler.memory.trace.secs
    finally:
        api.stop()


@pytest.mark.parametrize(
    ("method", "path", "status", "words"),
    [
        ("POST", f"/api/v1/profiling/disk/{TID}/6700", 400, "action"),
        ("POST", f"/api/v1/profiling/cpu/{TID}/6700?seconds=0", 400, "seconds"),
        ("POST", f"/api/v1/profiling/cpu/{TID}/6700?seconds=3601", 400, "seconds"),
        ("POST", f"/api/v1/profiling/cpu/{TID}/6700?seconds=x", 400, "seconds"),
        ("POST", f"/api/v1/profiling/stack/{TID}/99999", 400, "port"),
        ("POST", f"/api/v1/profiling/stack/{TID}/6701", 404, "6701"),
        ("POST", "/api/v1/profiling/stack/other-1-1/6700", 404, "other-1-1"),
        ("GET", "/api/v1/profiling/dumps/../6700", 400, ".."),
        ("GET", f"/api/v1/download?file={TID}/6700/profile-cpu-1.svg", 400, "profile-cpu-1.svg"),
        ("GET", f"/api/v1/download?file={TID}/6700/profile-cpu-1700000000123.svg", 404, "profile-cpu"),
    ],
)
def test_bad_requests_name_what_is_wrong(tmp_path: Path, method: str, path: str, status: int, words: str) -> None:
    api, _ = server(tmp_path, 1, "")
    try:
        got, body = call(api, method, path)
        assert got == status, body
        assert words in body["errorMessage"]
        assert not (tmp_path / TID / "6700" / REQUESTS_DIR).exists()
    finally:
        api.stop()


def test_the_routes_want_the_token(tmp_path: Path) -> None:
    api, _ = server(tmp_path, 1, "")
    try:
        assert call(api, "POST", f"/api/v1/profiling/stack/{TID}/6700", {})[0] == 401
        assert call(api, "GET", f"/api/v1/profiling/dumps/{TID}/6700", {})[0] == 401
    finally:
        api.stop()


def test_host_port_and_cpu_length_are_read_or_refused_by_name() -> None:
    assert host_port("node-1.example:6700") == ("node-1.example", 6700)
    for bad in ("node-1", "node-1:0", "node-1:70000", "a/b:6700", ":6700", "node:67x0"):
        with pytest.raises(BadRequestError, match="host-port"):
            host_port(bad)
    assert cpu_seconds("2", {}) == 120 and cpu_seconds("2", {"seconds": ["7"]}) == 7
    for timeout in ("0", "61", "x", "-1"):
        with pytest.raises(BadRequestError, match="timeout"):
            cpu_seconds(timeout, {})
    with pytest.raises(BadRequestError, match="seconds"):
        cpu_seconds("1", {"seconds": ["0"]})
