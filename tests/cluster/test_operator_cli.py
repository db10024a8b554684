"""Storm's operator commands through the real CLI on one dev cluster: config values, errors, heartbeats, the
blob store and ``topology.blobstore.map``, log search, node health checks and ``kill_workers``."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py.client import LogViewerClient
from storm_py.clock import wait_until
from tests.cluster.harness import DevClusterProcess, alive, word_count_project

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(300)]

TOKEN = "op3rator"
NAME = "words"
#: Fails the node it runs on when the flag file "fail" exists and its supervisor is supervisor-1.
HEALTH_SCRIPT = """#!/bin/sh
if [ -e fail ] && tr '\\0' ' ' < /proc/$PPID/cmdline | grep -q 'supervisor-1.yaml'; then
  echo "ERROR disk full"
fi
"""


class Ops:
    """The shared cluster, its running topology and the health-check directory."""

    def __init__(self, dc: DevClusterProcess, tid: str, health: Path, root: Path) -> None:
        self.dc, self.tid, self.health, self.root = dc, tid, health, root

    def slots(self) -> list[dict[str, Any]]:
        return list(self.dc.client().request("GET", f"/topology-workers/{self.tid}")["hostPortList"])

    def supervisor_id(self, n: int) -> str:
        return (self.dc.workdir / f"supervisor-{n}" / "supervisor" / "id").read_text(encoding="utf-8").strip()


@pytest.fixture(scope="module")
def ops(zookeeper, wheels, tmp_path_factory) -> Iterator[Ops]:
    root = tmp_path_factory.mktemp("operator")
    health = root / "health"
    health.mkdir()
    script = health / "disk.sh"
    script.write_text(HEALTH_SCRIPT, encoding="utf-8")
    script.chmod(0o755)
    dc = DevClusterProcess(root / "cluster", zookeeper=zookeeper.connect_string,
                           conf={"storm.zookeeper.root": f"/tests/operator-{root.name}/storm",
                                 "nimbus.auth.token": TOKEN, "storm.health.check.dir": str(health)})
    try:
        dc.start()
        (root / "cfg-v1.txt").write_text("version one\n", encoding="utf-8")
        out = dc.cli("blobstore", "create", "words:cfg", "-f", str(root / "cfg-v1.txt"), "-a", "u:alice:rwa,o::r")
        assert out.stdout.strip() == "Created blob words:cfg (version 1, 12 bytes)"
        dc.cli("submit", str(wheels["wordcount"]), "examples.word_count:build", "--name", NAME,
               "-c", "topology.workers=2", "-c", 'topology.blobstore.map={"words:cfg": {"localname": "cfg.txt"}}')
        tid = dc.client().topology_id(NAME)
        wait_until(lambda: len(dc.client().request("GET", f"/topology/{tid}")["workers"]) == 2, 120,
                   interval=0.2, what="both workers to run")
        yield Ops(dc, tid, health, root)
    finally:
        dc.stop()


def failed(proc: Any, code: int = 1) -> str:
    """The one-line error of a command that must fail with ``code``."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return str(lines[0])


def test_conf_values_local_and_remote(ops) -> None:
    dc = ops.dc
    assert dc.cli("localconfvalue", "topology.workers", "-c", "topology.workers=7").stdout == "topology.workers: 7\n"
    port = dc.client_conf()["nimbus.thrift.port"]
    assert dc.cli("remoteconfvalue", "nimbus.thrift.port").stdout == f"nimbus.thrift.port: {port}\n"
    assert "no.such.key" in failed(dc.cli("localconfvalue", "no.such.key", check=False), 2)
    assert "nimbus.auth.token" in failed(dc.cli("remoteconfvalue", "nimbus.auth.token", check=False))
    assert "KEY" in failed(dc.cli("localconfvalue", check=False), 2)


def test_get_errors_prints_json_and_names_an_unknown_topology(ops) -> None:
    out = json.loads(ops.dc.cli("get-errors", NAME).stdout)
    assert out == {"Topology Name": NAME, "Comp-Errors": {}}
    assert "nope" in failed(ops.dc.cli("get-errors", "nope", check=False))


