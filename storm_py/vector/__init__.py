"""Columnar streams: streams whose tuples carry Arrow batches of rows, the spouts and bolts that emit and take
them, their groupings, their wire form, and views of a batch as data frames."""

from __future__ import annotations

from storm_py.vector import wire as wire
from storm_py.vector.batches import SchemaMismatchException
from storm_py.vector.components import VectorBolt, VectorOutputCollector, VectorSpout
from storm_py.vector.views import as_pandas, as_polars
from storm_py.vector.windowed import TableWindow, WindowedVectorBolt

__all__ = [
    "SchemaMismatchException",
    "TableWindow",
    "VectorBolt",
    "VectorOutputCollector",
    "VectorSpout",
    "WindowedVectorBolt",
    "as_pandas",
    "as_polars",
]
