"""storm_py: Apache Storm's stream-processing model, natively in Python (public API: ``docs/REFERENCE.md``)."""

from __future__ import annotations

# isort: off
import storm_py.build  # noqa: F401  (first: it refuses stale compiled modules before any is imported)

# isort: on
from storm_py.api.async_bolt import AsyncBolt
from storm_py.api.components import (
    BasicBolt,
    Bolt,
    CustomStreamGrouping,
    OutputFieldsDeclarer,
    Spout,
)
from storm_py.api.config import Config
from storm_py.api.context import TopologyContext
from storm_py.api.credentials import CredentialsListener
from storm_py.api.topology import BoltDeclarer, SpoutDeclarer, StormTopology, TopologyBuilder
from storm_py.api.tuple import Fields, MessageId, Tuple
from storm_py.errors import (
    AlreadyAliveException,
    FailedException,
    InvalidTopologyException,
    NotAliveException,
    ReportedFailedException,
)
from storm_py.stateful import BaseStatefulBolt, BaseStatefulWindowedBolt, KeyValueState, StatefulSpout
from storm_py.vector import SchemaMismatchException, VectorBolt, VectorSpout, WindowedVectorBolt
from storm_py.version import __version__ as __version__
from storm_py.windowing import BaseWindowedBolt, Count, Duration, TupleWindow

__all__ = [
    "AlreadyAliveException",
    "AsyncBolt",
    "BaseStatefulBolt",
    "BaseStatefulWindowedBolt",
    "BaseWindowedBolt",
    "BasicBolt",
    "Bolt",
    "BoltDeclarer",
    "Config",
    "Count",
    "CredentialsListener",
    "CustomStreamGrouping",
    "Duration",
    "FailedException",
    "Fields",
    "InvalidTopologyException",
    "KeyValueState",
    "LocalCluster",
    "MessageId",
    "NotAliveException",
    "OutputFieldsDeclarer",
    "ReportedFailedException",
    "SchemaMismatchException",
    "Spout",
    "SpoutDeclarer",
    "StatefulSpout",
    "StormTopology",
    "TopologyBuilder",
    "TopologyContext",
    "Tuple",
    "TupleWindow",
    "VectorBolt",
    "VectorSpout",
    "WindowedVectorBolt",
]


def __getattr__(name: str) -> object:
    # LocalCluster pulls in the daemons; import it lazily so ``import storm_py`` stays light.
    if name == "LocalCluster":
        from storm_py.local import LocalCluster

        return LocalCluster
    raise AttributeError(f"module 'storm_py' has no attribute {name!r}")
