"""After ``rebalance --tasks`` under at_least_once with Storm's 30 s message timeout, the keyed count commits again
within seconds: no worker's spout emits while a slot of the assignment still runs the previous layout, so the
checkpoint spout's recovery tuple is not lost to one and waited for until it times out."""

from __future__ import annotations

from typing import Any

from storm_py import LocalCluster
from storm_py.clock import SYSTEM_CLOCK, wait_until
from tests.rescale.components import keyed_count_topology, new_run, truth, words
from tests.rescale.test_local_rescale import CONF, _committed, _count_tasks

#: far below the message timeout a lost recovery tuple would be waited for (30 s, often twice)
RESUME_SECS = 12.0


def test_the_counts_resume_within_seconds_after_rescaling_the_tasks_under_at_least_once() -> None:
    name = "rescale-resume"
    run = new_run(name)
    ws = words(50, 1000)
    want = truth(ws)
    conf: dict[str, Any] = {**CONF, "topology.state.guarantee": "at_least_once", "topology.message.timeout.secs": 30}
    with LocalCluster() as cluster:
        cluster.submit_topology(name, conf, keyed_count_topology(name, ws, 4))
        tid = cluster.get_topology_id(name)
        assert tid is not None
        run.go_until = 500
        wait_until(lambda: sum(_committed(cluster, tid).values()) >= 500, 90, what="the first half committed")
        cluster.rebalance(name, wait_secs=0, tasks={"count": 8})
        started = SYSTEM_CLOCK.now()
        run.go_until = len(ws)
        wait_until(lambda: all(_committed(cluster, tid)[w] >= n for w, n in want.items()), 90, interval=0.05,
                   what="every count committed after the rescale")
        took = SYSTEM_CLOCK.now() - started
        assert took < RESUME_SECS, f"the counts resumed only {took:.1f}s after the rescale"
        assert len(_count_tasks(cluster, tid)) == 8
        cluster.kill_topology(name, wait_secs=0)
