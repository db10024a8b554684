"""Storm's Resource Aware Scheduler (pure): executors' resources against supervisors' capacities, by priority.

Inputs are plain values: each topology's :class:`Demand` (its executors, what each component's executor needs, its
priority, its user, the component graph), each supervisor's :class:`Node` (its ports and capacities) and the
current placements.  :func:`schedule_resource_aware` returns a :class:`Plan`: where every topology that fits runs,
why each one that does not is waiting, and which ones were evicted to make room for a more important one.

The semantics follow Storm's ``ResourceAwareScheduler`` with its default strategy:

* a topology is placed whole or not at all; executors already running on live slots stay where they are;
* executors are ordered by a breadth-first walk of the component graph from the spouts, one executor of each
  component in turn, so that executors which talk to each other land together;
* nodes already running the topology come first, then the ones with the most resources free (the smaller of
  their free memory and CPU as shares of the cluster's); a node is filled
  before the next is used, and one node runs one worker of a topology (the constraint strategy adds one where
  two components must not share a worker);
* topologies are considered most important first: users within their ``resource.aware.scheduler.user.pools``
  guarantee before users beyond it, then lower ``topology.priority``, then earlier launch; a topology that does
  not fit evicts less important ones (a user beyond its guarantee, or a higher priority number: never one only
  launched later), least important first, when that makes it fit.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from storm_py.config import validate as validate_conf
from storm_py.config.keys import setting
from storm_py.errors import ConfigError, InvalidTopologyException
from storm_py.scheduler.even import ExecutorKey, Slot

ONHEAP = "topology.component.resources.onheap.memory.mb"
OFFHEAP = "topology.component.resources.offheap.memory.mb"
CPU = "topology.component.cpu.pcore.percent"
GENERIC = "topology.component.resources.map"
RESOURCE_KEYS = (ONHEAP, OFFHEAP, CPU, GENERIC)

#: the names ``storm.scheduler`` takes for this scheduler
RESOURCE_AWARE_NAMES = frozenset({"resource_aware", "org.apache.storm.scheduler.resource.ResourceAwareScheduler"})
#: the names ``topology.scheduler.strategy`` takes for the constraint strategy
CONSTRAINT_NAMES = frozenset(
    {"constraint", "org.apache.storm.scheduler.resource.strategies.scheduling.ConstraintSolverStrategy"}
)
#: the short names ``rebalance -r`` takes for a component's resources
REBALANCE_NAMES = {"onheap.memory.mb": ONHEAP, "offheap.memory.mb": OFFHEAP, "cpu.pcore.percent": CPU}


@dataclass(frozen=True)
class Resources:
    """An amount of memory (MB), CPU (percent of a core) and named generic resources."""

    memory: float = 0.0
    cpu: float = 0.0
    generic: Mapping[str, float] = field(default_factory=dict)

    def plus(self, other: Resources) -> Resources:
        names = set(self.generic) | set(other.generic)
        return Resources(self.memory + other.memory, self.cpu + other.cpu,
                         {n: self.generic.get(n, 0.0) + other.generic.get(n, 0.0) for n in names})

    def minus(self, other: Resources) -> Resources:
        names = set(self.generic) | set(other.generic)
        return Resources(self.memory - other.memory, self.cpu - other.cpu,
                         {n: self.generic.get(n, 0.0) - other.generic.get(n, 0.0) for n in names})

    def shortfall(self, need: Resources) -> str:
        """What of ``need`` this amount lacks ("" when it holds all of it)."""
        eps = 1e-9
        if need.memory > self.memory + eps:
            return "memory"
        if need.cpu > self.cpu + eps:
            return "cpu"
        for name, amount in sorted(need.generic.items()):
            if amount > self.generic.get(name, 0.0) + eps:
                return name
        return ""

    def describe(self) -> str:
        parts = [f"{_num(self.memory)} MB memory", f"{_num(self.cpu)}% CPU"]
        parts += [f"{_num(v)} {k}" for k, v in sorted(self.generic.items()) if v]
        return ", ".join(parts)


@dataclass(frozen=True)
class Node:
    """A live supervisor: its id, its ports and what it offers."""

    id: str
    ports: tuple[int, ...]
    capacity: Resources


@dataclass(frozen=True)
class Demand:
    """What a topology asks of the cluster.

    ``requests`` holds what one executor of each component needs; ``edges`` the component graph (source,
    target); ``separate`` pairs of components that must not share a worker and ``spread`` components whose
    executors each need their own node (both only honoured by the constraint strategy).
    """

    id: str
    executors: tuple[ExecutorKey, ...]
    requests: Mapping[str, Resources]
    user: str = ""
    priority: int = 29
    launch_time: float = 0.0
    spouts: tuple[str, ...] = ()
    edges: tuple[tuple[str, str], ...] = ()
    separate: frozenset[frozenset[str]] = frozenset()
    spread: frozenset[str] = frozenset()

    def need(self, executor: ExecutorKey) -> Resources:
        return self.requests.get(executor[0], Resources())

    def total(self) -> Resources:
        out = Resources()
        for ex in self.executors:
            out = out.plus(self.need(ex))
        return out


@dataclass
class Plan:
    """The scheduler's answer: ``placements`` of every topology that runs, ``waiting`` topology id -> why it
    does not, ``evicted`` the topologies taken off the cluster for a more important one."""

    placements: dict[str, dict[ExecutorKey, Slot]] = field(default_factory=dict)
    waiting: dict[str, str] = field(default_factory=dict)
    evicted: set[str] = field(default_factory=set)


# ------------------------------------------------------------------------------------------------- declarations


def component_request(component: str, conf: Mapping[str, Any]) -> Resources:
    """What one executor of ``component`` needs, from its conf merged over the topology's; raises
    :class:`InvalidTopologyException` naming the component and the key when a value is bad."""
    for key in RESOURCE_KEYS:
        if key not in conf:
            continue
        value = conf[key]
        try:
            validate_conf({key: value}, f"component {component!r}:")
        except ConfigError as err:
            raise InvalidTopologyException(err.message, component=component, key=key) from err
        if key != GENERIC and value is not None and not math.isfinite(value):
            raise InvalidTopologyException(f"component {component!r}: key {key!r} must be a finite number, got "
                                           f"{value!r}", component=component, key=key)
    generic = {}
    for name, amount in (conf.get(GENERIC) or {}).items():
        if (not isinstance(name, str) or not name or isinstance(amount, bool) or not isinstance(amount, (int, float))
                or not math.isfinite(amount) or amount < 0):
            raise InvalidTopologyException(
                f"component {component!r}: key {GENERIC!r} needs a non-negative amount per resource name, got "
                f"{name!r}: {amount!r}", component=component, key=GENERIC)
        generic[name] = float(amount)
    return Resources(
        memory=float(setting(conf, ONHEAP)) + float(setting(conf, OFFHEAP)),
        cpu=float(setting(conf, CPU)),
        generic=generic,
    )


MEMORY_CAPACITY = "supervisor.memory.capacity.mb"
CPU_CAPACITY = "supervisor.cpu.capacity"
GENERIC_CAPACITY = "supervisor.resources.map"


def supervisor_resources(conf: Mapping[str, Any]) -> dict[str, float]:
    """What a supervisor reports it offers (its ``SupervisorInfo.resources``): its memory and CPU capacities under
    their keys and each generic resource of ``supervisor.resources.map`` under its name; raises
    :class:`ConfigError` naming the key when an amount is bad."""
    out = {MEMORY_CAPACITY: float(setting(conf, MEMORY_CAPACITY)), CPU_CAPACITY: float(setting(conf, CPU_CAPACITY))}
    for name, amount in (conf.get(GENERIC_CAPACITY) or {}).items():
        if (not isinstance(name, str) or not name or name in out or isinstance(amount, bool)
                or not isinstance(amount, (int, float)) or not math.isfinite(amount) or amount < 0):
            raise ConfigError(f"key {GENERIC_CAPACITY!r} needs a non-negative amount per resource name, got "
                              f"{name!r}: {amount!r}", key=GENERIC_CAPACITY)
        out[name] = float(amount)
    return out


def capacity_of(reported: Mapping[str, float]) -> Resources:
    """A supervisor's capacity from what it reports (:func:`supervisor_resources`); a supervisor reporting
    nothing offers the defaults."""
    return Resources(
        memory=float(setting(reported, MEMORY_CAPACITY)),
        cpu=float(setting(reported, CPU_CAPACITY)),
        generic={k: float(v) for k, v in reported.items() if k not in (MEMORY_CAPACITY, CPU_CAPACITY)},
    )


def user_pools(conf: Mapping[str, Any]) -> dict[str, Resources]:
    """``resource.aware.scheduler.user.pools`` as each user's guaranteed resources; raises :class:`ConfigError`
    naming the key and the user when an entry is bad."""
    key = "resource.aware.scheduler.user.pools"
    out: dict[str, Resources] = {}
    for user, pool in (conf.get(key) or {}).items():
        amounts = pool if isinstance(pool, dict) else {}
        values = [amounts.get("memory", 0), amounts.get("cpu", 0)]
        if not isinstance(pool, dict) or set(pool) - {"memory", "cpu"} or any(
                isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0
                for v in values):
            raise ConfigError(f"key {key!r}: user {user!r} needs {{\"memory\": MB, \"cpu\": percent}} with "
                              f"non-negative numbers, got {pool!r}", key=key, user=str(user))
        out[str(user)] = Resources(memory=float(values[0]), cpu=float(values[1]))
    return out


def unplaceable(demand: Demand, nodes: Iterable[Node]) -> str:
    """Why some executor of ``demand`` fits on no node even of an empty cluster ("" when each one fits on one)."""
    capacities = [n.capacity for n in nodes if n.ports]
    if not capacities:
        return ""
    for component in sorted({ex[0] for ex in demand.executors}):
        need = demand.requests.get(component, Resources())
        if all(cap.shortfall(need) for cap in capacities):
            return (f"component {component!r} needs {need.describe()} per executor, more than any supervisor "
                    f"offers")
    return ""


# ----------------------------------------------------------------------------------------------------- ordering


def executor_order(demand: Demand) -> list[ExecutorKey]:
    """Executors in scheduling order: components breadth-first from the spouts over the component graph (either
    direction), one executor of each component in turn."""
    neighbours: dict[str, set[str]] = defaultdict(set)
    for a, b in demand.edges:
        neighbours[a].add(b)
        neighbours[b].add(a)
    by_component: dict[str, list[ExecutorKey]] = defaultdict(list)
    for ex in sorted(demand.executors, key=lambda e: (e[1], e[0])):
        by_component[ex[0]].append(ex)
    order: list[str] = []
    seen: set[str] = set()
    for root in [*sorted(demand.spouts), *sorted(by_component)]:
        if root in seen or root not in by_component:
            continue
        queue = deque([root])
        seen.add(root)
        while queue:
            c = queue.popleft()
            order.append(c)
            for n in sorted(neighbours[c]):
                if n not in seen and n in by_component:
                    seen.add(n)
                    queue.append(n)
    out: list[ExecutorKey] = []
    lists = [deque(by_component[c]) for c in order]
    while any(lists):
        for q in lists:
            if q:
                out.append(q.popleft())
    return out


def importance(demands: Sequence[Demand], pools: Mapping[str, Resources]) -> dict[str, tuple[int, int, float, str]]:
    """Each topology's sort key, most important first: within its user's guarantee (0) or not (1), priority,
    launch time, id.  A user's topologies count against the guarantee in their priority order."""
    used: dict[str, Resources] = defaultdict(Resources)
    out: dict[str, tuple[int, int, float, str]] = {}
    for d in sorted(demands, key=lambda d: (d.priority, d.launch_time, d.id)):
        used[d.user] = used[d.user].plus(d.total())
        pool = pools.get(d.user)
        within = pool is not None and not pool.shortfall(Resources(used[d.user].memory, used[d.user].cpu))
        out[d.id] = (0 if within else 1, d.priority, d.launch_time, d.id)
    return out


