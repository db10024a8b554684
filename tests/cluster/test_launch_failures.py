"""A worker its supervisor cannot start is not a silent gap: the supervisor keeps retrying (it does not crash), and
the topology page (REST and UI) names the supervisor and the error, on a `storm-py dev-cluster`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import wait_until
from tests.cluster.conftest import dev_cluster  # noqa: F401  (a fixture)
from tests.cluster.harness import build_wheel, word_count_project

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


def test_a_supervisor_that_cannot_unpack_the_code_reports_why_on_the_topology_page_and_keeps_running(
        dev_cluster: Any, tmp_path: Path) -> None:  # noqa: F811
    wheel = build_wheel(word_count_project(tmp_path), tmp_path / "wheels")
    # this supervisor refuses any package of more than one member: its downloads all fail, as a supervisor that
    # cannot reach nimbus or gets a corrupted package does
    cluster = dev_cluster(supervisors=1, supervisor_confs=("1:storm.package.max.members=1",))
    cluster.cli("submit", str(wheel), "examples.word_count:build", "--name", "wc",
                "-c", "topology.acker.executors=0")
    client = cluster.client()

    def failures() -> list[dict[str, str]]:
        return list(client.topology("wc").get("launchFailures", []))

    wait_until(lambda: bool(failures()), 120, interval=0.25, what="the launch failure on the topology page")
    (failure,) = failures()
    assert failure["host"] == "127.0.0.1"
    assert "members" in failure["error"], failure
    assert cluster.proc is not None and cluster.proc.poll() is None, "the supervisor keeps running"
    cluster.cli("kill", "wc", "-w", "0")
