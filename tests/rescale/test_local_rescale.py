"""Rescaling a keyed stateful component's tasks in LocalCluster (in-memory provider, shared by the cluster's
workers): under exactly_once the counts stay exact through 4 -> 8 -> 3 tasks while the spout keeps emitting,
every key in the one task owning its key group; each task is prepared again with the new tasks and gets its
share before its first tuple; the summary shows the new counts; refusals change nothing."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

from storm_py import InvalidTopologyException, LocalCluster, Spout, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.runtime.key_groups import groups_of_task
from storm_py.runtime.system_topology import layout_from_counts
from storm_py.stateful.state.key_buckets import key_group_of
from storm_py.stateful.state.key_value import MEMORY_STORES
from storm_py.stateful.state.task_names import Rescales, namespace
from tests.rescale.components import KeyedCount, PassBolt, keyed_count_topology, new_run, truth, words

CONF = {"topology.state.checkpoint.interval.ms": 100, "topology.workers": 2,
        "topology.state.provider": "memory"}  # the states are read from the in-memory stores


def _shares(cluster: LocalCluster, tid: str) -> list[dict[Any, Any]]:
    base = cluster.nimbus.state.storm_base(tid)
    assert base is not None
    rescales = Rescales.of(base.topology_conf)
    counts = {c: (base.component_tasks[c], e) for c, e in base.component_executors.items()}
    ids = layout_from_counts(counts).component_tasks["count"]
    return [dict(MEMORY_STORES.store(tid, namespace(rescales, "count", i, t)).committed) for i, t in enumerate(ids)]


def _committed(cluster: LocalCluster, tid: str) -> Counter[Any]:
    out: Counter[Any] = Counter()
    for share in _shares(cluster, tid):
        out.update(share)
    return out


def _row(cluster: LocalCluster, name: str) -> dict[str, Any]:
    return next(r for r in cluster.get_cluster_summary() if r["name"] == name)


def _count_tasks(cluster: LocalCluster, tid: str) -> list[int]:
    return sorted(t for w in cluster.workers(tid) if w.runtime is not None for ex in w.runtime.executors
                  if ex.component_id == "count" for t in ex.task_ids)


@pytest.mark.slow
@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_counts_stay_exact_through_4_8_3_tasks_while_the_spout_emits(guarantee: str) -> None:
    """Exact under exactly_once; under at_least_once no key lost (replays may count some twice)."""
    name = f"rescale-{guarantee}"
    run = new_run(name)
    ws = words(300, 6000)
    want = truth(ws)

    def done() -> bool:
        got = _committed(cluster, tid)
        return got == want if guarantee == "exactly_once" else all(got[w] >= n for w, n in want.items())

    conf: dict[str, Any] = {**CONF, "topology.state.guarantee": guarantee}
    if guarantee == "at_least_once":
        # the workers of the new layout start one after the other: a checkpoint spout's first recovery tuple
        # (INITSTATE) sent to a slot whose worker still runs the old layout is dropped, and the checkpoint spout
        # learns it only at the message timeout (30 s by default, twice here), then recovers again
        conf["topology.message.timeout.secs"] = 5
    with LocalCluster() as cluster:
        cluster.submit_topology(name, conf, keyed_count_topology(name, ws, 4))
        tid = cluster.get_topology_id(name)
        assert tid is not None
        run.go_until = 2000
        wait_until(lambda: sum(_committed(cluster, tid).values()) >= 1000, 90, what="some counts committed")
        tasks_before = _row(cluster, name)["tasksTotal"]
        cluster.rebalance(name, wait_secs=0, tasks={"count": 8})  # the spout is still emitting
        wait_until(lambda: len(_count_tasks(cluster, tid)) == 8, 90, what="8 count tasks running")
        run.go_until = 4000
        wait_until(lambda: sum(_committed(cluster, tid).values()) >= 3000, 90, what="counts after the first rescale")
        row = _row(cluster, name)
        assert row["status"] == "ACTIVE" and row["tasksTotal"] == tasks_before + 4
        cluster.rebalance(name, wait_secs=0, tasks={"count": 3})
        wait_until(lambda: len(_count_tasks(cluster, tid)) == 3, 90, what="3 count tasks running")
        run.go_until = len(ws)
        wait_until(done, 120, what="the counts committed")
        shares = _shares(cluster, tid)
        for i, share in enumerate(shares):  # every key in the one task owning its key group
            assert all(key_group_of(k, 128) in groups_of_task(i, 3, 128) for k in share)
        row = _row(cluster, name)
        assert row["tasksTotal"] == tasks_before - 1
        summary = cluster.get_topology_summary(name)
        count = next(b for b in summary["bolts"] if b["boltId"] == "count")
        assert count["tasks"] == 3 and count["executors"] == 3
        now = [p for p in run.prepared if len(p[2]) == 3]
        assert sorted(p[1] for p in now[-3:]) == [0, 1, 2]  # each new task's context lists the 3 tasks
        assert all(run.first.get(t) == "init" for t in _count_tasks(cluster, tid))  # its share before a tuple
        cluster.kill_topology(name, wait_secs=0)


def _topology_with_unkeyed(run: str) -> Any:
    builder = TopologyBuilder()
    from tests.rescale.components import GatedPositionSpout

    builder.set_spout("words", GatedPositionSpout(run, ["a"]))
    builder.set_bolt("count", KeyedCount(run), 2).fields_grouping("words", ["word"])
    builder.set_bolt("other", KeyedCount(run), 2).shuffle_grouping("words")
    builder.set_bolt("sink", PassBolt()).shuffle_grouping("count")
    return builder.create_topology()


def test_refusals_name_the_component_and_change_nothing() -> None:
    name = "rescale-refused"
    new_run(name)
    with LocalCluster() as cluster:
        cluster.submit_topology(name, {"topology.state.max.parallelism": 16}, _topology_with_unkeyed(name))
        tid = cluster.get_topology_id(name)
        assert tid is not None
        before = cluster.nimbus.state.storm_base(tid)
        cases: list[tuple[dict[str, Any], str]] = [
            ({"count": 4, "other": 4}, "'other'.*not keyed.*shuffle"),  # the unkeyed one of several
            ({"count": 17}, "'count'.*at most 16"),
            ({"count": 0}, "'count'.*positive integer"),
            ({"count": -2}, "'count'.*positive integer"),
            ({"count": "3"}, "'count'.*positive integer"),
            ({"count": 2.5}, "'count'.*positive integer"),
            ({"nope": 2}, "unknown component 'nope'"),
            ({"__acker": 2}, "'__acker'.*system component"),
            ({"sink": 2, "$checkpointspout": 1}, "'\\$checkpointspout'.*system component"),
        ]
        for tasks, match in cases:
            with pytest.raises(InvalidTopologyException, match=match):
                cluster.rebalance(name, wait_secs=0, tasks=tasks)
            assert cluster.nimbus.state.storm_base(tid) == before
        cluster.rebalance(name, wait_secs=30, tasks={"count": 3})  # waits 30 s (real time): still rebalancing
        with pytest.raises(InvalidTopologyException, match=r"'count'.*already rebalancing"):
            cluster.rebalance(name, wait_secs=0, tasks={"count": 4})
        cluster.kill_topology(name, wait_secs=0)


def test_a_keyed_component_with_more_tasks_than_key_groups_is_refused_at_submit() -> None:
    name = "rescale-submit"
    new_run(name)
    with LocalCluster() as cluster, pytest.raises(InvalidTopologyException, match=r"'count'.*more than its 4 key"):
        cluster.submit_topology(name, {"topology.state.max.parallelism": 4}, keyed_count_topology(name, ["a"], 5))


def test_a_topology_cannot_be_submitted_with_a_rescale_history() -> None:
    name = "rescale-history"
    new_run(name)
    conf = {"topology.state.rescales": {"first_tasks": {"count": 3}, "tasks": {"count": [2, 4]}}}
    with LocalCluster() as cluster, pytest.raises(InvalidTopologyException, match=r"topology\.state\.rescales"):
        cluster.submit_topology(name, conf, keyed_count_topology(name, ["a"], 2))


class _Seen(Spout):
    """Records the tasks its component's context lists at each open."""

    def open(self, conf, context, collector):
        with SEEN_LOCK:
            SEEN.append((context.this_task_index, tuple(context.get_component_tasks("numbers"))))

    def next_tuple(self):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(["n"])


