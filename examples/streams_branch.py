"""storm-starter's BranchExample in the Stream API: a stream of integers split into evens and odds.

Run it in-process:  storm-py local examples.streams_branch:build --ttl 10
"""

from __future__ import annotations

from typing import Any

from examples.streams_spouts import RandomIntegerSpout
from storm_py import Spout
from storm_py.api.topology import StormTopology
from storm_py.streams import StreamBuilder, ValueMapper


def branch(builder: StreamBuilder, spout: Spout, evens: Any, odds: Any) -> None:
    """Even values go to ``evens``, odd ones to ``odds``."""
    even_stream, odd_stream = builder.new_stream(spout, ValueMapper(0)).branch(lambda x: x % 2 == 0,
                                                                             lambda x: x % 2 == 1)
    even_stream.for_each(evens)
    odd_stream.for_each(odds)


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """The topology, printing each branch."""
    builder = StreamBuilder()
    branch(builder, RandomIntegerSpout(), lambda x: print("EVEN>", x), lambda x: print("ODD>", x))
    return builder.build()
