"""The topology page in headless Chromium shows the topology's own Python environment: ready for a topology whose
wheelhouse was built into a virtualenv, failed with the failure's text for one whose wheelhouse cannot be
installed, and no environment section for a topology without a wheelhouse."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path
from urllib.parse import quote

import pytest

from storm_py.clock import wait_until
from storm_py.deps.wheelhouse import WHEELHOUSE
from tests.cluster.harness import storm_py_command
from tests.cluster.wheelmaker import ONE_INTO_PROBE, ONE_NUMBER_SPOUT, make_wheel
from tests.ui.conftest import Browser, MetricsCluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(400)]

APP = '''"""A spout of one number into a bolt that needs tinydep."""
from storm_py import BasicBolt, Spout, TopologyBuilder


''' + ONE_NUMBER_SPOUT + '''

class Probe(BasicBolt):
    def execute(self, tup, collector):
        import tinydep

        assert tinydep.X == 100

    def declare_output_fields(self, declarer):
        pass


''' + ONE_INTO_PROBE


def submit(mc: MetricsCluster, *args: str) -> None:
    proc = subprocess.run([*storm_py_command(), "submit", *args, "--config", str(mc.cluster.config)],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PIP_NO_INDEX": "1"})
    assert proc.returncode == 0, proc.stderr


def environment_rows(browser: Browser) -> list[tuple[str, str]]:
    """(state, detail) of each row of the page's environment table."""
    rows = browser.driver.execute_script(
        """
        const t = document.querySelector("#environment table");
        if (!t || document.getElementById("environment-section").hidden) return [];
        return Array.from(t.tBodies[0].rows).filter(tr => tr.cells.length === 3)
          .map(tr => [tr.cells[1].innerText, tr.cells[2].innerText]);
        """)
    return [(str(state), str(detail)) for state, detail in rows or []]


def test_topology_page_shows_its_environment_ready_or_failed_with_the_reason(
    metrics_cluster: MetricsCluster, browser: Browser, tmp_path: Path
) -> None:
    app = make_wheel(tmp_path / "dist", "envapp", "0.1", {"envapp.py": APP}, requires=("tinydep>=1",))
    wheelhouse = tmp_path / "wheelhouse"
    make_wheel(wheelhouse, "tinydep", "1.0", {"tinydep.py": "X = 100\n"})
    # a wheelhouse nimbus accepts but no supervisor here can install: a wheel for another platform
    broken = make_wheel(tmp_path / "dist", "brokenenv", "0.1", {"brokenenv.py": APP})
    foreign = make_wheel(tmp_path / "foreign", "garbage", "1.0", {"garbage.py": ""}, tag="cp311-cp311-win_amd64")
    with zipfile.ZipFile(broken, "a") as zf:
        zf.write(foreign, f"{WHEELHOUSE}/{foreign.name}")
    submit(metrics_cluster, str(app), "envapp:build", "--name", "env-ok", "--wheelhouse", str(wheelhouse))
    submit(metrics_cluster, str(broken), "brokenenv:build", "--name", "env-broken")
    client = metrics_cluster.client()
    try:
        seen: list[str] = []

        def built() -> bool:
            states = client.topology("env-ok").get("environmentStates") or []
            seen.extend(s["state"] for s in states)
            return bool(states) and all(s["state"] == "ready" for s in states)

        wait_until(built, 240, interval=0.25, what="env-ok's environment to be ready in its page's data")
        assert set(seen) <= {"building", "ready"}, seen

        metrics_cluster.open(browser, f"/topology.html?id={quote(client.topology_id('env-ok'))}&refresh=1")
        wait_until(lambda: [s for s, _ in environment_rows(browser)] == ["ready"], 30, interval=0.2,
                   what="the ready environment on env-ok's page")
        (row,) = environment_rows(browser)
        assert row[1].startswith("environment ")
        browser.shot("ready")

        metrics_cluster.open(browser, f"/topology.html?id={quote(client.topology_id('env-broken'))}&refresh=1")
        wait_until(lambda: any(s == "failed" for s, _ in environment_rows(browser)), 120, interval=0.3,
                   what="the failed environment on env-broken's page")
        failed = [detail for state, detail in environment_rows(browser) if state == "failed"]
        assert "environment cannot be built" in failed[0] and "garbage" in failed[0], failed
        browser.shot("failed")

        metrics_cluster.open(browser, f"/topology.html?id={quote(client.topology_id('judged'))}&refresh=1")
        wait_until(lambda: browser.text("#title") == "Topology judged", 30, interval=0.2, what="judged's page")
        assert environment_rows(browser) == []
        assert browser.driver.execute_script("return document.getElementById('environment-section').hidden")
        assert browser.script_errors() == []
    finally:
        for name in ("env-ok", "env-broken"):
            metrics_cluster.cluster.cli("kill", name, "-w", "0", check=False)
