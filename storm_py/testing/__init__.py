"""storm_py.testing: Storm's test kit — complete topologies, tracked topologies, feeders, trackers.

Public names: ``docs/REFERENCE.md``.
"""

from storm_py.testing.complete import capture_topology, complete_topology, read_tuples
from storm_py.testing.components import (
    CaptureBolt,
    FixedTupleSpout,
    NGrouping,
    TestAggregatesCounter,
    TestGlobalCount,
    TestWordCounter,
    TestWordSpout,
    multiset_eq,
    test_tuple,
)
from storm_py.testing.tracked import TrackedTopology, tracked_wait
from storm_py.testing.trackers import AckFailDelegate, AckFailMapTracker, AckTracker, FeederSpout

__all__ = [
    "AckFailDelegate",
    "AckFailMapTracker",
    "AckTracker",
    "CaptureBolt",
    "FeederSpout",
    "FixedTupleSpout",
    "NGrouping",
    "TestAggregatesCounter",
    "TestGlobalCount",
    "TestWordCounter",
    "TestWordSpout",
    "TrackedTopology",
    "capture_topology",
    "complete_topology",
    "multiset_eq",
    "read_tuples",
    "test_tuple",
    "tracked_wait",
]
