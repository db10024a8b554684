"""examples/trident_word_count.py: the Trident tutorial's word count counts every word exactly."""

from __future__ import annotations

from collections import Counter

from examples import trident_word_count as example
from storm_py.local import LocalCluster
from storm_py.trident import MemoryMapState
from tests.trident.helpers import wait


def test_the_tutorial_word_count_counts_every_word() -> None:
    factory = MemoryMapState.factory("opaque")
    expected = Counter(w for (s,) in example.SENTENCES for w in s.split(" "))
    with LocalCluster() as cluster:
        cluster.submit_topology("twc", {"topology.max.spout.pending": 3},
                                example.build_topology(factory, cycle=False))
        wait(lambda: len(factory.values()) == len(expected), "every sentence counted")
    assert {w: c for (w,), c in factory.values().items()} == dict(expected)
    assert example.build({}).components()