# ---------------------------------------------------------------------------------------------------- the core


class _Ledger:
    """What each node has free and which topology holds each slot."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = {n.id: n for n in nodes}
        self.free = {n.id: n.capacity for n in nodes}
        self.owner: dict[Slot, str] = {}

    def take(self, tid: str, slot: Slot, need: Resources) -> None:
        self.free[slot[0]] = self.free[slot[0]].minus(need)
        self.owner[slot] = tid

    def give_back(self, demand: Demand, placed: Mapping[ExecutorKey, Slot]) -> None:
        for ex, slot in placed.items():
            self.free[slot[0]] = self.free[slot[0]].plus(demand.need(ex))
            if self.owner.get(slot) == demand.id:
                del self.owner[slot]


def _keep(demand: Demand, current: Mapping[ExecutorKey, Slot], ledger: _Ledger) -> dict[ExecutorKey, Slot]:
    """The executors of ``demand`` that may stay where they run: on a live port of a live node, on a slot no other
    topology holds, and still within the node's capacity."""
    kept: dict[ExecutorKey, Slot] = {}
    wanted = set(demand.executors)
    for ex, slot in sorted(current.items()):
        node = ledger.nodes.get(slot[0])
        if ex not in wanted or node is None or slot[1] not in node.ports:
            continue
        if ledger.owner.get(slot, demand.id) != demand.id or ledger.free[slot[0]].shortfall(demand.need(ex)):
            continue
        ledger.take(demand.id, slot, demand.need(ex))
        kept[ex] = slot
    return kept


