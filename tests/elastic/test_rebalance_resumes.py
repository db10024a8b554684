"""After ``rebalance -e`` under at_least_once with the in-memory provider and Storm's 30 s message timeout, a
stateful bolt counts again within seconds: the spouts (the checkpoint spout's recovery tuple first) wait until no
worker of the assignment runs the previous layout, so no tuple of theirs is lost to one and waited for."""

from __future__ import annotations

from typing import Any

from storm_py import LocalCluster
from storm_py.clock import SYSTEM_CLOCK, wait_until
from tests.elastic.components import LIMITS, committed_counts, committed_states, elastic_word_count
from tests.stateful.components import new_run, truth

WORDS = [f"w{i % 37}" for i in range(1200)]

#: far below the message timeout a lost recovery tuple would be waited for (30 s, often twice)
RESUME_SECS = 12.0


def test_a_stateful_bolt_counts_again_within_seconds_after_rebalancing_executors() -> None:
    name = "rb-resume"
    run = new_run(name)
    conf: dict[str, Any] = {"topology.state.guarantee": "at_least_once", "topology.state.provider": "memory",
                            "topology.state.checkpoint.interval.ms": 100, "topology.workers": 2,
                            "topology.message.timeout.secs": 30}
    LIMITS[name] = len(WORDS) // 2
    try:
        with LocalCluster(supervisors=2, ports_per_supervisor=3) as cluster:
            tid = cluster.submit_topology(name, conf, elastic_word_count(name, WORDS, exactly_once=False))

            def counted(words: list[str]) -> bool:
                got = committed_counts(committed_states(cluster.conf, conf, name, tid, "count"))
                return all(got[w] >= n for w, n in truth(words).items())

            wait_until(lambda: len(run.acked) == LIMITS[name] and counted(WORDS[: LIMITS[name]]), 90,
                       interval=0.05, what="the first half counted and committed")
            cluster.rebalance(name, wait_secs=0, executors={"count": 4, "split": 3})
            started = SYSTEM_CLOCK.now()
            LIMITS[name] = len(WORDS)
            wait_until(lambda: len(run.acked) == len(WORDS) and counted(WORDS), 90, interval=0.05,
                       what="every word counted after the rebalance")
            took = SYSTEM_CLOCK.now() - started
            assert took < RESUME_SECS, f"the counts resumed only {took:.1f}s after the rebalance"
            assert sum(1 for w in cluster.workers(tid) for ex in w.runtime.executors
                       if ex.component_id == "count") == 4
            cluster.kill_topology(name, wait_secs=0)
    finally:
        LIMITS.pop(name, None)
