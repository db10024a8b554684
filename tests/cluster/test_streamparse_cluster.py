"""Acceptance: a streamparse project (streamparse's quickstart with a finite reliable spout and a sink) submitted
with ``storm-py streamparse submit`` to a dev cluster gives exact counts, every spout tuple acked."""

from __future__ import annotations

from pathlib import Path

import pytest

from storm_py.clock import wait_until
from tests.streamparse.projects import EXPECTED, SENT, exact_project, quickstart, read_counts

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(300)]
pytest.importorskip("streamparse")


def test_a_streamparse_project_on_a_dev_cluster_is_exact(dev_cluster, tmp_path: Path) -> None:
    sink = tmp_path / "counts.json"
    (tmp_path / "qs").mkdir()
    root = exact_project(quickstart(tmp_path / "qs"), tmp_path, sink, serializer="msgpack")
    cluster = dev_cluster(supervisors=2)
    submitted = cluster.cli("streamparse", "submit", "exact", "--project", str(root), "-n", "sparse-exact",
                            "--workers", "2", "-o", "topology.message.timeout.secs=60")
    assert "Finished submitting topology: sparse-exact" in submitted.stdout
    client = cluster.client()

    def spout() -> dict:
        return client.topology("sparse-exact")["spouts"][0]

    wait_until(lambda: int(spout()["acked"]) == SENT, 180, interval=0.5, what=f"{SENT} spout tuples acked")
    assert int(spout()["failed"]) == 0
    wait_until(lambda: read_counts(sink) == EXPECTED, 30, interval=0.25, what="the exact counts")
    assert "Killed topology: sparse-exact" in cluster.cli("kill", "sparse-exact", "-w", "1").stdout
