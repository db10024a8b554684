"""This module owns the checks a topology passes before nimbus stores it: at submit its structure, its windowed,
stateful and async components against the topology conf, the system topology with every component's executor
count and the autoscaler's bounds against the bolts' tasks; at a rebalance the conf overrides (``rebalance -t``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from storm_py.api.topology import StormTopology, validate_topology
from storm_py.config import validate as validate_conf
from storm_py.errors import ConfigError, InvalidTopologyException
from storm_py.metrics.reports import is_system
from storm_py.nimbus.autoscale_policy import autoscale_settings
from storm_py.runtime.async_executor import check_async_bolts
from storm_py.runtime.system_topology import component_counts, system_topology
from storm_py.stateful.wiring import check_topology as check_stateful
from storm_py.windowing.spec import check_windowed_components

#: Keys ``rebalance -t`` may not change: they shape the topology (``-n`` and ``-e`` change workers and executors).
REBALANCE_FIXED_KEYS = frozenset(
    {"topology.name", "topology.workers", "topology.acker.executors", "topology.tasks", "topology.max.task.parallelism",
     "topology.eventlogger.executors", "topology.state.max.parallelism", "topology.state.rescales"}
)


def checked_system_topology(
    topology: StormTopology, topo_conf: dict[str, Any]
) -> tuple[StormTopology, dict[str, tuple[int, int]]]:
    """The system topology of ``topology`` and each component's ``(tasks, executors)``; raises
    :class:`InvalidTopologyException` naming what is wrong."""
    validate_topology(topology)
    check_windowed_components({cid: c.conf for cid, c in topology.components().items()}, topo_conf)
    check_stateful(topology, topo_conf)
    check_async_bolts(topology, topo_conf)
    system = system_topology(topology, topo_conf)
    validate_topology(system, system=True)
    counts = component_counts(system, topo_conf)
    for cid, (tasks, execs) in counts.items():
        if execs <= 0 and tasks > 0:
            raise InvalidTopologyException(f"component {cid!r} has no executors", component=cid)
    bolts = {cid: tasks for cid, (tasks, _) in counts.items() if cid in system.bolts and not is_system(cid)}
    autoscale_settings(topo_conf, bolts, set(system.spouts))
    return system, counts


def checked_conf_overrides(name: str, topology_conf: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``overrides`` checked against the key table with the topology's conf; keys that shape the topology
    (its name, workers, tasks, ackers) are refused: ``-n`` and ``-e`` change those."""
    fixed = sorted(k for k in overrides if k in REBALANCE_FIXED_KEYS)
    if fixed:
        raise InvalidTopologyException(
            f"rebalance cannot change {', '.join(fixed)} of {name!r} (use -n / -e for workers and executors)"
        )
    out = dict(overrides)
    try:
        json.dumps(out)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"topology conf overrides of {name!r} are not JSON: {err}", topology=name) from err
    validate_conf({**topology_conf, **out}, f"rebalance conf of {name!r}:")
    return out
