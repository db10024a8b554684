"""storm-starter's JoinExample in the Stream API: the squares of even numbers joined with the squares of odd
numbers on their key, within tumbling windows of five seconds (here each odd number is keyed by the even number
before it, so every even number meets the odd one after it).

Run it in-process:  storm-py local examples.streams_join:build --ttl 10
"""

from __future__ import annotations

from typing import Any, cast

from examples.streams_spouts import NumberSpout
from storm_py import Duration, Spout
from storm_py.api.components import SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.topology import StormTopology
from storm_py.streams import PairValueJoiner, PairValueMapper, StreamBuilder, TumblingWindows, Window


def join(builder: StreamBuilder, evens: Spout, odds: Spout, out: Any, window: Window | None = None) -> None:
    """``(key, (even square, odd square))`` for the keys both streams carry in a window, given to ``out``."""
    even_squares = builder.new_stream(evens, PairValueMapper(0, 1))
    odd_squares = builder.new_stream(odds, PairValueMapper(0, 1))
    (even_squares.window(window or TumblingWindows.of(Duration.seconds(5)))
     .join(odd_squares, PairValueJoiner())
     .for_each(out))


def _even(i: int) -> bool:
    return i % 2 == 0


def _odd(i: int) -> bool:
    return i % 2 == 1


class PrecedingEvenSpout(NumberSpout):
    """Odd numbers ``i`` as ``[i - 1, i * i]``: keyed by the even number before them."""

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        super().open(conf, context, cast(SpoutOutputCollector, _KeyedBefore(collector)))


class _KeyedBefore:
    """A collector emitting ``[key - 1, value]`` for ``[key, value]``."""

    def __init__(self, collector: SpoutOutputCollector) -> None:
        self.collector = collector

    def emit(self, values: list[Any], *args: Any, **kwargs: Any) -> Any:
        return self.collector.emit([values[0] - 1, *values[1:]], *args, **kwargs)


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """The topology, printing ``(even number, (its square, the next odd number's square))`` every window."""
    builder = StreamBuilder()
    join(builder, NumberSpout(_even), PrecedingEvenSpout(_odd), print)
    return builder.build()