def _place(demand: Demand, kept: dict[ExecutorKey, Slot], ledger: _Ledger, constrained: bool) -> str:
    """Place the executors of ``demand`` not in ``kept`` (added to it); "" on success, else why not (and the
    ledger and ``kept`` are left as they were)."""
    placed: dict[ExecutorKey, Slot] = {}
    placed.update(kept)
    hosting = {slot[0] for slot in kept.values()}
    total = Resources()
    for n in ledger.nodes.values():
        total = total.plus(n.capacity)
    node_order = sorted(
        ledger.nodes.values(),
        key=lambda n: (n.id not in hosting, -_room(ledger.free[n.id], total), n.id),
    )
    added: dict[ExecutorKey, Slot] = {}
    for ex in executor_order(demand):
        if ex in placed:
            continue
        need = demand.need(ex)
        slot = None
        for node in node_order:
            if ledger.free[node.id].shortfall(need):
                continue
            slot = _slot_on(demand, ex, node, placed, ledger, constrained)
            if slot is not None:
                break
        if slot is None:
            why = _why(demand, ex, need, ledger, len(placed), constrained)
            ledger.give_back(demand, added)
            return why
        ledger.take(demand.id, slot, need)
        placed[ex] = slot
        added[ex] = slot
    kept.update(added)
    return ""


