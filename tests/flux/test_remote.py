"""``storm-py flux --remote``: Storm's word count file submitted to a dev cluster, inactive first, then activated;
workers build it from the resolved definition that travels in the package; Storm's multilang file, its shell
components running in the package's resources/ folder on the workers; and Storm's windowing and stateful word
count files with flux-examples' bolts, unchanged."""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.clock import wait_until
from tests.cluster.harness import DevClusterProcess
from tests.flux.conftest import CONFIGS

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevClusterProcess]:
    c = DevClusterProcess(tmp_path_factory.mktemp("flux-remote") / "cluster", supervisors=1)
    try:
        c.start()
        yield c
    finally:
        c.stop()


def test_word_count_file_submitted_to_a_dev_cluster(cluster: DevClusterProcess, tmp_path: Path) -> None:
    folder = tmp_path / "topology"
    folder.mkdir()
    shutil.copy(CONFIGS / "simple_wordcount.yaml", folder / "simple_wordcount.yaml")
    (folder / "wc.properties").write_text("unused=1\n", encoding="utf-8")
    proc = cluster.cli("flux", "--remote", "-n", "-q", "--inactive", "-s", "5", "-f", str(folder / "wc.properties"),
                       str(folder / "simple_wordcount.yaml"), "-c", "topology.message.timeout.secs=20")
    assert "Finished submitting topology: yaml-topology (id " in proc.stdout, proc.stderr
    assert "--sleep is ignored" in proc.stderr
    (folder / "simple_wordcount.yaml").unlink()  # workers never read the file
    client = cluster.client()
    assert client.topology("yaml-topology")["status"] == "INACTIVE"
    cluster.cli("activate", "yaml-topology")

    def executed(bolt: str) -> int:
        bolts = client.topology("yaml-topology")["bolts"]
        return int(next(b for b in bolts if b["boltId"] == bolt).get("executed", 0))

    wait_until(lambda: executed("bolt-2") >= 20, 180, interval=0.5, what="counts reaching the log bolt")
    assert executed("bolt-1") >= 20
    cluster.cli("kill", "yaml-topology", "-w", "0")


def test_multilang_file_runs_its_shell_components_on_the_cluster(cluster: DevClusterProcess, tmp_path: Path) -> None:
    folder = tmp_path / "multilang"
    shutil.copytree(CONFIGS / "resources", folder / "resources")
    shutil.copy(CONFIGS / "multilang.yaml", folder / "multilang.yaml")
    proc = cluster.cli("flux", "-r", "-n", "-q", str(folder / "multilang.yaml"))
    assert "Finished submitting topology: shell-topology (id " in proc.stdout, proc.stderr
    client = cluster.client()

    def stats() -> dict[str, dict]:
        summary = client.topology("shell-topology")
        return {c.get("spoutId") or c.get("boltId"): c for c in summary["spouts"] + summary["bolts"]}

    wait_until(lambda: int(stats()["count"].get("executed", 0)) >= 20
               and int(stats()["sentence-spout"].get("acked", 0)) >= 3, 180, interval=0.5,
               what="sentences from the node spout split by the python bolt and counted")
    assert not any(c.get("lastError") for c in stats().values())
    cluster.cli("kill", "shell-topology", "-w", "0")


def test_storms_windowing_file_runs_unchanged_on_the_cluster(cluster: DevClusterProcess) -> None:
    proc = cluster.cli("flux", "--remote", "-n", "-q", str(CONFIGS / "simple_windowing.yaml"))
    assert "Finished submitting topology: sliding-window-topology (id " in proc.stdout, proc.stderr
    client = cluster.client()

    def stats() -> dict[str, dict]:
        summary = client.topology("sliding-window-topology")
        return {c.get("spoutId") or c.get("boltId"): c for c in summary["spouts"] + summary["bolts"]}

    wait_until(lambda: int(stats()["bolt-2"].get("executed", 0)) >= 4, 180, interval=0.5,
               what="window sizes reaching flux-examples' print bolt")
    assert not any(c.get("lastError") for c in stats().values())
    tid = client.topology("sliding-window-topology")["id"]

    def printed() -> list[str]:
        return [line.rpartition("received ")[2] for log in cluster.artifacts(tid).glob("*/worker.log")
                for line in log.read_text(encoding="utf-8").splitlines() if "storm_py.flux.examples" in line]

    wait_until(lambda: len(printed()) >= 4, 60, interval=0.25, what="the print bolt's lines in the worker log")
    assert printed()[:4] == ["[3] from bolt-1"] + ["[5] from bolt-1"] * 3  # windows of five sliding by three
    cluster.cli("kill", "sliding-window-topology", "-w", "0")


def test_storms_stateful_word_count_file_runs_unchanged_on_the_cluster(cluster: DevClusterProcess) -> None:
    proc = cluster.cli("flux", "--remote", "-n", "-q", str(CONFIGS / "simple_stateful_wordcount.yaml"))
    assert "Finished submitting topology: stateful-wordcount-topology (id " in proc.stdout, proc.stderr
    tid = cluster.client().topology("stateful-wordcount-topology")["id"]

    def logged() -> list[list]:
        return [ast.literal_eval(line[line.rindex("["):])
                for log in cluster.artifacts(tid).glob("*/worker.log")
                for line in log.read_text(encoding="utf-8").splitlines() if "storm_py.flux.wrappers" in line]

    wait_until(lambda: len(logged()) >= 20, 180, interval=0.5, what="20 stateful counts logged")
    per_word: dict[str, list[int]] = {}
    for word, count in logged():
        per_word.setdefault(word, []).append(count)
    assert all(counts == list(range(1, len(counts) + 1)) for counts in per_word.values()), per_word
    cluster.cli("kill", "stateful-wordcount-topology", "-w", "0")
