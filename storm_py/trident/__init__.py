"""storm_py.trident: Storm 2.x Trident, the exactly-once high-level API over transactional batches.

Streams are declared on a :class:`TridentTopology` (:mod:`~storm_py.trident.stream`), planned into bolts
(:mod:`~storm_py.trident.planner`) that run fused processors (:mod:`~storm_py.trident.processors`,
:mod:`~storm_py.trident.bolt`), fed by Trident spouts (:mod:`~storm_py.trident.spout`) through the
transactional coordinator, and kept in Trident state (:mod:`~storm_py.trident.state`).
"""

import importlib

from storm_py.transactional.map_state import OpaqueValue, TransactionalValue
from storm_py.trident.assemblies import FirstN
from storm_py.trident.builtin import Count, Debug, FilterNull, MapGet, Sum
from storm_py.trident.operation import (
    BaseAggregator,
    BaseFilter,
    BaseFunction,
    CombinerAggregator,
    ReducerAggregator,
    TridentCollector,
)
from storm_py.trident.redis_state import RedisMapState
from storm_py.trident.spout import FixedBatchSpout, TridentSpout
from storm_py.trident.state import (
    BaseQueryFunction,
    BaseStateUpdater,
    CachedMap,
    MapState,
    MemoryMapState,
    State,
    StateFactory,
)
from storm_py.trident.stream import Assembly, GroupedStream, Stream, TridentState, TridentTopology
from storm_py.trident.tuple import TridentTuple

#: names served from the packages above this one, imported on first use (the Spark side's Parquet state)
_LAZY = {"ParquetState": "storm_py.spark.trident", "ParquetUpdater": "storm_py.spark.trident"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'storm_py.trident' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "Assembly",
    "BaseAggregator",
    "BaseFilter",
    "BaseFunction",
    "BaseQueryFunction",
    "BaseStateUpdater",
    "CachedMap",
    "CombinerAggregator",
    "Count",
    "Debug",
    "FilterNull",
    "FirstN",
    "FixedBatchSpout",
    "GroupedStream",
    "MapGet",
    "MapState",
    "MemoryMapState",
    "OpaqueValue",
    "ParquetState",
    "ParquetUpdater",
    "RedisMapState",
    "ReducerAggregator",
    "State",
    "StateFactory",
    "Stream",
    "Sum",
    "TransactionalValue",
    "TridentCollector",
    "TridentSpout",
    "TridentState",
    "TridentTopology",
    "TridentTuple",
]
