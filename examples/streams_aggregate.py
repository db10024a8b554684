"""storm-starter's AggregateExample in the Stream API: the average of the positive values of each window of five
seconds, with a ``CombinerAggregator`` keeping ``(sum, count)``.

Run it in-process:  storm-py local examples.streams_aggregate:build --ttl 10
"""

from __future__ import annotations

from typing import Any

from examples.streams_spouts import RandomIntegerSpout
from storm_py import Duration, Spout
from storm_py.api.topology import StormTopology
from storm_py.streams import CombinerAggregator, StreamBuilder, TumblingWindows, ValueMapper, Window


class Avg(CombinerAggregator):
    """The average: the accumulator is ``(sum, count)``."""

    def init(self) -> tuple[int, int]:
        return (0, 0)

    def apply(self, accumulator: Any, value: Any) -> tuple[int, int]:
        return (accumulator[0] + value, accumulator[1] + 1)

    def merge(self, acc1: Any, acc2: Any) -> tuple[int, int]:
        return (acc1[0] + acc2[0], acc1[1] + acc2[1])

    def result(self, accumulator: Any) -> float:
        return float(accumulator[0]) / accumulator[1]


def aggregate(builder: StreamBuilder, spout: Spout, out: Any, window: Window | None = None) -> None:
    """Per window: the average of its positive values, given to ``out``."""
    (builder.new_stream(spout, ValueMapper(0))
     .window(window or TumblingWindows.of(Duration.seconds(5)))
     .filter(lambda x: x > 0)
     .aggregate(Avg())
     .for_each(out))


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """The topology, printing each window's average."""
    builder = StreamBuilder()
    aggregate(builder, RandomIntegerSpout(), print)
    return builder.build()
