"""storm-starter's BasicDRPCTopology: the DRPC function ``exclamation`` appends ``!`` to its argument.

Run it in-process:  python -m examples.basic_drpc
On a cluster:       storm-py submit . examples.basic_drpc:build --name exclamation --config CLUSTER/storm.yaml
                    storm-py drpc-client exclamation hello goodbye --config CLUSTER/storm.yaml
"""

from __future__ import annotations

from typing import Any

from storm_py import BasicBolt
from storm_py.api.components import BasicOutputCollector, OutputFieldsDeclarer
from storm_py.api.topology import StormTopology
from storm_py.api.tuple import Tuple
from storm_py.drpc import LinearDRPCTopologyBuilder, LocalDRPC


class ExclaimBolt(BasicBolt):
    """``[id, input]`` -> ``[id, input + "!"]``."""

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        collector.emit([tup.values[0], tup.values[1] + "!"])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "result"])


def construct() -> LinearDRPCTopologyBuilder:
    """The exclamation function."""
    builder = LinearDRPCTopologyBuilder("exclamation")
    builder.add_bolt(ExclaimBolt(), 3)
    return builder


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """The exclamation topology served through ``drpc.servers``."""
    return construct().create_remote_topology()


def main() -> None:
    """Run it in-process and print a few results."""
    from storm_py import Config, LocalCluster

    with LocalDRPC() as drpc, LocalCluster() as cluster:
        cluster.submit_topology("drpc-demo", Config(), construct().create_local_topology(drpc))
        for word in ("hello", "goodbye"):
            print(f"Result for {word!r}: {drpc.execute('exclamation', word)}")


if __name__ == "__main__":
    main()
