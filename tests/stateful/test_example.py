"""examples/stateful_word_count.py against a real Redis: a second run's counts go on from the first run's."""

from __future__ import annotations

from collections import Counter

from examples import stateful_word_count as example
from storm_py import LocalCluster
from storm_py.clock import wait_until


def test_stateful_word_count_example_survives_a_restart(redis_server):
    conf = example.topology_conf(redis_server.host, redis_server.port, rounds=3)
    conf["topology.state.checkpoint.interval.ms"] = 100
    once = Counter(w for s in example.SENTENCES for w in s.split() for _ in range(3))
    for run in (1, 2):
        with LocalCluster() as cluster:
            cluster.submit_topology("swc", conf, example.build(conf))
            want = Counter({w: n * run for w, n in once.items()})
            wait_until(lambda want=want: example.committed_counts(conf) == want, 60, interval=0.1,
                       what=f"run {run}'s counts committed")
            cluster.kill_topology("swc", wait_secs=0)