def _slot_on(demand: Demand, ex: ExecutorKey, node: Node, placed: Mapping[ExecutorKey, Slot], ledger: _Ledger,
             constrained: bool) -> Slot | None:
    """The slot of ``node`` that takes ``ex``: the topology's worker there, else a free port (None: neither)."""
    mine: dict[int, set[str]] = defaultdict(set)
    for other, slot in placed.items():
        if slot[0] == node.id:
            mine[slot[1]].add(other[0])
    if constrained and ex[0] in demand.spread and any(ex[0] in comps for comps in mine.values()):
        return None
    for port in sorted(mine):
        if not constrained or not any(frozenset((ex[0], c)) in demand.separate for c in mine[port]):
            return (node.id, port)
    for port in sorted(node.ports):
        if (node.id, port) not in ledger.owner:
            return (node.id, port)
    return None


def _why(demand: Demand, ex: ExecutorKey, need: Resources, ledger: _Ledger, placed: int, constrained: bool) -> str:
    total = len(demand.executors)
    fits = [n for n in ledger.nodes.values() if not ledger.free[n.id].shortfall(need)]
    if fits:
        what = "no free slot on a supervisor with room" + (" that its constraints allow" if constrained else "")
    else:
        lacking = sorted({ledger.free[n.id].shortfall(need) for n in ledger.nodes.values()})
        what = f"no supervisor has that free (short of {', '.join(lacking) or 'supervisors'})"
    return (f"not enough resources: an executor of {ex[0]!r} needs {need.describe()}; {what} "
            f"({placed} of {total} executors placed)")