def test_heartbeats_list_and_get(ops) -> None:
    dc = ops.dc
    assert ops.tid in dc.cli("heartbeats", "list").stdout.split()
    workers = dc.cli("heartbeats", "list", f"/workerbeats/{ops.tid}").stdout.split()
    assert len(workers) == 2
    beat = json.loads(dc.cli("heartbeats", "get", f"/workerbeats/{ops.tid}/{workers[0]}").stdout)
    assert beat["topology_id"] == ops.tid and beat["executors"]
    assert "/workerbeats/nope" in failed(dc.cli("heartbeats", "get", "/workerbeats/nope", check=False))
    assert "'..'" in failed(dc.cli("heartbeats", "list", "/../x", check=False), 2)


def test_blobstore_commands_and_their_bad_input(ops, wheels) -> None:
    dc, root = ops.dc, ops.root
    assert "ghost" in failed(dc.cli("submit", str(wheels["wordcount"]), "examples.word_count:build", "--name",
                                    "mapless", "-c", 'topology.blobstore.map={"ghost": {}}', check=False))
    assert dc.cli("blobstore", "list").stdout == "words:cfg 1 12 (u:alice:rwa,o::r)\n"
    assert dc.cli("blobstore", "cat", "words:cfg").stdout == "version one\n"
    (root / "other.bin").write_bytes(b"\x00\x01")
    dc.cli("blobstore", "create", "other", "-f", str(root / "other.bin"))
    dc.cli("blobstore", "cat", "other", "-f", str(root / "copy.bin"))
    assert (root / "copy.bin").read_bytes() == b"\x00\x01"
    assert dc.cli("blobstore", "set-acl", "other", "-s", "o::r").stdout == "Set the ACL of other to o::r\n"
    assert dc.cli("blobstore", "list", "other").stdout == "other 2 2 (o::r)\n"
    assert "exists already" in failed(dc.cli("blobstore", "create", "other", "-f", str(root / "other.bin"),
                                             check=False))
    dc.cli("blobstore", "delete", "other")
    assert "'other'" in failed(dc.cli("blobstore", "cat", "other", check=False))
    assert "'other'" in failed(dc.cli("blobstore", "delete", "other", check=False))
    assert "-a / --acl" in failed(dc.cli("blobstore", "create", "x", "-a", "z:bob:r", check=False), 2)
    assert "KEY" in failed(dc.cli("blobstore", "update", "a/b", "-f", str(root / "other.bin"), check=False), 2)
    assert "missing.bin" in failed(dc.cli("blobstore", "update", "words:cfg", "-f", str(root / "missing.bin"),
                                          check=False), 2)
    assert "nimbus.auth.token" in failed(dc.cli("blobstore", "list", "-c", "nimbus.auth.token=null", check=False))


def test_an_updated_blob_reaches_the_running_workers(ops) -> None:
    dc, root = ops.dc, ops.root

    def contents() -> set[str]:
        found = set()
        for row in ops.slots():
            path = dc.artifacts(ops.tid) / str(row["port"]) / "cfg.txt"
            found.add(path.read_text(encoding="utf-8") if path.is_file() else "")
        return found

    wait_until(lambda: contents() == {"version one\n"}, 60, interval=0.2, what="the blob in the workers' dirs")
    pids = {row["port"]: dc.worker_pid(ops.tid, row["port"]) for row in ops.slots()}
    (root / "cfg-v2.txt").write_text("version two\n", encoding="utf-8")
    assert "version 2" in dc.cli("blobstore", "update", "words:cfg", "-f", str(root / "cfg-v2.txt")).stdout
    wait_until(lambda: contents() == {"version two\n"}, 60, interval=0.2, what="the update in the workers' dirs")
    assert all(alive(pid) for pid in pids.values())  # the same workers, still running


