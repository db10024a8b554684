"""A function that forgets to return the topology."""

from storm_py import TopologyBuilder
from storm_py.testing import TestWordSpout


def build() -> None:
    builder = TopologyBuilder()
    builder.set_spout("words", TestWordSpout(), 1)
    builder.create_topology()
