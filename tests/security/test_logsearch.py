"""Log searches against rotation and huge replies: a log viewer (a supervisor's, in its own process) searched while
its log is rotated in place over and over stays up, and a deepSearch reply stays under
``logviewer.max.search.reply.bytes`` however many workers and matches there are."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.clock import SYSTEM_CLOCK
from storm_py.node.http_api import JsonApiServer
from storm_py.supervisor import logsearch
from storm_py.supervisor.artifacts import rotate
from storm_py.supervisor.logsearch import CONTEXT_BYTES, ReplyBudget, search_file
from storm_py.supervisor.logviewer import DaemonLogFiles, LogFiles, search_routes

pytestmark = pytest.mark.timeout(120)

TID = "words-1-1700000000"
TOKEN = "log-search-token"
MB = 1 << 20

#: A log viewer alone in a child process (what a supervisor runs), printing its port.
LOG_VIEWER = """
import sys
from pathlib import Path
from storm_py.supervisor.logviewer import LogViewer
viewer = LogViewer({"nimbus.auth.token": sys.argv[2], "logviewer.port": 0}, Path(sys.argv[1]), "127.0.0.1")
viewer.start()
print(viewer.port, flush=True)
sys.stdin.read()
"""


def reference(data: bytes, needle: bytes, start: int, limit: int) -> tuple[list[tuple[int, bytes, bytes]], int | None]:
    """The matches as a whole-file scan finds them: ``(offset, before, after)`` each, and the next offset."""
    out = []
    at = data.find(needle, start)
    while at >= 0 and len(out) < limit:
        end = at + len(needle)
        out.append((at, data[max(0, at - CONTEXT_BYTES):at], data[end:end + CONTEXT_BYTES]))
        at = data.find(needle, end)
    return out, (at if at >= 0 else None)


def test_a_chunked_search_finds_what_a_whole_file_scan_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logsearch, "CHUNK_BYTES", 97)  # matches and their context straddle many chunk edges
    rng = random.Random(7)
    for needle in (b"ab", b"needle", b"x" * 150, b"aa"):
        data = bytes(rng.choice(b"abx \n") for _ in range(5000)) + needle + b"tail"
        path = tmp_path / "worker.log"
        path.write_bytes(data)
        for start in (0, 1, 130, 2500, len(data) - 3, len(data)):
            for limit in (1, 7, 1000):
                found, following = search_file(path, needle, start, limit, ReplyBudget(1 << 30), str)
                want, want_next = reference(data, needle, start, limit)
                got = [(m["byteOffset"], m["beforeString"].encode(), m["afterString"].encode()) for m in found]
                assert (got, following) == (want, want_next), (needle, start, limit)


def test_a_log_rotated_under_running_searches_leaves_the_log_viewer_up(tmp_path: Path) -> None:
    """Rotation empties ``worker.log`` in place while searches scan it; a search must end early, not kill the
    process (a mapped file that shrinks is SIGBUS)."""
    root = tmp_path / "workers-artifacts"
    worker = root / TID / "6700"
    worker.mkdir(parents=True)
    log = worker / "worker.log"
    filler = (b"an ordinary log line without the word\n" * 8192) * 48  # 15 MB
    log.write_bytes(filler)
    viewer = subprocess.Popen([sys.executable, "-c", LOG_VIEWER, str(root), TOKEN], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    stop = threading.Event()
    answered: list[int] = []
    try:
        assert viewer.stdout is not None
        port = int(viewer.stdout.readline())
        url = f"http://127.0.0.1:{port}/api/v1/search?file={TID}/6700/worker.log&search-string=absent"

        def search() -> None:
            while not stop.is_set():
                request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
                try:
                    with urllib.request.urlopen(request, timeout=30) as reply:
                        answered.append(reply.status)
                except (urllib.error.URLError, ConnectionError):
                    return  # the log viewer is gone: the assertion below says so

        searchers = [threading.Thread(target=search, daemon=True) for _ in range(3)]
        for thread in searchers:
            thread.start()
        rotations = 0
        deadline = SYSTEM_CLOCK.now() + 60.0
        while SYSTEM_CLOCK.now() < deadline and viewer.poll() is None and (rotations < 40 or len(answered) < 40):
            with log.open("ab") as out:  # the worker writes on past the limit...
                out.write(filler)
            rotations += len(rotate(worker, 4 * MB))  # ...and the supervisor copies and empties the file
        stop.set()
        for thread in searchers:
            thread.join(30)
        assert viewer.poll() is None, f"the log viewer died during rotation (exit {viewer.returncode})"
        assert rotations >= 40 and len(answered) >= 40 and set(answered) == {200}, (rotations, len(answered))
    finally:
        stop.set()
        viewer.kill()
        viewer.wait()
        for pipe in (viewer.stdin, viewer.stdout):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def many_workers(tmp_path: Path) -> Iterator[Path]:
    """16 workers whose logs each hold 1,000 matches with context that is all invalid UTF-8 (a replacement
    character, six bytes of JSON, per byte): uncapped, one deepSearch is over 25 MB."""
    root = tmp_path / "workers-artifacts"
    line = b"\xff" * CONTEXT_BYTES + b"needle" + b"\xff" * CONTEXT_BYTES + b"\n"
    for port in range(6700, 6716):
        (root / TID / str(port)).mkdir(parents=True)
        (root / TID / str(port) / "worker.log").write_bytes(line * 1100)
    yield root


def deep_search(root: Path, reply_bytes: int, query: str) -> tuple[int, dict]:
    files = LogFiles(root)
    api = JsonApiServer("127.0.0.1", 0, search_routes(files, DaemonLogFiles(root.parent), "host-a", reply_bytes),
                        token=TOKEN, name="logviewer")
    try:
        reply = api.dispatch("GET", f"/api/v1/deepSearch/{TID}?{query}", {"Authorization": f"Bearer {TOKEN}"}, b"")
    finally:
        api.stop()
    return len(reply.body), json.loads(reply.body)


def test_a_deep_search_reply_is_capped_as_a_whole(many_workers: Path) -> None:
    cap = 4 * MB
    size, body = deep_search(many_workers, cap, "search-string=needle&num-matches=1000")
    assert size < cap + 4096, size  # the matches, plus the reply's frame
    assert body["truncated"] is True
    last = body["matches"][-1]
    assert last["nextByteOffset"] == last["matches"][-1]["byteOffset"] + len(b"needle") + 2 * CONTEXT_BYTES + 1
    # the one search with the same cap pages too
    files = LogFiles(many_workers)
    found, following = search_file(files.path_of(f"{TID}/6700/worker.log"), b"needle", 0, 1000, ReplyBudget(cap // 8),
                                    str)
    assert 0 < len(found) < 1000 and following == found[-1]["byteOffset"] + len(b"needle") + 2 * CONTEXT_BYTES + 1
    # a small reply is whole
    size, body = deep_search(many_workers, cap, "search-string=needle&num-matches=2&port=6701")
    assert "truncated" not in body and [len(m["matches"]) for m in body["matches"]] == [2]


def test_a_budget_spent_at_a_file_s_end_leaves_the_next_file_to_the_next_request(many_workers: Path) -> None:
    for port in range(6702, 6716):  # two workers: the second is the last
        shutil.rmtree(many_workers / TID / str(port))
    first = deep_search(many_workers, 1 << 30, "search-string=needle&num-matches=1000&port=6700")[1]
    spent = sum(len(json.dumps(m)) + 2 for m in first["matches"][0]["matches"])
    body = deep_search(many_workers, spent + 100, "search-string=needle&num-matches=1000")[1]
    assert [(m["port"], len(m["matches"])) for m in body["matches"]] == [(6700, 1000)]
    assert body["truncated"] is True  # 6701's matches were not lost: the reply says it was not searched
