"""Operations on a dev cluster: profiling a running topology's workers through nimbus's REST routes and
``storm-py profile`` (results listed and downloaded through the log viewer, bad input refused by name), and a
traced topology's spans as an OTLP/HTTP receiver gets them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import wait_until
from tests.cluster.harness import DevClusterProcess, build_wheel, word_count_project
from tests.ops.otlp_receiver import OtlpReceiver, tree

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(400)]

TOKEN = "pr0filing"
NAME = "profiled"


class Cluster:
    """The dev cluster, its topology and the one worker."""

    def __init__(self, dc: DevClusterProcess, tid: str, host_port: str, wheel: Path) -> None:
        self.dc, self.tid, self.host_port, self.wheel = dc, tid, host_port, wheel

    def call(self, method: str, path: str, token: str | None = TOKEN) -> tuple[int, Any]:
        req = urllib.request.Request(f"{self.dc.nimbus_url()}/api/v1{path}", method=method, data=None)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"{}")

    def fetch(self, url: str) -> bytes:
        req = urllib.request.Request(url)
        req.add_header("Authorization", f"Bearer {TOKEN}")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return bytes(resp.read())

    def result(self, file: str, timeout: float = 120) -> dict[str, Any]:
        """The listed result ``file`` once it is there."""
        found: list[dict[str, Any]] = []

        def listed() -> bool:
            status, body = self.call("GET", f"/topology/{self.tid}/profiling/dumps/{self.host_port}")
            assert status == 200, body
            found[:] = [row for row in body["dumps"] if row["file"] == file]
            return bool(found)

        wait_until(listed, timeout, interval=0.2, what=f"profiling result {file}")
        return found[0]


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("profiling")
    wheel = build_wheel(word_count_project(root), root)
    dc = DevClusterProcess(root / "cluster", zookeeper=zookeeper.connect_string, supervisors=1,
                           conf={"storm.zookeeper.root": f"/tests/profiling-{root.name}/storm",
                                 "nimbus.auth.token": TOKEN, "worker.profiler.memory.trace.secs": 1,
                                 "worker.profiler.poll.secs": 0.2})
    try:
        dc.start()
        dc.cli("submit", str(wheel), "examples.word_count:build", "--name", NAME, "-c", "topology.workers=1")
        tid = dc.client().topology_id(NAME)
        wait_until(lambda: len(dc.client().request("GET", f"/topology/{tid}")["workers"]) == 1, 120,
                   interval=0.2, what="the worker to run")
        [row] = dc.client().request("GET", f"/topology-workers/{tid}")["hostPortList"]
        log = dc.artifacts(tid) / str(row["port"]) / "worker.log"
        wait_until(lambda: log.exists() and "running executors" in log.read_text(encoding="utf-8"), 120,
                   interval=0.2, what="the worker to run its executors")
        yield Cluster(dc, tid, f"{row['host']}:{row['port']}", wheel)
    finally:
        dc.stop()


def test_a_stack_dump_through_rest_is_listed_and_downloadable(cluster: Cluster) -> None:
    status, body = cluster.call("POST", f"/topology/{cluster.tid}/profiling/dumpjstack/{cluster.host_port}")
    assert status == 200, body
    assert (body["status"], body["id"], body["action"], body["tool"]) == ("ok", cluster.host_port, "stack", "py-spy")
    row = cluster.result(body["file"])
    assert row["action"] == "stack" and row["size"] > 0 and row["url"] == body["dumplink"]
    text = cluster.fetch(body["dumplink"]).decode("utf-8")
    port = cluster.host_port.rsplit(":", 1)[1]
    assert f"Process {cluster.dc.worker_pid(cluster.tid, int(port))}" in text and "run_worker" in text
    with pytest.raises(urllib.error.HTTPError) as refused:  # the log viewer wants the token too
        urllib.request.urlopen(body["dumplink"], timeout=30)
    assert refused.value.code == 401


def test_a_cpu_profile_through_rest_is_a_flame_graph(cluster: Cluster) -> None:
    status, body = cluster.call("POST", f"/topology/{cluster.tid}/profiling/start/{cluster.host_port}/1?seconds=2")
    assert status == 200, body
    assert (body["action"], body["seconds"], body["timeout"]) == ("cpu", 2, "1") and body["file"].endswith(".svg")
    cluster.result(body["file"])
    svg = cluster.fetch(body["dumplink"]).decode("utf-8")
    assert "<svg" in svg and "execute" in svg  # the word count's bolts are busy


def test_a_memory_snapshot_through_rest_is_taken_in_the_worker(cluster: Cluster) -> None:
    status, body = cluster.call("POST", f"/topology/{cluster.tid}/profiling/dumpheap/{cluster.host_port}")
    assert status == 200, body
    assert (body["action"], body["tool"], body["seconds"]) == ("memory", "in-process", 1)
    cluster.result(body["file"])
    text = cluster.fetch(body["dumplink"]).decode("utf-8")
    assert text.startswith("Memory snapshot at ") and "Top 50 lines by size:" in text


@pytest.mark.parametrize(
    ("method", "path", "status", "words"),
    [
        ("POST", "/topology/{tid}/profiling/dumpjstack/nohost", 400, "host-port"),
        ("POST", "/topology/{tid}/profiling/dumpjstack/ghost:6700", 404, "ghost:6700"),
        ("POST", "/topology/{tid}/profiling/dumpheap/{host}:1", 404, "host-port"),
        ("POST", "/topology/{tid}/profiling/start/{hp}/0", 400, "timeout"),
        ("POST", "/topology/{tid}/profiling/start/{hp}/61", 400, "timeout"),
        ("POST", "/topology/{tid}/profiling/start/{hp}/1?seconds=0", 400, "seconds"),
        ("GET", "/topology/{tid}/profiling/dumps/nohost:x", 400, "host-port"),
        ("POST", "/topology/nothere/profiling/dumpjstack/{hp}", 404, "nothere"),
    ],
)
def test_bad_requests_name_the_argument(cluster: Cluster, method: str, path: str, status: int, words: str) -> None:
    got, body = cluster.call(method, path.format(tid=cluster.tid, hp=cluster.host_port,
                                                   host=cluster.host_port.rsplit(":", 1)[0]))
    assert got == status, body
    assert words in body["errorMessage"]


def test_the_routes_want_the_token(cluster: Cluster) -> None:
    for method, path in (("POST", f"/topology/{cluster.tid}/profiling/dumpjstack/{cluster.host_port}"),
                         ("GET", f"/topology/{cluster.tid}/profiling/dumps/{cluster.host_port}")):
        assert cluster.call(method, path, token=None)[0] == 401
        assert cluster.call(method, path, token="wrong")[0] == 401


def test_the_cli_profiles_prints_where_and_downloads(cluster: Cluster, tmp_path: Path) -> None:
    out = cluster.dc.cli("profile", NAME, "--stack", "--download", str(tmp_path / "stack")).stdout
    assert f"{cluster.host_port}: stack by py-spy started -> {cluster.tid}/" in out
    [saved] = (tmp_path / "stack").iterdir()
    assert saved.name.startswith(f"{cluster.tid}-") and "Thread" in saved.read_text(encoding="utf-8")
    assert f"saved {saved}" in out

    out = cluster.dc.cli("profile", NAME, "--component", "count", "--cpu", "2").stdout
    line = next(x for x in out.splitlines() if x.startswith(f"{cluster.host_port} cpu py-spy "))
    file, size, url = line.split()[3:]
    assert file.endswith(".svg") and int(size) > 0 and url.startswith("http")

    out = cluster.dc.cli("profile", NAME, "--worker", cluster.host_port, "--memory",
                         "--download", str(tmp_path / "mem")).stdout
    assert "memory in-process" in out
    [saved] = (tmp_path / "mem").iterdir()
    assert saved.read_text(encoding="utf-8").startswith("Memory snapshot at ")


def test_the_cli_names_bad_arguments(cluster: Cluster) -> None:
    bad = cluster.dc.cli("profile", NAME, "--worker", "nohost", "--stack", check=False)
    assert bad.returncode != 0 and "host-port" in bad.stderr
    both = cluster.dc.cli("profile", NAME, "--stack", "--cpu", "3", check=False)
    assert both.returncode != 0 and "exactly one of --stack, --cpu SECS, --memory" in both.stderr
    unknown = cluster.dc.cli("profile", "ghost", "--stack", check=False)
    assert unknown.returncode != 0 and "ghost" in unknown.stderr
    comp = cluster.dc.cli("profile", NAME, "--component", "nope", "--stack", check=False)
    assert comp.returncode != 0 and "nope" in comp.stderr


def test_a_traced_topology_sends_its_sampled_trees_across_workers(cluster: Cluster) -> None:
    receiver = OtlpReceiver()
    try:
        cluster.dc.cli("submit", str(cluster.wheel), "examples.word_count:build", "--name", "traced",
                       "-c", "topology.workers=2", "-c", "wordcount.sentences=4",
                       "-c", f"topology.tracing.otlp.endpoint={receiver.endpoint}",
                       "-c", "topology.tracing.sample.percent=100")

        def whole() -> bool:
            traces = receiver.traces()
            return len(traces) == 4 and all(
                len(chains := tree(spans)) > 1 and all(len(c) == 5 for c in chains) for spans in traces.values())

        wait_until(whole, 180, interval=0.2, what="the 4 sentence trees, each emit -> split -> word counts")
        for spans in receiver.traces().values():
            for chain in tree(spans):
                assert chain == ("emit spout", "send default -> split", "execute split", "send default -> count",
                                 "execute count")
            assert {s.service for s in spans} == {"traced"}
        # the trees cross the two workers: a tree's spans come from both, linked by ids neither sent the other
        assert any(len({s.resource["storm_py.worker"] for s in spans}) == 2 for spans in receiver.traces().values())
    finally:
        cluster.dc.cli("kill", "traced", "-w", "0", check=False)
        receiver.close()