SEEN: list[tuple[int, tuple[int, ...]]] = []
SEEN_LOCK = threading.Lock()


def test_a_spout_without_state_is_rescaled_and_opened_again_with_the_new_tasks() -> None:
    SEEN.clear()
    builder = TopologyBuilder()
    builder.set_spout("numbers", _Seen(), 2)
    builder.set_bolt("sink", PassBolt(), 2).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        cluster.submit_topology("rescale-spout", {}, builder.create_topology())
        wait_until(lambda: len(SEEN) >= 2, 60, what="the spout's two tasks open")
        cluster.rebalance("rescale-spout", wait_secs=0, tasks={"numbers": 3, "sink": 1})
        wait_until(lambda: len([s for s in SEEN if len(s[1]) == 3]) == 3, 60, what="three tasks open")
        assert sorted(i for i, tasks in SEEN if len(tasks) == 3) == [0, 1, 2]
        row = next(r for r in cluster.get_cluster_summary() if r["name"] == "rescale-spout")
        summary = cluster.get_topology_summary("rescale-spout")
        spout = next(s for s in summary["spouts"] if s["spoutId"] == "numbers")
        sink = next(b for b in summary["bolts"] if b["boltId"] == "sink")
        assert (spout["tasks"], spout["executors"], sink["tasks"], sink["executors"]) == (3, 3, 1, 1)
        assert row["status"] == "ACTIVE"
        cluster.kill_topology("rescale-spout", wait_secs=0)