def _room(free: Resources, capacity: Resources) -> float:
    """The smaller of the node's free memory and CPU as shares of the cluster's (Storm's subordinate resource)."""
    shares = [free.memory / capacity.memory if capacity.memory > 0 else 0.0,
              free.cpu / capacity.cpu if capacity.cpu > 0 else 0.0]
    return min(shares)


def schedule_resource_aware(
    demands: Sequence[Demand],
    nodes: Sequence[Node],
    current: Mapping[str, Mapping[ExecutorKey, Slot]],
    pools: Mapping[str, Resources] | None = None,
    constrained: Iterable[str] = (),
) -> Plan:
    """Place every topology that fits, most important first, evicting less important ones when that makes a
    more important one fit.

    Args:
        demands: the topologies to run.
        nodes: the live supervisors.
        current: each topology's placement now (executors on dead slots are moved).
        pools: each user's guaranteed resources (``resource.aware.scheduler.user.pools``).
        constrained: ids of topologies placed by the constraint strategy.
    """
    ranks = importance(demands, pools or {})
    by_id = {d.id: d for d in demands}
    strict = set(constrained)
    ledger = _Ledger(nodes)
    plan = Plan()
    order = sorted(demands, key=lambda d: ranks[d.id])
    partial: dict[str, dict[ExecutorKey, Slot]] = {}
    evicted_by: dict[str, str] = {}
    for d in order:
        kept = _keep(d, current.get(d.id, {}), ledger)
        if len(kept) == len(d.executors):
            plan.placements[d.id] = kept
        else:
            partial[d.id] = kept
    queue = [d for d in order if d.id in partial]
    while queue:
        d = queue.pop(0)
        kept = partial.pop(d.id, {})
        reason = _place(d, kept, ledger, d.id in strict)
        victims: list[str] = []
        if reason:
            for victim in sorted((t for t in plan.placements if ranks[t][:2] > ranks[d.id][:2]),
                                 key=lambda t: ranks[t], reverse=True):
                ledger.give_back(by_id[victim], plan.placements[victim])
                victims.append(victim)
                if not _place(d, kept, ledger, d.id in strict):
                    reason = ""
                    break
            if reason:  # evicting did not help: everyone stays
                for victim in victims:
                    for ex, slot in plan.placements[victim].items():
                        ledger.take(victim, slot, by_id[victim].need(ex))
                victims = []
        if reason:
            ledger.give_back(d, kept)
            plan.waiting[d.id] = f"{evicted_by[d.id]}; {reason}" if d.id in evicted_by else reason
            continue
        plan.placements[d.id] = kept
        for victim in victims:
            del plan.placements[victim]
            plan.evicted.add(victim)
            evicted_by[victim] = f"evicted for the more important topology {d.id!r}"
            queue.append(by_id[victim])
        queue.sort(key=lambda t: ranks[t.id])
    for tid in plan.placements:
        plan.waiting.pop(tid, None)
    return plan


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
