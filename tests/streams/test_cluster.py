"""Acceptance: the Stream API word count packaged as a wheel, submitted with `storm-py submit` to a
`storm-py dev-cluster` (four workers on two supervisors): exact counts."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from examples.word_count import SENTENCES
from storm_py.clock import wait_until
from tests.cluster.conftest import dev_cluster  # noqa: F401  (the fixture)
from tests.cluster.harness import REPO, build_wheel

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(300)]

LATEST = re.compile(r"^latest counts \(task (\d+)\): (.*)$")


def streams_project(root: Path) -> Path:
    """A project packaging examples/streams_word_count.py (and the word count it takes its spout from)."""
    project = root / "streamswc"
    (project / "examples").mkdir(parents=True)
    for name in ("streams_word_count.py", "word_count.py"):
        shutil.copy(REPO / "examples" / name, project / "examples" / name)
    (project / "examples" / "__init__.py").write_text('"""storm_py examples."""\n', encoding="utf-8")
    (project / "pyproject.toml").write_text(
        "[build-system]\nrequires = [\"setuptools>=64\", \"wheel\"]\nbuild-backend = \"setuptools.build_meta\"\n\n"
        "[project]\nname = \"streamswc\"\nversion = \"0.1.0\"\n\n[tool.setuptools]\npackages = [\"examples\"]\n",
        encoding="utf-8",
    )
    return project


def latest_counts(artifacts: Path) -> dict[str, int]:
    """The highest count of each word the sink tasks printed on cleanup, over every worker's stdout."""
    counts: dict[str, int] = {}
    for out in artifacts.glob("*/worker.log.out"):
        for line in out.read_text(encoding="utf-8").splitlines():
            m = LATEST.match(line)
            if m:
                for pair in m.group(2).split(", "):
                    word, _, n = pair.rpartition("=")
                    counts[word] = max(counts.get(word, 0), int(n))
    return counts


def test_stream_api_word_count_on_a_dev_cluster_gives_exact_counts(dev_cluster, tmp_path) -> None:  # noqa: F811
    wheel = build_wheel(streams_project(tmp_path / "src"), tmp_path / "wheels")
    cluster = dev_cluster(supervisors=2)
    sentences = 2000
    submitted = cluster.cli(
        "submit", str(wheel), "examples.streams_word_count:build", "--name", "streamswc",
        "-c", "topology.workers=4", "-c", f"wordcount.sentences={sentences}",
    )
    assert "Finished submitting topology: streamswc" in submitted.stdout
    client = cluster.client()

    def spout_acked() -> int:
        return int(client.topology("streamswc")["spouts"][0]["acked"])

    wait_until(lambda: spout_acked() == sentences, 150, interval=0.25, what=f"{sentences} sentences acked")
    page = client.topology("streamswc")
    assert page["workersTotal"] == 4
    assert page["spouts"][0]["failed"] == 0
    assert sorted(b["boltId"] for b in page["bolts"] if not b["boltId"].startswith("__")) == ["bolt1", "bolt2", "bolt3"]
    tid = page["id"]
    assert "Killed topology: streamswc" in cluster.cli("kill", "streamswc", "-w", "1").stdout
    wait_until(lambda: "No topologies running." in cluster.cli("list").stdout, 60, interval=0.25,
               what="the topology to be gone")
    expected = dict(Counter(w for i in range(sentences) for w in SENTENCES[i % len(SENTENCES)].split()))
    wait_until(lambda: latest_counts(cluster.artifacts(tid)) == expected, 60, interval=0.25,
               what="the sink bolts' latest counts")
