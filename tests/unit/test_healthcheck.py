"""The node health check: which script outcomes fail a node, and what a failing node offers nimbus."""

from __future__ import annotations

from pathlib import Path

import pytest

from storm_py.clock import Clock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.supervisor.core import Supervisor
from storm_py.supervisor.healthcheck import judge, run_health_checks


@pytest.mark.parametrize(
    ("code", "output", "fail_on_timeout", "failed"),
    [
        (0, "all good\n", True, False),
        (0, "fine\nERROR disk full\n", True, True),
        (0, "  ERROR indented is not a verdict\n", True, False),
        (3, "", True, True),
        (None, "", True, True),
        (None, "", False, False),
    ],
)
def test_judge(code, output, fail_on_timeout, failed) -> None:
    assert (judge("check.sh", code, output, fail_on_timeout) is not None) is failed


def _script(root: Path, name: str, body: str, executable: bool = True) -> None:
    path = root / name
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(0o755 if executable else 0o644)


def test_runs_every_executable_script_and_names_the_failing_ones(tmp_path: Path) -> None:
    _script(tmp_path, "a-ok.sh", "echo fine")
    _script(tmp_path, "b-bad.sh", "echo 'ERROR disk full'")
    _script(tmp_path, "c-exit.sh", "exit 4")
    _script(tmp_path, "d-not-run.sh", "exit 9", executable=False)
    report = run_health_checks({"storm.health.check.dir": str(tmp_path)})
    assert report.scripts == ["a-ok.sh", "b-bad.sh", "c-exit.sh"]
    assert report.failures == ["b-bad.sh: ERROR disk full", "c-exit.sh exited with 4"]
    assert not report.healthy


def test_a_slow_script_fails_only_when_timeouts_count(tmp_path: Path) -> None:
    _script(tmp_path, "slow.sh", "sleep 5")
    conf = {"storm.health.check.dir": str(tmp_path), "storm.health.check.timeout.ms": 200}
    assert run_health_checks(conf).failures == ["slow.sh timed out"]
    assert run_health_checks({**conf, "storm.health.check.fail.on.timeouts": False}).healthy


def test_no_directory_is_healthy(tmp_path: Path) -> None:
    assert run_health_checks({"storm.health.check.dir": str(tmp_path / "missing")}).healthy


def test_a_failing_node_offers_no_slots_until_it_passes_again() -> None:
    state = ClusterState(MemoryStorage(MemoryStore()))
    sup = Supervisor({}, state, launcher=None, clock=Clock(), supervisor_id="s1", ports=[6700, 6701])  # type: ignore[arg-type]
    sup.heartbeat()
    assert state.supervisor_info("s1").ports == [6700, 6701]
    sup.health_failures = ["disk.sh: ERROR disk full"]
    sup.heartbeat()
    info = state.supervisor_info("s1")
    assert info.ports == [] and info.scheduler_meta == {"health": "disk.sh: ERROR disk full"}
    sup.health_failures = []
    sup.heartbeat()
    assert state.supervisor_info("s1").ports == [6700, 6701]