def test_log_search_finds_a_line_in_a_worker_log_and_wants_the_token(ops) -> None:
    page = ops.dc.client().request("GET", f"/topology/{ops.tid}")
    base = next(w["logviewerUrl"] for w in page["workers"] if w.get("logviewerUrl"))
    viewer = LogViewerClient(base, conf={"nimbus.auth.token": TOKEN})
    needle = f"of {ops.tid} running executors"

    def hits() -> list[dict[str, Any]]:
        return list(viewer.deep_search(ops.tid, needle, num_matches=1)["matches"])

    wait_until(lambda: bool(hits()), 60, interval=0.5, what="the worker log to hold the line")
    hit = hits()[0]
    assert hit["matches"][0]["matchString"] == needle
    one = viewer.search(hit["fileName"], needle)
    assert one["matches"][0]["byteOffset"] == hit["matches"][0]["byteOffset"]
    assert needle.encode() in viewer.download(hit["fileName"])
    for path in (f"/api/v1/deepSearch/{ops.tid}?search-string=x", f"/api/v1/search?file={hit['fileName']}&search-"
                 "string=x", f"/api/v1/download?file={hit['fileName']}", "/api/v1/daemonlogs"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + path, timeout=10)
        assert refused.value.code == 401
    for method, path in (("GET", "/api/v1/blobs"), ("GET", "/api/v1/blobs/words:cfg"),
                         ("POST", "/api/v1/blobs/intruder"), ("PUT", "/api/v1/blobs/words:cfg"),
                         ("DELETE", "/api/v1/blobs/words:cfg"), ("POST", "/api/v1/blobs/words:cfg/acl"),
                         ("POST", "/api/v1/admin/removeCorruptTopologies")):
        # a body of the type the route takes, so only the missing token is wrong
        octets = method in ("POST", "PUT") and path.startswith("/api/v1/blobs/") and not path.endswith("/acl")
        req = urllib.request.Request(ops.dc.nimbus_url() + path, data=b"x" if method != "GET" else None,
                                     method=method, headers={
                                         "Content-Type": "application/octet-stream" if octets else "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(req, timeout=10)
        assert refused.value.code == 401, (method, path)


def test_rebalance_t_overrides_the_topology_conf_and_r_needs_the_resource_aware_scheduler(ops) -> None:
    dc = ops.dc
    dc.cli("rebalance", NAME, "-w", "0", "-t", '{"topology.message.timeout.secs": 45}')

    def applied() -> bool:
        page = dc.client().request("GET", f"/topology/{ops.tid}")
        return bool(page["msgTimeout"] == 45 and page["status"] == "ACTIVE")

    wait_until(applied, 60, interval=0.2, what="the new message timeout")
    assert "-t / --topology-conf" in failed(dc.cli("rebalance", NAME, "-t", "{nope", check=False), 2)
    assert "topology.workers" in failed(dc.cli("rebalance", NAME, "-t", '{"topology.workers": 3}', check=False))
    assert "topology.message.timeout.secs" in failed(
        dc.cli("rebalance", NAME, "-t", '{"topology.message.timeout.secs": "soon"}', check=False))
    assert "-r / --resources" in failed(dc.cli("rebalance", NAME, "-r", '{"split": 50', check=False), 2)
    assert "storm.scheduler: resource_aware" in failed(
        dc.cli("rebalance", NAME, "-r", '{"split": {"onheap.memory.mb": 512}}', check=False))


SUBMITTER = """import json, os, sys, urllib.request
name, host, port, key = sys.argv[1:]
body = {"name": name, "entry": "examples.word_count:build", "packageBlob": key, "conf": {"topology.workers": 1}}
headers = {"Authorization": f"Bearer {os.environ['STORM_PY_AUTH_TOKEN']}", "Content-Type": "application/json"}
req = urllib.request.Request(f"http://{host}:{port}/api/v1/uploadTopology", data=json.dumps(body).encode(),
                             method="POST", headers=headers)
print(json.load(urllib.request.urlopen(req, timeout=200))["id"])
"""


def test_shell_uploads_the_folder_and_runs_the_command_that_submits_it(ops) -> None:
    dc, root = ops.dc, ops.root
    project = word_count_project(root / "shell-src")
    (root / "submitter.py").write_text(SUBMITTER, encoding="utf-8")
    out = dc.cli("shell", str(project), sys.executable, str(root / "submitter.py"), "from-shell").stdout
    assert out.strip() == dc.client().topology_id("from-shell")
    assert "shell-" not in dc.cli("blobstore", "list").stdout  # the uploaded package is gone
    dc.cli("kill", "from-shell", "-w", "0")
    assert "RESOURCESDIR" in failed(dc.cli("shell", str(root / "missing"), "true", check=False), 2)
    assert dc.cli("shell", str(project), "false", check=False).returncode == 1  # the command's exit code


def test_admin_removes_topologies_whose_code_is_gone(ops, wheels) -> None:
    from storm_py.cluster_state.cluster_state import ClusterState
    from storm_py.nimbus.blobstore import jar_key
    from storm_py.node.session import open_storage

    dc = ops.dc
    dc.cli("submit", str(wheels["wordcount"]), "examples.word_count:build", "--name", "victim", "--inactive",
           "-c", "topology.workers=1")
    tid = dc.client().topology_id("victim")
    state = ClusterState(open_storage(dc.client_conf()), dc.client_conf())
    try:
        state.remove_blob(jar_key(tid))
    finally:
        state.close()
    out = dc.cli("admin", "remove_corrupt_topologies").stdout
    assert out == f"Removed corrupt topology victim ({tid}): missing {jar_key(tid)}\n"
    wait_until(lambda: "victim" not in {r["name"] for r in dc.client().topology_summaries()}, 60, interval=0.2,
               what="the corrupt topology to go")
    assert dc.cli("admin", "remove_corrupt_topologies").stdout == "No corrupt topologies.\n"
    assert NAME in {r["name"] for r in dc.client().topology_summaries()}
    assert "nope" in failed(dc.cli("admin", "nope", check=False), 2)


def test_a_failing_health_check_takes_the_supervisor_out_of_scheduling(ops) -> None:
    dc = ops.dc
    sick = ops.supervisor_id(1)
    assert dc.cli("node-health-check", "-c", f"storm.health.check.dir={ops.health}").stdout.startswith(
        "Health check passed (1 script(s)")

    def slots_of(sid: str) -> int:
        return next(int(r["slotsTotal"]) for r in dc.client().supervisor_summary() if r["id"] == sid)

    (ops.health / "fail").touch()
    try:
        wait_until(lambda: slots_of(sick) == 0, 30, interval=0.2, what="the failing supervisor to offer no slots")
        wait_until(lambda: len(ops.slots()) == 2 and all(r["supervisorId"] != sick for r in ops.slots()), 60,
                   interval=0.2, what="the workers to leave the failing supervisor")
    finally:
        (ops.health / "fail").unlink()
    wait_until(lambda: slots_of(sick) == 4, 30, interval=0.2, what="the healed supervisor's slots to return")
    bad = ops.root / "bad-health"
    bad.mkdir()
    (bad / "exit.sh").write_text("#!/bin/sh\nexit 3\n", encoding="utf-8")
    (bad / "exit.sh").chmod(0o755)
    assert failed(dc.cli("node-health-check", "-c", f"storm.health.check.dir={bad}", check=False)) == \
        "Health check failed: exit.sh exited with 3"


def test_kill_workers_stops_this_machines_workers_and_they_come_back(ops) -> None:
    dc = ops.dc
    assert "nope" in failed(dc.cli("kill_workers", "nope", check=False), 2)
    before = {dc.worker_pid(ops.tid, r["port"]) for r in ops.slots()}
    out = dc.cli("kill_workers").stdout
    assert out.count("Stopping worker") == 2
    wait_until(lambda: not any(alive(pid) for pid in before), 30, interval=0.2, what="the workers to stop")

    def restarted() -> bool:
        rows = ops.slots()
        try:
            pids = {dc.worker_pid(ops.tid, r["port"]) for r in rows}
        except (OSError, ValueError):
            return False
        return len(rows) == 2 and not pids & before and all(alive(p) for p in pids)

    wait_until(restarted, 90, interval=0.5, what="the supervisors to start the workers anew")
