"""examples/sliding_window_sum.py in LocalCluster: the running window sums equal the sums of the last 30 values."""

from __future__ import annotations

import random

from examples.sliding_window_sum import topology_builder
from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.testing import TrackedTopology, tracked_wait
from tests.windowing.test_windows_local import Capture, Record


def test_sliding_window_sum_example():
    rng = random.Random(7)
    values = [rng.randrange(1000) for _ in range(60)]
    expected = [[sum(values[max(0, k - 30):k])] for k in range(10, 61, 10)]
    builder = topology_builder({"window.tuples": 60, "window.seed": 7})
    sums, avgs = Record(), Record()
    builder.set_bolt("sums", Capture(sums)).shuffle_grouping("slidingsum")
    builder.set_bolt("avgs", Capture(avgs)).shuffle_grouping("tumblingavg")
    with LocalCluster(supervisors=1, ports_per_supervisor=2, simulated_time=True) as cluster:
        tracked = TrackedTopology(builder.create_topology(), cluster)
        cluster.submit_topology("sliding-window-sum", {}, tracked)
        tracked_wait(tracked, 60)
        wait_until(lambda: len(sums.snapshot()) == 6, 10, what="six window sums")
        assert sums.snapshot() == expected
        assert avgs.snapshot() == [[sum(s[0] for s in expected[:3]) / 3], [sum(s[0] for s in expected[3:]) / 3]]
