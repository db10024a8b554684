"""topology.state.guarantee exactly_once in LocalCluster (in-memory provider): counts equal the truth exactly
after a bolt raised and a prepare failed, and after a worker died; a non-StatefulSpout is refused at submit."""

from __future__ import annotations

import pytest

from storm_py import InvalidTopologyException, LocalCluster
from storm_py.clock import wait_until
from tests.stateful.components import committed_counts, counts, new_run, truth, word_count_topology

WORDS = ["apple", "pear", "fig", "kiwi", "plum", "lime"] * 60
EXACTLY_ONCE = {"topology.state.checkpoint.interval.ms": 100, "topology.state.guarantee": "exactly_once",
                "topology.state.provider": "memory"}  # committed_counts reads the in-memory stores


def test_counts_are_exact_after_a_bolt_raises_and_a_prepare_fails():
    run = new_run("eo-raise")
    topo = word_count_topology("eo-raise", WORDS, stateful_spout=True, raise_on=("fig",), fail_prepare=2)
    with LocalCluster() as cluster:
        cluster.submit_topology("eo-raise", EXACTLY_ONCE, topo)
        wait_until(lambda: "failed_prepare" in run.hook_names(), 60, what="the failed prepare")
        wait_until(lambda: committed_counts(run) == truth(WORDS), 60, what="the exact counts committed")
        assert run.hook_names().count("spout_init") >= 2  # restarted (both failures may fall in one restart)
        assert run.emitted > len(WORDS)  # the spout replayed from its restored position
        assert counts(run) == truth(WORDS)  # and nothing runs ahead uncommitted
        cluster.kill_topology("eo-raise", wait_secs=0)


def test_exactly_once_refuses_a_spout_that_keeps_no_state():
    new_run("eo-refused")
    topo = word_count_topology("eo-refused", WORDS)
    with LocalCluster() as cluster, pytest.raises(InvalidTopologyException, match="spout 'words'"):
        cluster.submit_topology("eo-refused", EXACTLY_ONCE, topo)
