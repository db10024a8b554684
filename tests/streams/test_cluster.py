"""Acceptance: storm-starter's Stream API examples (word count to a bolt, stateful word count with its state query,
windowed word count, join, branch, aggregate, typed tuples) packaged in one wheel, submitted with `storm-py submit`
to one `storm-py dev-cluster` (two supervisors) and giving exact results.  Each topology is
tests/streams/cluster_topologies.py: the example's pipeline fed by fixed rows, writing to files the test reads."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import wait_until
from tests.cluster.harness import REPO, DevClusterProcess, build_wheel
from tests.streams import cluster_topologies as app

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(300)]

#: topology name -> (builder in streamsapp.topologies, workers)
TOPOLOGIES = {
    "streams-wc": ("word_count", 2),
    "streams-stateful": ("stateful", 1),
    "streams-windowed": ("windowed", 1),
    "streams-join": ("joined", 1),
    "streams-branch": ("branched", 1),
    "streams-aggregate": ("aggregated", 1),
    "streams-typed": ("typed", 1),
}


def streams_project(root: Path) -> Path:
    """A project packaging the Stream API examples (and the spouts they take) and the cluster topologies."""
    project = root / "streamsapp"
    (project / "examples").mkdir(parents=True)
    (project / "streamsapp").mkdir()
    for example in [*(REPO / "examples").glob("streams_*.py"), REPO / "examples" / "word_count.py"]:
        shutil.copy(example, project / "examples" / example.name)
    (project / "examples" / "__init__.py").write_text('"""storm_py examples."""\n', encoding="utf-8")
    shutil.copy(Path(app.__file__), project / "streamsapp" / "topologies.py")
    (project / "streamsapp" / "__init__.py").write_text('"""Cluster topologies."""\n', encoding="utf-8")
    (project / "pyproject.toml").write_text(
        "[build-system]\nrequires = [\"setuptools>=64\", \"wheel\"]\nbuild-backend = \"setuptools.build_meta\"\n\n"
        "[project]\nname = \"streamsapp\"\nversion = \"0.1.0\"\n\n"
        "[tool.setuptools]\npackages = [\"examples\", \"streamsapp\"]\n",
        encoding="utf-8",
    )
    return project


@dataclass
class Running:
    cluster: DevClusterProcess
    out: dict[str, Path]

    def lines(self, name: str, sink: str) -> list[Any]:
        """Every value the topology's sink ``sink`` wrote, over all its processes."""
        return [json.loads(line) for path in sorted(self.out[name].glob(f"{sink}-*.jsonl"))
                for line in path.read_text(encoding="utf-8").split("\n")[:-1]]  # complete lines only

    def wait_lines(self, name: str, sink: str, count: int) -> list[Any]:
        """The sink's values once it wrote ``count`` of them."""
        wait_until(lambda: len(self.lines(name, sink)) >= count, 120, interval=0.25,
                   what=f"{count} values from {name}'s {sink}")
        return self.lines(name, sink)

    def kill(self, name: str) -> None:
        assert f"Killed topology: {name}" in self.cluster.cli("kill", name, "-w", "0").stdout


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """Every example submitted to one dev cluster of two supervisors (eight slots, eight workers)."""
    root = tmp_path_factory.mktemp("streams-cluster")
    wheel = build_wheel(streams_project(root / "src"), root / "wheels")
    cluster = DevClusterProcess(root / "cluster", supervisors=2)
    try:
        cluster.start()
        out: dict[str, Path] = {}
        for name, (function, workers) in TOPOLOGIES.items():
            out[name] = root / "out" / name
            out[name].mkdir(parents=True)
            submitted = cluster.cli("submit", str(wheel), f"streamsapp.topologies:{function}", "--name", name,
                                    "-c", f"topology.workers={workers}", "-c", f"streams.out={out[name]}",
                                    "-c", "topology.message.timeout.secs=600")
            assert f"Finished submitting topology: {name}" in submitted.stdout, submitted.stderr
        yield Running(cluster, out)
    finally:
        cluster.stop()


