"""A topology whose bolt subscribes to a component that does not exist."""

from typing import Any

from storm_py import TopologyBuilder
from storm_py.testing import TestWordCounter, TestWordSpout


def build() -> Any:
    builder = TopologyBuilder()
    builder.set_spout("words", TestWordSpout(), 1)
    builder.set_bolt("count", TestWordCounter(), 2).fields_grouping("wrods", ["word"])
    return builder.create_topology()
