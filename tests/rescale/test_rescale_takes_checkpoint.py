"""A rescale of the tasks takes a checkpoint at the rebalance (LocalCluster, one worker, in-memory provider): the new
tasks restore a checkpoint newer than the last one committed before the command, so under exactly_once the spout
replays nothing and the counts stay exact; when no checkpoint commits in time the rescale goes on from the last
committed one and says so."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.runtime.system_topology import layout_from_counts
from storm_py.stateful.state.key_value import MEMORY_STORES
from storm_py.stateful.state.task_names import Rescales, namespace
from tests.rescale.components import Run, keyed_count_topology, new_run, truth, words

#: checkpoints every 3 s: a rescale that took none would restore one up to 3 s old and replay what came after it
CONF = {"topology.state.checkpoint.interval.ms": 3000, "topology.workers": 1, "topology.state.provider": "memory"}


def _committed(cluster: LocalCluster, tid: str) -> Counter[Any]:
    base = cluster.nimbus.state.storm_base(tid)
    assert base is not None
    rescales = Rescales.of(base.topology_conf)
    counts = {c: (base.component_tasks[c], e) for c, e in base.component_executors.items()}
    out: Counter[Any] = Counter()
    for i, t in enumerate(layout_from_counts(counts).component_tasks["count"]):
        out.update(MEMORY_STORES.store(tid, namespace(rescales, "count", i, t)).committed)
    return out


def _last_checkpoint(cluster: LocalCluster, name: str) -> int:
    last = cluster.get_topology_summary(name)["lastCheckpoint"]
    return -1 if last is None else int(last["txid"])


def _restored(run: Run, tasks: int) -> list[int]:
    with run.lock:
        return [txid for (n, _), txid in sorted(run.restored.items()) if n == tasks]


@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_the_new_tasks_restore_a_checkpoint_taken_at_the_rebalance(guarantee: str) -> None:
    name = f"rescale-cp-{guarantee}"
    run = new_run(name)
    ws = words(200, 60000)
    want = truth(ws)
    with LocalCluster() as cluster:
        cluster.submit_topology(name, {**CONF, "topology.state.guarantee": guarantee},
                                keyed_count_topology(name, ws, 4))
        tid = cluster.get_topology_id(name)
        assert tid is not None
        run.go_until = 2000
        wait_until(lambda: sum(_committed(cluster, tid).values()) >= 2000, 90, what="the first words committed")
        run.go_until = len(ws)  # the spout emits up to the rebalance: none of it may be replayed
        wait_until(lambda: run.emitted > 2500, 30, interval=0.005, what="the spout emitting again")
        before = _last_checkpoint(cluster, name)
        cluster.rebalance(name, wait_secs=0, tasks={"count": 8})
        wait_until(lambda: len(_restored(run, 8)) == 8, 90, what="the 8 new tasks restored")
        assert run.held_at is not None and run.held_at < len(ws), run.held_at  # held before it reached the end
        if guarantee == "exactly_once":  # the spout's position is checkpointed: taken while it was held
            wait_until(lambda: len(run.spout_restored) == 2, 30, what="the spout's new task restored")
            assert run.spout_restored[-1] == run.held_at, (run.held_at, run.spout_restored)
        restored = set(_restored(run, 8))
        assert len(restored) == 1 and min(restored) > before, (before, restored)
        if guarantee == "exactly_once":
            wait_until(lambda: _committed(cluster, tid) == want, 90, what="the exact counts committed")
            assert run.emitted == len(ws)  # the spout resumed where it was held: nothing replayed
        else:
            wait_until(lambda: all(_committed(cluster, tid)[w] >= n for w, n in want.items()), 90,
                       what="every word committed")
        errors = cluster.nimbus.state.topology_errors(tid).get("$checkpointspout", [])
        assert not [e for e in errors if "no checkpoint" in e.error]
        cluster.kill_topology(name, wait_secs=0)


def test_without_a_commit_in_time_the_rescale_goes_on_from_the_last_committed_checkpoint() -> None:
    name = "rescale-cp-fallback"
    run = new_run(name)
    ws = words(100, 3000)
    conf = {**CONF, "topology.state.guarantee": "exactly_once", "topology.message.timeout.secs": 4}
    with LocalCluster() as cluster:
        cluster.submit_topology(name, conf, keyed_count_topology(name, ws, 2))
        tid = cluster.get_topology_id(name)
        assert tid is not None
        run.go_until = 1000
        wait_until(lambda: sum(_committed(cluster, tid).values()) >= 1000, 90, what="the first words committed")
        before = _last_checkpoint(cluster, name)
        run.flowing.clear()  # the counter stalls: no checkpoint can commit
        run.go_until = 2000
        try:
            wait_until(lambda: run.stalled, 30, interval=0.01, what="the counter stalled")
            cluster.rebalance(name, wait_secs=0, tasks={"count": 3})

            def rescaled() -> bool:
                base = cluster.nimbus.state.storm_base(tid)
                return base is not None and base.component_tasks["count"] == 3

            wait_until(rescaled, 60, what="the rescale going on without its checkpoint")
        finally:
            run.flowing.set()
        errors = cluster.nimbus.state.topology_errors(tid).get("$checkpointspout", [])
        assert any("no checkpoint asked for the rescale committed within 4s" in e.error
                   and f"txid {before}" in e.error for e in errors), [e.error for e in errors]
        wait_until(lambda: len(_restored(run, 3)) == 3, 90, what="the 3 new tasks restored")
        assert set(_restored(run, 3)) == {before}
        run.go_until = len(ws)
        wait_until(lambda: _committed(cluster, tid) == truth(ws), 90, what="the exact counts, through replay")
        cluster.kill_topology(name, wait_secs=0)
