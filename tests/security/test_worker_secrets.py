"""A worker runs without the cluster's ZooKeeper payload: not in its config file, environment or command line;
it holds only its topology's identity, and processes its topology with it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from storm_py.clock import wait_until
from storm_py.cluster_state.acl import WORKER_AUTH_ENV
from tests.cluster.harness import DevClusterProcess, build_wheel

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(300)]

APP = Path(__file__).parent / "apps" / "hostileapps"


def test_a_worker_holds_its_topology_identity_not_the_cluster_secret(tmp_path: Path) -> None:
    wheel = build_wheel(APP, tmp_path / "wheel")
    marker = tmp_path / "never-hang"
    marker.touch()  # the HangOnce bolt only hangs while its marker is missing
    cluster = DevClusterProcess(tmp_path / "cluster", supervisors=1)
    cluster.start()
    try:
        secret = str(cluster.client_conf()["storm.zookeeper.auth.payload"])
        cluster.cli("submit", str(wheel), "hostileapps.topology:stuck", "--name", "calm",
                    "-c", f"hostile.marker={marker}", "-c", "hostile.count=50")  # fmt: skip
        client = cluster.client()
        wait_until(lambda: int(client.topology("calm")["spouts"][0]["acked"] or 0) == 50, 120, interval=0.5,
                   what="50 tuples acked by a worker with the topology's identity")  # fmt: skip
        tid = client.topology_id("calm")
        port = int(next(p.name for p in cluster.artifacts(tid).iterdir() if p.name.isdigit()))
        pid = cluster.worker_pid(tid, port)
        environ = Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
        conf_path = Path(cmdline.split("\0")[cmdline.split("\0").index("--config") + 1])
        worker_conf = yaml.safe_load(conf_path.read_text(encoding="utf-8"))
        assert secret not in environ and secret not in cmdline and secret not in conf_path.read_text("utf-8")
        assert "storm.zookeeper.auth.payload" not in worker_conf
        assert f"{WORKER_AUTH_ENV}=" in environ and f"topology-{tid}:" in environ
    finally:
        cluster.stop()
