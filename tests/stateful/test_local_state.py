"""Stateful word count in LocalCluster with the in-memory provider: checkpoints through the whole topology,
held acks, recovery after a bolt raises and after a failed checkpoint, and checkpoints on the cluster's clock."""

from __future__ import annotations

from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.stateful.at_least_once.checkpoint import CHECKPOINT_COMPONENT_ID, CHECKPOINT_STREAM_ID
from tests.stateful.components import counts, new_run, truth, word_count_topology

WORDS = ["apple", "pear", "fig", "kiwi", "plum", "lime"] * 40
FAST = {"topology.state.checkpoint.interval.ms": 100, "topology.state.provider": "memory"}


def test_builder_wires_the_checkpoint_spout_and_stream_through_every_bolt():
    topo = word_count_topology("wiring", WORDS)
    assert topo.spouts[CHECKPOINT_COMPONENT_ID].streams[CHECKPOINT_STREAM_ID][0].to_list() == ["txid", "action"]
    assert (CHECKPOINT_COMPONENT_ID, CHECKPOINT_STREAM_ID) in topo.bolts["split"].inputs  # fed by a spout
    assert ("split", CHECKPOINT_STREAM_ID) in topo.bolts["count"].inputs
    assert ("count", CHECKPOINT_STREAM_ID) in topo.bolts["sink"].inputs
    assert all(grouping.kind == "all" for spec in topo.bolts.values()
               for (_, stream), grouping in spec.inputs.items() if stream == CHECKPOINT_STREAM_ID)


def test_counts_survive_a_bolt_raising_and_a_failed_checkpoint():
    """at_least_once: no count is ever lower than the truth, after an input raised and checkpoint 0 failed."""
    run = new_run("raising")
    topo = word_count_topology("raising", WORDS, raise_on=("fig",), fail_prepare=0)
    with LocalCluster() as cluster:
        cluster.submit_topology("raising", FAST, topo)
        wait_until(lambda: len(run.acked) == len(WORDS), 60, what="every word acked")
        got, want = counts(run), truth(WORDS)
        assert all(got[w] >= n for w, n in want.items()), (got, want)
        hooks = run.hook_names()
        assert "failed_prepare" in hooks and "pre_rollback" in hooks  # the failed checkpoint was rolled back
        assert hooks.count("init_state") >= 4  # two tasks, initialised at start and again after the recovery
        assert "pre_commit" in hooks
        assert run.failed >= 1  # the raising input and the rolled-back ones were replayed
        assert run.seen_streams == {"default"}  # no user bolt ever saw a checkpoint tuple
        cluster.kill_topology("raising", wait_secs=0)


def test_acks_wait_for_the_checkpoint_and_checkpoints_follow_the_cluster_clock():
    run = new_run("clock")
    run.go = False
    topo = word_count_topology("clock", WORDS, counters=1)
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("clock", {"topology.state.checkpoint.interval.ms": 5000}, topo)
        wait_until(lambda: "pre_commit" in run.hook_names(), 30, what="the first checkpoint, taken at once")
        run.go = True
        wait_until(lambda: sum(counts(run).values()) == len(WORDS), 30, what="every word counted")
        assert not run.acked  # counted, not checkpointed: the acks are held
        assert run.hook_names().count("pre_commit") == 1  # the clock stands still: no second checkpoint
        cluster.advance_cluster_time(6)
        wait_until(lambda: len(run.acked) == len(WORDS), 30, what="every word acked after the next checkpoint")
        assert run.hook_names().count("pre_commit") == 2
        assert counts(run) == truth(WORDS)
        cluster.kill_topology("clock", wait_secs=0)


def test_a_stateful_spout_is_checkpointed_with_the_bolts_under_at_least_once():
    from storm_py.stateful.state.key_value import MEMORY_STORES

    run = new_run("spout-state")
    words = WORDS[:60]
    topo = word_count_topology("spout-state", words, counters=1, stateful_spout=True)
    with LocalCluster() as cluster:
        cluster.submit_topology("spout-state", FAST, topo)
        tid = cluster.get_topology_id("spout-state")
        spout_tasks = [t for w in cluster.workers(tid) for ex in w.runtime.executors if ex.component_id == "words"
                       for t in ex.task_ids]
        store = MEMORY_STORES.store(tid, f"words-{spout_tasks[0]}")
        wait_until(lambda: store.committed.get("pos") == len(words), 30, what="the spout's position committed")
        wait_until(lambda: counts(run) == truth(words), 30, what="the counts")
        assert run.hook_names().count("spout_init") == 1  # init_state after open, no recovery happened
        cluster.kill_topology("spout-state", wait_secs=0)


def test_complete_topology_runs_a_stateful_topology_to_the_end():
    from storm_py.testing import complete_topology, read_tuples

    new_run("complete")
    topo = word_count_topology("complete", [], counters=2)
    with LocalCluster(simulated_time=True) as cluster:
        results = complete_topology(cluster, topo, mocked_sources={"words": [["a"], ["b"], ["a"]]},
                                    storm_conf=FAST)
    assert sorted(read_tuples(results, "count")) == [["a", 1], ["a", 2], ["b", 1]]
    assert read_tuples(results, CHECKPOINT_COMPONENT_ID, CHECKPOINT_STREAM_ID)[0] == [-1, "INITSTATE"]
