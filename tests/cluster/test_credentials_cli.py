"""Topology credentials through the real CLI on a dev cluster: ``storm-py upload-credentials`` reaches every task of
a running bolt across two workers through its ``set_credentials``, an upload replaces the last one, ``storm-py
admin creds`` lists the keys and never the values, and bad input gets a clear error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import wait_until
from tests.cluster.harness import DevClusterProcess, build_wheel
from tests.security.endpoints import call

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(300)]

APP = Path(__file__).parent / "apps" / "credcheck"
TOKEN = "cr3dentials-token"
NAME = "holders"


class Cluster:
    def __init__(self, dc: DevClusterProcess, tid: str, out: Path, root: Path) -> None:
        self.dc, self.tid, self.out, self.root = dc, tid, out, root

    def seen(self) -> dict[str, dict[str, str]]:
        """What each bolt task was last handed, by task file name."""
        found: dict[str, dict[str, str]] = {}
        for path in self.out.glob("*.json"):
            found[path.stem] = json.loads(path.read_text(encoding="utf-8"))
        return found


@pytest.fixture(scope="module")
def cluster(zookeeper: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("credentials")
    out = root / "seen"
    out.mkdir()
    wheel = build_wheel(APP, root / "wheels")
    dc = DevClusterProcess(root / "cluster", zookeeper=zookeeper.connect_string,
                           conf={"storm.zookeeper.root": f"/tests/credentials-{root.name}/storm",
                                 "nimbus.auth.token": TOKEN})  # fmt: skip
    try:
        dc.start()
        dc.cli("submit", str(wheel), "credcheck.topology:build", "--name", NAME, "-c", "topology.workers=2",
               "-c", f"credcheck.dir={out}", "-c", "task.credentials.poll.secs=0.3")  # fmt: skip
        tid = dc.client().topology_id(NAME)
        wait_until(lambda: len(dc.client().request("GET", f"/topology/{tid}")["workers"]) == 2, 120,
                   interval=0.2, what="both workers to run")  # fmt: skip
        yield Cluster(dc, tid, out, root)
    finally:
        dc.stop()


def failed(proc: Any, code: int = 1) -> str:
    """The error output of a command that must fail with ``code``."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return str(proc.stderr)


def test_uploaded_credentials_reach_every_task_of_a_running_bolt(cluster: Cluster) -> None:
    dc = cluster.dc
    assert dc.cli("admin", "creds", NAME).stdout == f"{cluster.tid}:\n"  # Storm's shape: the id, then its keys
    assert cluster.seen() == {}  # nothing handed while there are none

    props = cluster.root / "creds.properties"
    props.write_text("# the service login\nuser=alice\npassword = pa55:word\n", encoding="utf-8")
    uploaded = dc.cli("upload-credentials", NAME, "-f", str(props), "user", "bob")  # the pairs win
    assert uploaded.stdout == f"Uploaded new creds to topology: {NAME} (2 keys)\n"
    wanted = {"password": "pa55:word", "user": "bob"}
    wait_until(lambda: list(cluster.seen().values()) == [wanted, wanted], 60, interval=0.2,
               what="both bolt tasks, one per worker, to be handed the credentials")  # fmt: skip

    listed = dc.cli("admin", "creds", NAME, cluster.tid)  # by name or id, several at once
    assert listed.stdout == f"{cluster.tid}:\n\tpassword\n\tuser\n" * 2
    assert "pa55" not in listed.stdout + listed.stderr and "bob" not in listed.stdout + listed.stderr

    dc.cli("upload-credentials", NAME, "token", "t-2")  # replaces the whole map, as Storm
    wait_until(lambda: list(cluster.seen().values()) == [{"token": "t-2"}] * 2, 60, interval=0.2,
               what="the second upload to replace the first in both tasks")  # fmt: skip
    assert dc.cli("admin", "creds", NAME).stdout == f"{cluster.tid}:\n\ttoken\n"


def test_bad_uploads_get_clear_errors_and_change_nothing(cluster: Cluster) -> None:
    dc = cluster.dc
    before = dc.cli("admin", "creds", NAME).stdout
    assert "'nope' is not alive" in failed(dc.cli("upload-credentials", "nope", "k", "v", check=False))
    assert "'nope' is not alive" in failed(dc.cli("admin", "creds", "nope", check=False))
    odd = failed(dc.cli("upload-credentials", NAME, "k1", "v1", "k2", check=False), 2)
    assert "'k2' has no value" in odd
    missing = failed(dc.cli("upload-credentials", NAME, "-f", str(cluster.root / "absent"), check=False), 2)
    assert "absent" in missing
    big = cluster.root / "big.properties"
    big.write_text("blob=" + "x" * 70_000 + "\n", encoding="utf-8")
    assert "over nimbus.credentials.max.bytes (65536)" in failed(
        dc.cli("upload-credentials", NAME, "-f", str(big), check=False))
    wrong = failed(dc.cli("upload-credentials", NAME, "k", "v", "-c", "nimbus.auth.token=wrong", check=False))
    assert "token" in wrong
    assert dc.cli("admin", "creds", NAME).stdout == before

    # over HTTP: no token and a wrong one are refused before the body is read; malformed bodies get 400
    host, port = dc.client_conf()["nimbus.seeds"][0].rsplit(":", 1)
    path = f"/api/v1/topology/{NAME}/credentials"
    body = json.dumps({"credentials": {"k": "v"}}).encode()
    json_type = {"Content-Type": "application/json"}
    for auth in ({}, {"Authorization": "Bearer wrong"}):
        assert call(int(port), "POST", path, {**json_type, **auth}, body, address=host)[0] == 401
        assert call(int(port), "GET", path, auth, address=host)[0] == 401
    good = {**json_type, "Authorization": f"Bearer {TOKEN}"}
    for bad in (b'{"credentials": {"k": 1}}', b'{"credentials": ["k"]}', b"[]", b"{not json"):
        status, _, reply = call(int(port), "POST", path, good, bad, address=host)
        assert status == 400, (bad, reply)
    assert dc.cli("admin", "creds", NAME).stdout == before
