"""The Redis state provider against a real redis-server: the state's two-phase commits, a stateful word count
whose counts survive a kill and a resubmit, and a Redis outage during a run (checkpoints fail, are retried, and
processing resumes)."""

from __future__ import annotations

from collections import Counter

import pytest

from storm_py import LocalCluster, NotAliveException
from storm_py.clock import Deadline, wait_until
from storm_py.dev.redis import RedisServerProcess
from storm_py.errors import ConfigError, StateBackendError
from storm_py.stateful.state.redis_state import RedisKeyValueState, redis_client
from tests.stateful.components import counts, new_run, truth, word_count_topology

WORDS = ["apple", "pear", "fig", "kiwi", "plum", "lime"] * 30


def provider(server: RedisServerProcess, prefix: str = "test:") -> dict:
    return {"topology.state.provider": "redis",
            "topology.state.provider.config": {"port": server.port, "key_prefix": prefix, "timeout_secs": 1},
            "topology.state.checkpoint.interval.ms": 100}


def gone(cluster: LocalCluster, name: str) -> bool:
    try:
        cluster.get_topology_summary(name)
    except NotAliveException:
        return True
    return False


def test_redis_state_commits_in_two_phases_and_a_restart_finds_the_prepared_changes(redis_server):
    config = {"port": redis_server.port, "key_prefix": "unit:"}
    state = RedisKeyValueState.from_config("count-3", config)
    state.put("a", 1)
    state.put(("k", 2), {"x": [1, 2]})
    state.prepare_commit(0)
    state.commit(0)
    state.put("a", 2)
    state.delete(("k", 2))
    assert state.get("a") == 2 and state.get(("k", 2)) is None and len(state) == 1
    state.prepare_commit(1)
    again = RedisKeyValueState.from_config("count-3", config)  # the task died between prepare and commit
    assert again.get("a") == 2  # the prepared changes are found...
    again.commit(1)  # ...and committed by the recovery
    fresh = RedisKeyValueState.from_config("count-3", config)
    assert dict(fresh) == {"a": 2} and fresh.committed_txid() == 1
    fresh.put("a", 3)
    fresh.prepare_commit(2)
    fresh.rollback()
    assert dict(RedisKeyValueState.from_config("count-3", config)) == {"a": 2}
    with pytest.raises(StateBackendError, match="cannot commit txid 2"):
        fresh.commit(2)
    client = redis_client({"port": redis_server.port})
    assert all(k.startswith(b"unit:") for k in client.keys("*"))


def test_bad_redis_settings_name_the_key():
    with pytest.raises(ConfigError, match=r"unknown keys \[.hots.\]"):
        redis_client({"hots": "x"})
    with pytest.raises(ConfigError, match=r"topology\.state\.provider\.config .* is invalid"):
        redis_client({"port": "six"})


def test_a_stopped_redis_is_a_state_backend_error(redis_server):
    state = RedisKeyValueState.from_config("count-3", {"port": redis_server.port, "timeout_secs": 1})
    redis_server.stop()
    state.put("a", 1)  # in memory until the prepare
    with pytest.raises(StateBackendError, match="'storm_py:count-3' cannot prepare txid 0"):
        state.prepare_commit(0)


def test_counts_survive_kill_and_resubmit(redis_server):
    conf = provider(redis_server)
    first = new_run("redis-first")
    with LocalCluster() as cluster:
        cluster.submit_topology("wc", conf, word_count_topology("redis-first", WORDS))
        wait_until(lambda: len(first.acked) == len(WORDS), 60, what="the first run's words acked")
        cluster.kill_topology("wc", wait_secs=0)
        wait_until(lambda: gone(cluster, "wc"), 30, what="the killed topology gone")
        more = ["apple", "fig"] * 10
        second = new_run("redis-second")
        cluster.submit_topology("wc", conf, word_count_topology("redis-second", more))
        wait_until(lambda: len(second.acked) == len(more), 60, what="the second run's words acked")
        got, want = counts(second), truth(WORDS + more)
        assert all(got[w] >= n for w, n in want.items()), (got, want)
        assert got == want  # nothing failed: exactly the truth
        cluster.kill_topology("wc", wait_secs=0)
    client = redis_client({"port": redis_server.port})
    keys = {k.decode() for k in client.keys("*")}
    assert keys and all(k.startswith("test:") for k in keys)
    assert any(k.startswith("test:$checkpointspout-") for k in keys)  # the checkpoint spout's state too


@pytest.mark.parametrize("outage_secs", [2, pytest.param(20, marks=pytest.mark.slow)])
def test_a_redis_outage_fails_checkpoints_which_are_retried_and_processing_resumes(redis_server, outage_secs):
    name = f"outage-{outage_secs}"
    run = new_run(name)
    run.go = False
    words = WORDS * 2
    conf = {**provider(redis_server), "topology.message.timeout.secs": 60}
    with LocalCluster() as cluster:
        cluster.submit_topology("outage", conf, word_count_topology(name, words))
        wait_until(lambda: "pre_commit" in run.hook_names(), 30, what="a first checkpoint")
        redis_server.stop()
        commits = run.hook_names().count("pre_commit")
        run.go = True  # the words flow while Redis is away
        outage = Deadline(outage_secs)
        wait_until(outage.expired, outage_secs + 5, interval=0.1, what="the outage")
        assert not run.acked  # no checkpoint commits without Redis: no word is acked
        redis_server.start()
        wait_until(lambda: len(run.acked) == len(words), 120, what="every word acked after the outage")
        assert run.hook_names().count("pre_commit") > commits  # checkpoints resumed
        assert run.failed > 0  # words that could not read their count were failed and replayed
        got, want = counts(run), truth(words)
        assert all(got[w] >= n for w, n in want.items()), (got, want)
        cluster.kill_topology("outage", wait_secs=0)


@pytest.mark.parametrize("outage_secs", [2, pytest.param(20, marks=pytest.mark.slow)])
def test_exactly_once_counts_survive_a_redis_outage(redis_server, outage_secs):
    """Nothing lost or doubled: the committed counts in Redis equal the truth after the outage."""
    name = f"eo-outage-{outage_secs}"
    run = new_run(name)
    run.go = False
    words = WORDS * 2
    conf = {**provider(redis_server, prefix=f"{name}:"), "topology.state.guarantee": "exactly_once"}
    config = conf["topology.state.provider.config"]

    def committed() -> Counter:
        out: Counter = Counter()
        for state in RedisKeyValueState.committed_of("count", config).values():
            out.update(state)
        return out

    with LocalCluster() as cluster:
        cluster.submit_topology(name, conf, word_count_topology(name, words, stateful_spout=True))
        wait_until(lambda: "pre_prepare" in run.hook_names(), 30, what="a first checkpoint")
        redis_server.stop()
        run.go = True  # the words flow while Redis is away
        outage = Deadline(outage_secs)
        wait_until(outage.expired, outage_secs + 5, interval=0.1, what="the outage")
        redis_server.start()
        # (whether the outage hit a write, and so restarted every component, depends on where it struck)
        wait_until(lambda: committed() == truth(words), 120, interval=0.2, what="the exact counts committed")
        cluster.kill_topology(name, wait_secs=0)
