"""``LocalCluster.rebalance(name, executors={c: n})`` on a stateful word count whose counting bolt has more tasks
than executors, while words flow: every task keeps its state through the move, under both guarantees, with the
durable checkpoint provider (LocalCluster's default) and with Redis.  Under exactly_once the committed counts equal
the words emitted; under at_least_once no count ends below it (no key is lost)."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py import LocalCluster
from storm_py.clock import wait_until
from tests.elastic.components import (
    LIMITS,
    committed_counts,
    committed_states,
    elastic_word_count,
    windowed_word_count,
)
from tests.stateful.components import counts, new_run, truth

# each case runs a LocalCluster through checkpoints and a rebalance: tens of seconds (pure run only in CI)
pytestmark = pytest.mark.slow

WORDS = [f"w{i % 37}" for i in range(1200)]


def executors_of(cluster: LocalCluster, name: str, component: str) -> int:
    summary = cluster.get_topology_summary(name)
    if summary["status"] != "ACTIVE":
        return -1
    return int(next(b for b in summary["bolts"] if b["boltId"] == component)["executors"])


def running_executors(cluster: LocalCluster, tid: str, component: str) -> int:
    return sum(1 for w in cluster.workers(tid) for ex in w.runtime.executors if ex.component_id == component)


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
@pytest.mark.parametrize("provider", ["checkpoint_dir", "redis"])
@pytest.mark.parametrize("shape", ["stateful", "windowed"])
def test_rebalancing_executors_keeps_every_tasks_state(request: pytest.FixtureRequest, shape: str, provider: str,
                                                       guarantee: str) -> None:
    name = f"rb-{shape}-{provider.replace('_', '')}-{guarantee.replace('_', '')}"
    run = new_run(name)
    exactly = guarantee == "exactly_once"
    conf: dict[str, Any] = {"topology.state.guarantee": guarantee, "topology.state.checkpoint.interval.ms": 100,
                            "topology.workers": 2, "topology.message.timeout.secs": 10}
    if provider == "redis":
        server = request.getfixturevalue("redis_server")
        conf.update({"topology.state.provider": "redis",
                     "topology.state.provider.config": {"port": server.port, "key_prefix": f"{name}:"}})
    LIMITS[name] = len(WORDS) // 2
    with LocalCluster(supervisors=2, ports_per_supervisor=3) as cluster:
        build = elastic_word_count if shape == "stateful" else windowed_word_count
        tid = cluster.submit_topology(name, conf, build(name, WORDS, exactly_once=exactly))

        def committed() -> Any:
            return committed_counts(committed_states(cluster.conf, conf, name, tid, "count"))

        half = truth(WORDS[: LIMITS[name]])
        wait_until(lambda: committed() == half if exactly else len(run.acked) == LIMITS[name], 60,
                   interval=0.05, what="the first half counted and committed")
        before = committed_states(cluster.conf, conf, name, tid, "count")
        assert len(before) == 4  # four tasks, each with its share of the words
        cluster.rebalance(name, wait_secs=1, executors={"count": 4, **({"split": 3} if shape == "stateful" else {})})
        LIMITS[name] = len(WORDS)  # the second half flows while the rebalance waits, moves and restores
        wait_until(lambda: executors_of(cluster, name, "count") == 4, 60, interval=0.05, what="count on 4 executors")
        wait_until(lambda: running_executors(cluster, tid, "count") == 4, 60, interval=0.05,
                   what="4 count executors running")
        want = truth(WORDS)
        if exactly:
            wait_until(lambda: committed() == want, 120, interval=0.1, what="the exact counts committed")
            if shape == "stateful":
                assert counts(run) == want
        else:
            wait_until(lambda: len(run.acked) == len(WORDS), 120, interval=0.1, what="every word acked")
            wait_until(lambda: all(committed()[w] >= n for w, n in want.items()), 60, interval=0.1,
                       what="every count committed at least once")
        after = committed_states(cluster.conf, conf, name, tid, "count")
        assert set(after) == set(before)  # the same tasks: executors move, tasks stay
        for task, state in before.items():  # each task's own words, never fewer than before the move
            assert set(state) <= set(after[task]) and all(after[task][w] >= n for w, n in state.items()), task
        cluster.kill_topology(name, wait_secs=0)
    LIMITS.pop(name, None)
