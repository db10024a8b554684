"""A topology killed after a task rescale and submitted again under its name resumes from its state as the rescale
left it (the last committed checkpoint, in its key-group layout), whether it is submitted with the rescaled task
count or with the one it was first submitted with (one more rescale, from the kept layout): the counts stay exact
under exactly_once on LocalCluster's durable checkpoint directory, every key in the one task owning its key group.
Nimbus's history of rescales by name (:func:`storm_py.nimbus.rescale.resubmitted_history`) is checked pure too."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from storm_py import LocalCluster, NotAliveException
from storm_py.clock import wait_until
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.errors import StateError
from storm_py.nimbus.rescale import resubmitted_history
from storm_py.runtime.key_groups import groups_of_task
from storm_py.runtime.system_topology import layout_from_counts
from storm_py.stateful.state.checkpoint_dir import CheckpointDirState, Settings
from storm_py.stateful.state.key_buckets import key_group_of
from storm_py.stateful.state.task_names import Rescales, namespace
from tests.rescale.components import keyed_count_topology, new_run, truth, words

CONF = {"topology.state.checkpoint.interval.ms": 100, "topology.workers": 2,
        "topology.state.guarantee": "exactly_once"}


def _shares(cluster: LocalCluster, name: str) -> list[dict[Any, Any]]:
    """The committed state of each task of ``count`` of the live topology ``name``, by task index."""
    tid = cluster.get_topology_id(name)
    assert tid is not None
    base = cluster.nimbus.state.storm_base(tid)
    assert base is not None
    rescales = Rescales.of(base.topology_conf)
    counts = {c: (base.component_tasks[c], e) for c, e in base.component_executors.items()}
    ids = layout_from_counts(counts).component_tasks["count"]
    settings = Settings(str(cluster.conf["topology.state.checkpoint.dir"]))
    return [CheckpointDirState.committed(settings, name, namespace(rescales, "count", i, t))
            for i, t in enumerate(ids)]


def _committed(cluster: LocalCluster, name: str) -> Counter[Any]:
    out: Counter[Any] = Counter()
    for share in _shares(cluster, name):
        out.update(share)
    return out


def _gone(cluster: LocalCluster, name: str) -> bool:
    try:
        cluster.get_topology_summary(name)
    except NotAliveException:
        return True
    return False


def _count_tasks(cluster: LocalCluster, name: str) -> int:
    tid = cluster.get_topology_id(name)
    return sum(len(ex.task_ids) for w in cluster.workers(tid or "") if w.runtime is not None
               for ex in w.runtime.executors if ex.component_id == "count")


@pytest.mark.parametrize("resubmitted", [8, 4])
def test_a_resubmit_after_a_task_rescale_resumes_from_the_rescaled_state(resubmitted: int) -> None:
    name = f"resubmit-{resubmitted}"
    ws = words(300, 4000)
    with LocalCluster(supervisors=2) as cluster:
        assert cluster.conf["topology.state.provider"] == "checkpoint_dir"
        run = new_run(name)
        run.go_until = 1500
        cluster.submit_topology(name, CONF, keyed_count_topology(name, ws, 4))
        wait_until(lambda: _committed(cluster, name) == truth(ws[:1500]), 90, what="the first counts committed")
        cluster.rebalance(name, wait_secs=0, tasks={"count": 8})
        wait_until(lambda: _count_tasks(cluster, name) == 8, 90, what="8 count tasks running")
        run.go_until = 3000
        wait_until(lambda: _committed(cluster, name) == truth(ws[:3000]), 90, what="the counts after the rescale")
        cluster.kill_topology(name, wait_secs=0)
        wait_until(lambda: _gone(cluster, name), 30, what="the killed topology gone")

        again = new_run(name)  # the spout resumes at its committed position (3000)
        again.go_until = len(ws)
        cluster.submit_topology(name, CONF, keyed_count_topology(name, ws, resubmitted))
        wait_until(lambda: again.emitted == len(ws) - 3000, 90, what="the rest of the words emitted")
        wait_until(lambda: _committed(cluster, name) == truth(ws), 60, what="every word counted once")
        shares = _shares(cluster, name)
        assert len(shares) == resubmitted
        for i, share in enumerate(shares):  # every key in the one task owning its key group
            assert all(key_group_of(k, 128) in groups_of_task(i, resubmitted, 128) for k in share)
        tid = cluster.get_topology_id(name)
        base = cluster.nimbus.state.storm_base(tid or "")
        assert base is not None
        want = [4, 8] if resubmitted == 8 else [4, 8, 4]
        assert Rescales.of(base.topology_conf).tasks == {"count": want}
        cluster.kill_topology(name, wait_secs=0)


def test_the_history_a_resubmit_runs_with() -> None:
    kept = {"first_tasks": {"count": 3, "words": 1}, "tasks": {"count": [4, 8], "gone": [2, 3]}}
    assert resubmitted_history(None, {"count": 4}) is None  # never rescaled: Storm's names
    assert resubmitted_history(kept, {"count": 8, "words": 1}) == {  # same size: the same generation
        "first_tasks": {"count": 3, "words": 1}, "tasks": {"count": [4, 8]}}
    assert resubmitted_history(kept, {"count": 4, "words": 1}) == {  # another size: one more generation
        "first_tasks": {"count": 3, "words": 1}, "tasks": {"count": [4, 8, 4]}}
    assert kept["tasks"] == {"count": [4, 8], "gone": [2, 3]}  # the kept history is not changed



def test_nimbus_keeps_the_history_by_name_past_the_topology() -> None:
    state = ClusterState(MemoryStorage(MemoryStore()))
    assert state.rescales("counts") is None
    history = {"first_tasks": {"count": 3}, "tasks": {"count": [4, 8]}}
    state.set_rescales("counts", history)
    state.remove_topology("counts-1-1700000000")
    assert state.rescales("counts") == history
    assert state.rescales("other") is None
    with pytest.raises(StateError, match="invalid znode name"):
        state.set_rescales("a/b", history)
