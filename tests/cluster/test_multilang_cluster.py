"""Acceptance: pystorm components behind ShellSpout and ShellBolt (scripts in the wheel's resources/ folder), both
serializers, submitted to a dev cluster: exact word counts, every spout tuple acked."""

from __future__ import annotations

import runpy
import shutil
from collections import Counter
from pathlib import Path

import pytest

from storm_py.clock import wait_until
from tests.cluster.harness import APPS, build_wheel
from tests.cluster.test_word_count import final_counts

RESOURCES = Path(__file__).resolve().parent.parent / "multilang" / "resources"
SCRIPTS = ("sentence_spout.py", "split_bolt.py", "count_bolt.py", "sentences.py")
SENTENCES = runpy.run_path(str(RESOURCES / "sentences.py"))["SENTENCES"]

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(300)]
pytest.importorskip("pystorm")


def mlwc_project(root: Path) -> Path:
    """The mlwc app with the multilang tests' pystorm scripts in its package's resources/ folder."""
    project = root / "mlwc"
    shutil.copytree(APPS / "mlwc", project, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    (project / "mlwc" / "resources").mkdir()
    for script in SCRIPTS:
        shutil.copy(RESOURCES / script, project / "mlwc" / "resources" / script)
    return project


def test_multilang_word_count_on_a_dev_cluster_is_exact(dev_cluster, tmp_path: Path) -> None:
    wheel = build_wheel(mlwc_project(tmp_path / "app"), tmp_path)
    cluster = dev_cluster(supervisors=2)
    sentences = 400
    submitted = cluster.cli(
        "submit", str(wheel), "mlwc.topology:build", "--name", "mlwc",
        "-c", "topology.workers=3", "-c", f"mlwc.sentences={sentences}",
    )
    assert "Finished submitting topology: mlwc" in submitted.stdout
    client = cluster.client()

    def spout() -> dict:
        return client.topology("mlwc")["spouts"][0]

    wait_until(lambda: int(spout()["acked"]) == sentences, 180, interval=0.5, what=f"{sentences} sentences acked")
    assert int(spout()["failed"]) == 0
    tid = client.topology("mlwc")["id"]
    assert "Killed topology: mlwc" in cluster.cli("kill", "mlwc", "-w", "1").stdout
    wait_until(lambda: "No topologies running." in cluster.cli("list").stdout, 60, interval=0.25,
               what="the topology to be gone")
    artifacts = cluster.artifacts(tid)
    expected = Counter(w for i in range(sentences) for w in SENTENCES[i % len(SENTENCES)].split())
    wait_until(lambda: final_counts(artifacts) == expected, 30, interval=0.25, what="the final counts")
