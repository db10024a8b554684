"""LocalCluster keeps managed state in the checkpoint directory unless a provider is asked: a stateful word count's
counts survive a kill and a resubmit of the same topology name; with ``memory`` asked, the second run starts from
nothing; a cluster conf naming a provider keeps it."""

from __future__ import annotations

from pathlib import Path

from storm_py import LocalCluster, NotAliveException
from storm_py.clock import wait_until
from storm_py.stateful.state.checkpoint_dir import CheckpointDirState, Settings
from tests.elastic.components import committed_counts
from tests.stateful.components import counts, new_run, truth, word_count_topology

WORDS = ["apple", "pear", "fig", "kiwi", "plum", "lime"] * 20
MORE = ["apple", "fig"] * 10
FAST = {"topology.state.checkpoint.interval.ms": 100}


def gone(cluster: LocalCluster, name: str) -> bool:
    try:
        cluster.get_topology_summary(name)
    except NotAliveException:
        return True
    return False


def two_runs(cluster: LocalCluster, name: str, conf: dict) -> tuple:
    first = new_run(f"{name}-1")
    cluster.submit_topology(name, conf, word_count_topology(f"{name}-1", WORDS))
    wait_until(lambda: len(first.acked) == len(WORDS), 60, what="the first run's words acked")
    cluster.kill_topology(name, wait_secs=0)
    wait_until(lambda: gone(cluster, name), 30, what="the killed topology gone")
    second = new_run(f"{name}-2")
    cluster.submit_topology(name, conf, word_count_topology(f"{name}-2", MORE))
    wait_until(lambda: len(second.acked) == len(MORE), 60, what="the second run's words acked")
    cluster.kill_topology(name, wait_secs=0)
    return first, second


def test_counts_survive_kill_and_resubmit_under_the_default_provider() -> None:
    with LocalCluster(supervisors=2) as cluster:
        assert cluster.conf["topology.state.provider"] == "checkpoint_dir"
        root = Path(cluster.conf["topology.state.checkpoint.dir"])
        _, second = two_runs(cluster, "durable", FAST)
        assert counts(second) == truth(WORDS + MORE)
        on_disk = CheckpointDirState.committed_of(Settings(str(root)), "durable", "count")
        assert committed_counts(on_disk) == truth(WORDS + MORE)
        assert (root / "durable").is_dir()
    assert not root.exists()  # the cluster's own directory goes with it


def test_memory_when_asked_starts_a_resubmitted_name_empty() -> None:
    with LocalCluster(supervisors=2) as cluster:
        _, second = two_runs(cluster, "volatile", {**FAST, "topology.state.provider": "memory"})
        assert counts(second) == truth(MORE)
        assert not (Path(cluster.conf["topology.state.checkpoint.dir"]) / "volatile").exists()


def test_a_cluster_conf_naming_a_provider_keeps_it(tmp_path: Path) -> None:
    with LocalCluster(supervisors=1, daemon_conf={"topology.state.provider": "memory"}) as cluster:
        assert cluster.conf["topology.state.provider"] == "memory"
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "kept").write_text("")
    conf = {"topology.state.checkpoint.dir": str(tmp_path / "mine")}
    with LocalCluster(supervisors=1, daemon_conf=conf) as cluster:
        assert cluster.conf["topology.state.provider"] == "checkpoint_dir"
        assert cluster.conf["topology.state.checkpoint.dir"] == str(tmp_path / "mine")
    assert (tmp_path / "mine" / "kept").exists()  # a directory the cluster's conf names is never removed
