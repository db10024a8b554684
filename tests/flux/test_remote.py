"""``storm-py flux --remote``: Storm's word count file submitted to a dev cluster, inactive first, then activated;
workers build it from the resolved definition that travels in the package; and Storm's multilang file, its shell
components running in the package's resources/ folder on the workers."""

from __future__ import annotations

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
