"""Acceptance: word count packaged as a wheel, submitted with `storm-py submit` to a `storm-py dev-cluster`."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from examples.word_count import SENTENCES
from storm_py.clock import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(300)]

FINAL = re.compile(r"^final counts \(task (\d+)\): (.*)$")


def final_counts(artifacts: Path) -> Counter[str]:
    """The counts the count bolts printed on cleanup, merged over every worker's stdout."""
    counts: Counter[str] = Counter()
    for out in artifacts.glob("*/worker.log.out"):
        for line in out.read_text(encoding="utf-8").splitlines():
            m = FINAL.match(line)
            if m:
                for pair in m.group(2).split(", "):
                    word, _, n = pair.rpartition("=")
                    counts[word] += int(n)
    return counts


def test_word_count_wheel_on_a_dev_cluster_gives_exact_counts(dev_cluster, wheels) -> None:
    cluster = dev_cluster(supervisors=2)  # starts its own ZooKeeper, nimbus and two supervisors
    sentences = 3000
    submitted = cluster.cli(
        "submit", str(wheels["wordcount"]), "examples.word_count:build", "--name", "wordcount",
        "-c", "topology.workers=4", "-c", f"wordcount.sentences={sentences}",
    )
    assert "Finished submitting topology: wordcount" in submitted.stdout

    listing = cluster.cli("list").stdout.splitlines()
    assert listing[0].split() == ["Topology_name", "Status", "Num_tasks", "Num_workers", "Uptime_secs"]
    row = next(line.split() for line in listing if line.startswith("wordcount"))
    assert row[1] == "ACTIVE" and row[3] == "4"

    client = cluster.client()

    def spout_acked() -> int:
        return int(client.topology("wordcount")["spouts"][0]["acked"])

    wait_until(lambda: spout_acked() == sentences, 120, interval=0.25, what=f"{sentences} sentences acked")
    page = client.topology("wordcount")
    assert page["workersTotal"] == 4
    assert len({w["supervisorId"] for w in page["workers"]}) == 2  # spread over both supervisors
    assert page["spouts"][0]["failed"] == 0
    tid = page["id"]

    assert "Killed topology: wordcount" in cluster.cli("kill", "wordcount", "-w", "1").stdout
    wait_until(lambda: "No topologies running." in cluster.cli("list").stdout, 60, interval=0.25,
               what="the topology to be gone")

    expected = Counter(w for i in range(sentences) for w in SENTENCES[i % len(SENTENCES)].split())
    wait_until(lambda: final_counts(cluster.artifacts(tid)) == expected, 60, interval=0.25,
               what="the count bolts' final counts")
    assert "final counts" in cluster.cli("logs", "wordcount").stdout
    for codes in cluster.artifacts(tid).glob("*/exit-codes"):
        assert codes.read_text().strip().endswith("exit=0")  # workers stopped cleanly
