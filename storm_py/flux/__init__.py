"""Flux: topologies defined in YAML (Storm 2.x's flux-core and flux-wrappers, in Python).

A YAML file names the topology's components, spouts, bolts, streams, config and includes (or a ``topologySource``
that builds it in code); :func:`load` reads it, :func:`build` constructs it::

    from storm_py import LocalCluster
    from storm_py import flux

    t = flux.build(flux.load("simple_wordcount.yaml"))
    with LocalCluster() as cluster:
        cluster.submit_topology(t.name, t.conf, t.topology)

Storm's own class names map to storm_py's (:data:`storm_py.flux.registry.COMPATIBILITY`), so Storm's Flux files
run unchanged wherever their classes exist here.  The command line is ``storm-py flux FILE``.  Public names:
``docs/flux.md``.
"""

from storm_py.flux.builder import ExecutionContext, FluxTopology, build, build_config, build_topology
from storm_py.flux.model import (
    BeanDef,
    BoltDef,
    ConfigMethodDef,
    FluxError,
    GroupingDef,
    IncludeDef,
    ObjectDef,
    PropertyDef,
    SpoutDef,
    StreamDef,
    TopologyDef,
    TopologySourceDef,
)
from storm_py.flux.parser import load, parse_file, parse_properties, parse_resource

__all__ = [
    "BeanDef",
    "BoltDef",
    "ConfigMethodDef",
    "ExecutionContext",
    "FluxError",
    "FluxTopology",
    "GroupingDef",
    "IncludeDef",
    "ObjectDef",
    "PropertyDef",
    "SpoutDef",
    "StreamDef",
    "TopologyDef",
    "TopologySourceDef",
    "build",
    "build_config",
    "build_topology",
    "load",
    "parse_file",
    "parse_properties",
    "parse_resource",
]
