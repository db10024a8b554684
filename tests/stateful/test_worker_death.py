"""A worker running stateful bolts dies in LocalCluster (in-memory provider, three workers) and is restarted by its
supervisor: under at_least_once no count ends lower than the truth, under exactly_once every count equals it."""

from __future__ import annotations

import pytest

from storm_py import LocalCluster
from storm_py.clock import wait_until
from tests.stateful.components import committed_counts, counts, new_run, truth, word_count_topology

WORDS = ["apple", "pear", "fig", "kiwi", "plum", "lime"] * 300


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_counts_after_a_worker_with_stateful_bolts_dies(guarantee):
    name = f"death-{guarantee}"
    run = new_run(name)
    exactly = guarantee == "exactly_once"
    topo = word_count_topology(name, WORDS, counters=2, stateful_spout=exactly)
    conf = {"topology.state.checkpoint.interval.ms": 100, "topology.state.guarantee": guarantee,
            "topology.workers": 3, "topology.message.timeout.secs": 5, "topology.state.provider": "memory"}
    with LocalCluster() as cluster:
        cluster.submit_topology(name, conf, topo)
        tid = cluster.get_topology_id(name)
        wait_until(lambda: sum(committed_counts(run).values()) >= 200, 30, what="a first checkpoint with words")
        victim = next(w for w in cluster.workers(tid) if any(ex.component_id == "count" for ex in w.runtime.executors))
        victim.stop()
        wait_until(lambda: victim not in cluster.workers(tid) and len(cluster.workers(tid)) == 3, 30,
                   what="the worker restarted by its supervisor")
        want = truth(WORDS)
        if exactly:
            wait_until(lambda: committed_counts(run) == want, 60, what="the exact counts committed")
            assert counts(run) == want
        else:
            wait_until(lambda: len(run.acked) == len(WORDS), 60, what="every word acked")
            got = committed_counts(run)
            assert all(got[w] >= n for w, n in want.items()), (got, want)
        cluster.kill_topology(name, wait_secs=0)
