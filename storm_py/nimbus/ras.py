"""This module owns nimbus's side of the resource aware scheduler: stored records in, the pure core's inputs out.

It reads what components need from a submitted topology (checking it, so bad values fail the submit naming the
component and the key), turns storm bases into :class:`~storm_py.scheduler.resource_aware.Demand` and supervisor
records into :class:`~storm_py.scheduler.resource_aware.Node`; :class:`~storm_py.nimbus.core.Nimbus` hands them
to :func:`~storm_py.scheduler.resource_aware.schedule_resource_aware` and writes the plan.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from storm_py.api.topology import StormTopology
from storm_py.cluster_state.models import StormBase, SupervisorInfo
from storm_py.config.keys import setting
from storm_py.errors import InvalidTopologyException
from storm_py.nimbus.monitor import executors_of
from storm_py.scheduler.resource_aware import (
    CONSTRAINT_NAMES,
    CPU,
    GENERIC,
    OFFHEAP,
    ONHEAP,
    REBALANCE_NAMES,
    RESOURCE_AWARE_NAMES,
    RESOURCE_KEYS,
    Demand,
    Node,
    capacity_of,
    component_request,
)

Slot = tuple[str, int]


def is_resource_aware(conf: Mapping[str, Any]) -> bool:
    """Whether ``storm.scheduler`` names the resource aware scheduler."""
    return setting(conf, "storm.scheduler") in RESOURCE_AWARE_NAMES


def component_resources(topology: StormTopology, topo_conf: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each component's resource keys (its own conf over the topology's), checked: a bad value raises
    :class:`InvalidTopologyException` naming the component and the key."""
    out: dict[str, dict[str, Any]] = {}
    for cid, spec in sorted(topology.components().items()):
        own = spec.conf or {}
        merged = {k: own[k] if k in own else topo_conf.get(k) for k in RESOURCE_KEYS}
        merged = {k: v for k, v in merged.items() if v is not None}
        component_request(cid, merged)
        out[cid] = merged
    check_constraints(topo_conf, out)
    return out


def check_constraints(topo_conf: Mapping[str, Any], components: Iterable[str]) -> None:
    """``topology.ras.constraints`` must be pairs of the topology's components and ``topology.spread.components``
    name its components; an error names the key and the entry."""
    known = set(components)
    for pair in topo_conf.get("topology.ras.constraints") or []:
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(c, str) for c in pair)):
            raise InvalidTopologyException(
                f"key 'topology.ras.constraints' takes pairs [component, component], got {pair!r}",
                key="topology.ras.constraints")
        for cid in pair:
            if cid not in known:
                raise InvalidTopologyException(
                    f"key 'topology.ras.constraints' names unknown component {cid!r}", component=cid,
                    key="topology.ras.constraints")
    for cid in topo_conf.get("topology.spread.components") or []:
        if cid not in known:
            raise InvalidTopologyException(f"key 'topology.spread.components' names unknown component {cid!r}",
                                           component=cid, key="topology.spread.components")


def rebalanced_resources(base: StormBase, changes: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The component resources after ``rebalance -r``: ``{component: {"onheap.memory.mb": 512, ...}}`` (Storm's
    short names or the full keys); an error names the component or the key."""
    out = {cid: dict(v) for cid, v in base.component_resources.items()}
    if not isinstance(changes, Mapping):
        raise InvalidTopologyException(f"resources must map components to their resources, got {changes!r}")
    for cid, amounts in changes.items():
        if cid not in base.component_executors or cid.startswith("__"):
            raise InvalidTopologyException(f"cannot change resources of unknown component {cid!r} of {base.name!r}",
                                           component=cid)
        if not isinstance(amounts, Mapping) or not amounts:
            raise InvalidTopologyException(f"resources of {cid!r} must be a mapping such as "
                                           f"{{\"onheap.memory.mb\": 512}}, got {amounts!r}", component=cid)
        entry = out.setdefault(cid, {})
        for name, value in amounts.items():
            key = REBALANCE_NAMES.get(name, name)
            if key not in RESOURCE_KEYS:
                raise InvalidTopologyException(
                    f"unknown resource {name!r} of {cid!r} (one of {', '.join(sorted(REBALANCE_NAMES))})",
                    component=cid, key=str(name))
            entry[key] = value
        component_request(cid, entry)
    return out


def demand_of(tid: str, base: StormBase) -> Demand:
    """What topology ``tid`` asks of the cluster."""
    conf = base.topology_conf
    executors = tuple(executors_of(base))
    requests = {c: component_request(c, base.component_resources.get(c, conf)) for c in {e[0] for e in executors}}
    return Demand(
        id=tid,
        executors=executors,
        requests=requests,
        user=base.owner,
        priority=int(setting(conf, "topology.priority")),
        launch_time=base.launch_time,
        spouts=tuple(base.spout_ids),
        edges=tuple((src, cid) for cid, inputs in sorted(base.component_inputs.items()) for src, *_ in inputs),
        separate=frozenset(frozenset(p) for p in conf.get("topology.ras.constraints") or [] if len(set(p)) == 2),
        spread=frozenset(conf.get("topology.spread.components") or []),
    )


def resource_summary(base: StormBase, running: bool) -> dict[str, Any]:
    """Storm UI's requested and assigned resources of a topology (``requestedMemOnHeap``, ``assignedCpu``, ...):
    what all its executors need, and the same as assigned while it runs (a topology runs whole or not at all)."""
    on_heap = off_heap = cpu = 0.0
    generic: dict[str, float] = {}
    for cid, *_ in executors_of(base):
        conf = {**base.topology_conf, **base.component_resources.get(cid, {})}
        on_heap += float(setting(conf, ONHEAP))
        off_heap += float(setting(conf, OFFHEAP))
        cpu += float(setting(conf, CPU))
        for name, amount in (conf.get(GENERIC) or {}).items():
            generic[name] = generic.get(name, 0.0) + float(amount)
    share = 1.0 if running else 0.0
    return {
        "requestedMemOnHeap": on_heap, "requestedMemOffHeap": off_heap, "requestedTotalMem": on_heap + off_heap,
        "requestedCpu": cpu, "requestedGenericResources": generic,
        "assignedMemOnHeap": on_heap * share, "assignedMemOffHeap": off_heap * share,
        "assignedTotalMem": (on_heap + off_heap) * share, "assignedCpu": cpu * share,
        "assignedGenericResources": {k: v * share for k, v in generic.items()},
    }


def is_constrained(base: StormBase) -> bool:
    """Whether the topology is placed by the constraint strategy."""
    return setting(base.topology_conf, "topology.scheduler.strategy") in CONSTRAINT_NAMES


def nodes_of(supervisors: Mapping[str, SupervisorInfo], slots: Iterable[Slot]) -> list[Node]:
    """The live supervisors as nodes: their live ports and what they report they offer."""
    ports: dict[str, list[int]] = defaultdict(list)
    for node, port in slots:
        ports[node].append(port)
    return [Node(sid, tuple(sorted(ports[sid])), capacity_of(supervisors[sid].resources))
            for sid in sorted(ports) if sid in supervisors]


def placement_of(base: StormBase, executor_node_port: Mapping[tuple[int, int], Slot]) -> dict[tuple[str, int, int],
                                                                                                Slot]:
    """An assignment's executors keyed as the scheduler keys them (component, start task, end task)."""
    by_range = {(s, e): c for c, s, e in executors_of(base)}
    return {(by_range[r], r[0], r[1]): slot for r, slot in executor_node_port.items() if r in by_range}
