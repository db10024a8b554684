"""This module owns the checks a topology passes at submit before nimbus stores it: its structure, its windowed and
stateful components against the topology conf, and the system topology with every component's executor count."""

from __future__ import annotations

from typing import Any

from storm_py.api.topology import StormTopology, validate_topology
from storm_py.errors import InvalidTopologyException
from storm_py.runtime.system_topology import component_counts, system_topology
from storm_py.stateful.wiring import check_topology as check_stateful
from storm_py.windowing.spec import check_windowed_components


def checked_system_topology(
    topology: StormTopology, topo_conf: dict[str, Any]
) -> tuple[StormTopology, dict[str, tuple[int, int]]]:
    """The system topology of ``topology`` and each component's ``(tasks, executors)``; raises
    :class:`InvalidTopologyException` naming what is wrong."""
    validate_topology(topology)
    check_windowed_components({cid: c.conf for cid, c in topology.components().items()}, topo_conf)
    check_stateful(topology, topo_conf)
    system = system_topology(topology, topo_conf)
    validate_topology(system, system=True)
    counts = component_counts(system, topo_conf)
    for cid, (tasks, execs) in counts.items():
        if execs <= 0 and tasks > 0:
            raise InvalidTopologyException(f"component {cid!r} has no executors", component=cid)
    return system, counts
