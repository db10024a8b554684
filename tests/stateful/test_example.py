"""examples/stateful_word_count.py against a real Redis: a second run's counts go on from the first run's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from examples import stateful_word_count as example
from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.dev.zookeeper import free_port

REPO = Path(__file__).resolve().parents[2]


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


def test_an_unreachable_redis_is_one_line_not_a_traceback():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    run = subprocess.run([sys.executable, str(REPO / "examples" / "stateful_word_count.py"), "--redis",
                          f"127.0.0.1:{free_port()}", "--rounds", "1"], capture_output=True, text=True, timeout=120,
                         check=False, cwd=REPO, env=env)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith("stateful_word_count: cannot list the states of 'count' in Redis"), line
