"""LocalCluster and the garbage collector: the workers' worker.gc.threshold0, in the user's process only when asked."""

from __future__ import annotations

import gc

from storm_py import LocalCluster


def test_a_local_cluster_leaves_the_collector_alone_unless_its_conf_names_the_key():
    before = gc.get_threshold()
    with LocalCluster(supervisors=1, ports_per_supervisor=1):
        assert gc.get_threshold() == before
    with LocalCluster(supervisors=1, ports_per_supervisor=1, daemon_conf={"worker.gc.threshold0": 54_321}):
        assert gc.get_threshold() == (54_321, *before[1:])
    assert gc.get_threshold() == before, "the user's threshold is back after shutdown"
