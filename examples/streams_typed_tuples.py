"""storm-starter's TypedTupleExample in the Stream API: spout tuples read as typed 3-tuples
(``TupleValueMappers.of(0, 1, 2)``), keyed by their timestamp divided by 10000, grouped per key in tumbling
windows of ten values.

Run it in-process:  storm-py local examples.streams_typed_tuples:build --ttl 10
"""

from __future__ import annotations

from typing import Any

from examples.streams_spouts import RandomIntegerSpout
from storm_py import Count, Spout
from storm_py.api.topology import StormTopology
from storm_py.streams import Pair, StreamBuilder, TumblingWindows, TupleValueMappers


def typed_tuples(builder: StreamBuilder, spout: Spout, out: Any, length: int = 10) -> None:
    """Per window of ``length`` values: ``(ts // 10000, [values with that key])``, given to ``out``."""
    (builder.new_stream(spout, TupleValueMappers.of(0, 1, 2))
     .map_to_pair(lambda t: Pair.of(t[1] // 10000, t[0]))
     .window(TumblingWindows.of(Count.of(length)))
     .group_by_key()
     .for_each(out))


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """The topology, printing each window's groups."""
    builder = StreamBuilder()
    typed_tuples(builder, RandomIntegerSpout(), print)
    return builder.build()
