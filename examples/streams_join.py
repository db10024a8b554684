"""storm-starter's JoinExample in the Stream API: the squares of even numbers joined with the squares of odd
numbers on their key, within tumbling windows of five seconds.

Run it in-process:  storm-py local examples.streams_join:build --ttl 10
"""

from __future__ import annotations

from typing import Any

from examples.streams_spouts import NumberSpout
from storm_py import Duration, Spout
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


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """The topology, printing the joined pairs (even and odd numbers never share a key: storm-starter prints
    nothing either until the spouts' keys overlap)."""
    builder = StreamBuilder()
    join(builder, NumberSpout(_even), NumberSpout(_odd), print)
    return builder.build()
