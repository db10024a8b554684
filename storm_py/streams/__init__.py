"""storm_py.streams: Storm 2.x's Stream API — a typed, functional layer (``StreamBuilder``, ``Stream``,
``PairStream``) that plans the user's operations onto generated bolts and builds an ordinary ``StormTopology``.

The graph (:mod:`~storm_py.streams.nodes`) is built by :mod:`~storm_py.streams.stream`'s operations, planned into
bolts by :mod:`~storm_py.streams.planner`, run by :mod:`~storm_py.streams.bolts` through the fused chains of
:mod:`~storm_py.streams.processors`; windows come from :mod:`~storm_py.streams.windows`, the functional interfaces
from :mod:`~storm_py.streams.operations`, the aggregators from :mod:`storm_py.streams.aggregators`.
"""

from __future__ import annotations

from storm_py.streams import aggregators as aggregators  # the submodule, Storm's operations.aggregators
from storm_py.streams.builder import StreamBuilder
from storm_py.streams.operations import (
    BiFunction,
    CombinerAggregator,
    Consumer,
    FlatMapFunction,
    Function,
    IdentityFunction,
    Pair,
    PairFlatMapFunction,
    PairFunction,
    PairValueJoiner,
    PairValueMapper,
    Predicate,
    PrintConsumer,
    Reducer,
    StateUpdater,
    TupleValueMappers,
    ValueJoiner,
    ValueMapper,
    ValuesMapper,
)
from storm_py.streams.stream import PairStream, Stream, StreamState
from storm_py.streams.windows import SlidingWindows, TumblingWindows, Window

__all__ = [
    "BiFunction",
    "CombinerAggregator",
    "Consumer",
    "FlatMapFunction",
    "Function",
    "IdentityFunction",
    "Pair",
    "PairFlatMapFunction",
    "PairFunction",
    "PairStream",
    "PairValueJoiner",
    "PairValueMapper",
    "Predicate",
    "PrintConsumer",
    "Reducer",
    "SlidingWindows",
    "StateUpdater",
    "Stream",
    "StreamBuilder",
    "StreamState",
    "TumblingWindows",
    "TupleValueMappers",
    "ValueJoiner",
    "ValueMapper",
    "ValuesMapper",
    "Window",
]