def _spout_acked(run: Running, name: str, expected: int) -> None:
    """The example's spouts acked exactly ``expected`` tuples and failed none.  A windowed bolt acks a tuple when it
    leaves its window (Storm's semantics), so the last window's tuples stay pending: the topologies run with a
    message timeout longer than the module."""
    client = run.cluster.client()

    def acked() -> int:
        return sum(int(s.get("acked", 0)) for s in client.topology(name)["spouts"] if not s["spoutId"].startswith("$"))

    wait_until(lambda: acked() >= expected, 120, interval=0.25, what=f"{expected} tuples of {name} acked")
    page = client.topology(name)
    assert acked() == expected
    assert all(int(s.get("failed", 0)) == 0 for s in page["spouts"]), page["spouts"]


def test_word_count_to_a_bolt_gives_exact_counts(running: Running) -> None:
    total = app.WORD_COUNT_ROUNDS * len(app.SENTENCES)
    expected = Counter(w for _ in range(app.WORD_COUNT_ROUNDS) for s in app.SENTENCES for w in s.split())
    running.wait_lines("streams-wc", "counts", sum(expected.values()))
    _spout_acked(running, "streams-wc", total)
    counts = running.lines("streams-wc", "counts")
    assert len(counts) == sum(expected.values())  # one running count per word seen
    by_word: dict[str, list[int]] = {}
    for word, count in counts:
        by_word.setdefault(word, []).append(count)
    assert {w: sorted(c) for w, c in by_word.items()} == {w: list(range(1, n + 1)) for w, n in expected.items()}
    assert client_workers(running, "streams-wc") == 2
    running.kill("streams-wc")


def client_workers(run: Running, name: str) -> int:
    return int(run.cluster.client().topology(name)["workersTotal"])


def test_stateful_word_count_answers_state_queries_from_the_state(running: Running) -> None:
    expected = Counter(app.WORDS)
    running.wait_lines("streams-stateful", "counts", len(app.WORDS))
    per_word: dict[str, list[int]] = {}
    for word, count in running.lines("streams-stateful", "counts"):
        per_word.setdefault(word, []).append(count)
    assert per_word == {w: list(range(1, n + 1)) for w, n in expected.items()}
    (running.out["streams-stateful"] / app.GO).touch()
    answered = sorted(w for w in app.QUERIES if w in expected)
    running.wait_lines("streams-stateful", "answers", len(answered))
    _spout_acked(running, "streams-stateful", len(app.WORDS) + len(app.QUERIES))
    assert sorted(running.lines("streams-stateful", "answers")) == [[w, expected[w]] for w in answered]
    running.kill("streams-stateful")


def test_windowed_word_count_counts_each_window_afresh(running: Running) -> None:
    # windows of two sentences: only "the" is seen twice in each of the six
    counts = running.wait_lines("streams-windowed", "counts", 6)
    _spout_acked(running, "streams-windowed", len(app.SENTENCES) * 3 - 2)  # all but the last window's
    assert running.lines("streams-windowed", "counts") == counts == [["the", 2]] * 6
    running.kill("streams-windowed")


def test_join_combines_the_pairs_of_one_window(running: Running) -> None:
    running.wait_lines("streams-join", "joined", 3)
    _spout_acked(running, "streams-join", 0)  # all six are in the one window
    assert sorted(running.lines("streams-join", "joined")) == [[2, [20, 200]], [3, [30, 300]], [3, [30, 301]]]
    running.kill("streams-join")


def test_branch_sends_each_value_to_its_first_matching_branch(running: Running) -> None:
    running.wait_lines("streams-branch", "evens", 5)
    running.wait_lines("streams-branch", "odds", 5)
    _spout_acked(running, "streams-branch", 10)
    assert running.lines("streams-branch", "evens") == [0, 2, 4, 6, 8]
    assert running.lines("streams-branch", "odds") == [1, 3, 5, 7, 9]
    running.kill("streams-branch")


def test_aggregate_averages_the_positive_values_of_each_window(running: Running) -> None:
    running.wait_lines("streams-aggregate", "averages", 2)
    _spout_acked(running, "streams-aggregate", 4)  # the first window's
    assert running.lines("streams-aggregate", "averages") == [3.0, 25.25]
    running.kill("streams-aggregate")


def test_typed_tuples_group_per_key_in_count_windows(running: Running) -> None:
    running.wait_lines("streams-typed", "groups", 4)
    _spout_acked(running, "streams-typed", 4)  # the first window's
    assert sorted(running.lines("streams-typed", "groups")) == [[0, [0, 2]], [1, [1, 3]], [2, [4, 5]], [3, [6, 7]]]
    running.kill("streams-typed")
