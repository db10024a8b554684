"""The resource aware scheduler's pure core against cases ported from Storm's RAS tests (inputs and expected
placements as data: ``TestResourceAwareScheduler``, ``TestDefaultResourceAwareStrategy``, eviction and
generic resource cases)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from storm_py.scheduler.resource_aware import (
    Demand,
    Node,
    Plan,
    Resources,
    executor_order,
    schedule_resource_aware,
)

ExecutorKey = tuple[str, int, int]
Slot = tuple[str, int]


@dataclass
class Topo:
    """A topology as a case states it: component -> (executors, memory MB, CPU %, generic resources)."""

    id: str
    components: dict[str, tuple[int, float, float, dict[str, float]]]
    edges: tuple[tuple[str, str], ...] = ()
    spouts: tuple[str, ...] = ()
    priority: int = 29
    launch: float = 0.0
    user: str = "jerry"
    separate: tuple[tuple[str, str], ...] = ()
    spread: tuple[str, ...] = ()

    def demand(self) -> Demand:
        executors: list[ExecutorKey] = []
        task = 1
        for cid, (n, *_rest) in self.components.items():
            for _ in range(n):
                executors.append((cid, task, task))
                task += 1
        return Demand(
            id=self.id, executors=tuple(executors),
            requests={c: Resources(m, cpu, g) for c, (_, m, cpu, g) in self.components.items()},
            user=self.user, priority=self.priority, launch_time=self.launch, spouts=self.spouts, edges=self.edges,
            separate=frozenset(frozenset(p) for p in self.separate), spread=frozenset(self.spread),
        )


@dataclass
class Case:
    name: str
    nodes: dict[str, tuple[int, float, float, dict[str, float]]]  # id -> (ports, memory, cpu, generic)
    topologies: list[Topo]
    #: topology -> node -> components of the executors there (a multiset)
    expected: dict[str, dict[str, list[str]]]
    waiting: dict[str, str] = field(default_factory=dict)  # topology -> a phrase its reason holds
    current: dict[str, dict[ExecutorKey, Slot]] = field(default_factory=dict)
    pools: dict[str, Resources] = field(default_factory=dict)
    constrained: tuple[str, ...] = ()
    evicted: tuple[str, ...] = ()


def _nodes(spec: dict[str, tuple[int, float, float, dict[str, float]]]) -> list[Node]:
    return [Node(n, tuple(range(ports)), Resources(mem, cpu, gen)) for n, (ports, mem, cpu, gen) in spec.items()]


def _run(case: Case) -> Plan:
    return schedule_resource_aware([t.demand() for t in case.topologies], _nodes(case.nodes), case.current,
                                   case.pools, case.constrained)


def _shape(placed: dict[ExecutorKey, Slot]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for ex, (node, _) in placed.items():
        out.setdefault(node, []).append(ex[0])
    return {n: sorted(v) for n, v in out.items()}


def _check_invariants(case: Case, plan: Plan) -> None:
    """What every plan holds: placed topologies are whole, no node is over its capacity, no slot is shared."""
    nodes = {n.id: n for n in _nodes(case.nodes)}
    used: dict[str, Resources] = {}
    owners: dict[Slot, str] = {}
    for topo in case.topologies:
        placed = plan.placements.get(topo.id)
        if placed is None:
            assert topo.id in plan.waiting
            continue
        demand = topo.demand()
        assert set(placed) == set(demand.executors)
        for ex, slot in placed.items():
            assert slot[1] in nodes[slot[0]].ports
            assert owners.setdefault(slot, topo.id) == topo.id, f"slot {slot} shared"
            used[slot[0]] = used.get(slot[0], Resources()).plus(demand.need(ex))
    for node, amount in used.items():
        assert not nodes[node].capacity.shortfall(amount), f"{node} over capacity: {amount}"


NO: dict[str, float] = {}

CASES = [
    Case(  # TestResourceAwareScheduler.testResourceLimitation: the second spout does not fit beside the first
        "resource_limitation",
        nodes={"sup-0": (2, 2000, 400, NO), "sup-1": (2, 2000, 400, NO)},
        topologies=[Topo("topology1", {"wordSpout": (2, 1200, 250, NO), "wordCountBolt": (1, 600, 100, NO)},
                         edges=(("wordSpout", "wordCountBolt"),), spouts=("wordSpout",))],
        expected={"topology1": {"sup-0": ["wordCountBolt", "wordSpout"], "sup-1": ["wordSpout"]}},
    ),
    Case(  # TestResourceAwareScheduler.testTopologySetCpuAndMemLoad: a small topology fills one node
        "set_cpu_and_mem_load",
        nodes={"sup-0": (4, 2000, 400, NO), "sup-1": (4, 2000, 400, NO)},
        topologies=[Topo("topology2", {"wordSpout": (1, 200, 20, NO), "wordCountBolt": (1, 200, 20, NO)},
                         edges=(("wordSpout", "wordCountBolt"),), spouts=("wordSpout",))],
        expected={"topology2": {"sup-0": ["wordCountBolt", "wordSpout"]}},
    ),
    Case(  # testScheduleResilience, test 2: a supervisor fails; the executors on the healthy one stay put
        "resilience_supervisor_lost",
        nodes={"sup-1": (4, 2000, 400, NO)},
        topologies=[Topo("topology1", {"wordSpout1": (3, 128, 10, NO)}, spouts=("wordSpout1",))],
        current={"topology1": {("wordSpout1", 1, 1): ("sup-0", 0), ("wordSpout1", 2, 2): ("sup-0", 1),
                               ("wordSpout1", 3, 3): ("sup-1", 1)}},
        expected={"topology1": {"sup-1": ["wordSpout1"] * 3}},
    ),
    Case(  # testScheduleResilience, test 4: scheduling a new topology does not disturb a running one
        "resilience_new_topology",
        nodes={"sup-0": (4, 2000, 400, NO), "sup-1": (4, 2000, 400, NO)},
        topologies=[Topo("topology1", {"wordSpout1": (3, 128, 10, NO)}, spouts=("wordSpout1",)),
                    Topo("topology2", {"wordSpout2": (2, 1280, 10, NO)}, spouts=("wordSpout2",), launch=1)],
        current={"topology1": {("wordSpout1", 1, 1): ("sup-1", 2), ("wordSpout1", 2, 2): ("sup-1", 2),
                               ("wordSpout1", 3, 3): ("sup-1", 2)}},
        expected={"topology1": {"sup-1": ["wordSpout1"] * 3},
                  "topology2": {"sup-0": ["wordSpout2"], "sup-1": ["wordSpout2"]}},
    ),
    Case(  # testHeterogeneousCluster: a huge task goes to the strong node only
        "heterogeneous_cluster",
        nodes={"sup-0": (4, 4096, 800, NO), "sup-1": (4, 1024, 200, NO)},
        topologies=[Topo("topology1", {"wordSpout1": (1, 2048, 300, NO)}, spouts=("wordSpout1",)),
                    Topo("topology2", {"wordSpout2": (4, 512, 100, NO)}, spouts=("wordSpout2",), launch=1)],
        expected={"topology1": {"sup-0": ["wordSpout1"]},
                  "topology2": {"sup-0": ["wordSpout2"] * 4}},
    ),
    Case(  # testHandlingClusterSubscription: what does not fit waits, the rest runs
        "cluster_subscription",
        nodes={"sup-0": (4, 2000, 400, NO)},
        topologies=[Topo("topology1", {"spout": (2, 500, 100, NO)}, spouts=("spout",)),
                    Topo("topology2", {"spout": (3, 500, 100, NO)}, spouts=("spout",), launch=1)],
        expected={"topology1": {"sup-0": ["spout", "spout"]}},
        waiting={"topology2": "not enough resources: an executor of 'spout' needs 500 MB memory"},
    ),
    Case(  # eviction: a more important topology (lower priority number) takes the room of a less important one
        "priority_eviction",
        nodes={"sup-0": (4, 2000, 400, NO)},
        topologies=[Topo("low", {"spout": (1, 1500, 50, NO)}, priority=20, launch=0),
                    Topo("high", {"spout": (1, 1500, 50, NO)}, priority=10, launch=5)],
        current={"low": {("spout", 1, 1): ("sup-0", 0)}},
        expected={"high": {"sup-0": ["spout"]}},
        waiting={"low": "evicted for the more important topology 'high'"},
        evicted=("low",),
    ),
    Case(  # three topologies that do not all fit: the least important waits, nothing running is evicted
        "three_topologies_least_important_waits",
        nodes={"sup-0": (4, 2048, 400, NO), "sup-1": (4, 2048, 400, NO)},
        topologies=[Topo("a", {"spout": (1, 1500, 50, NO)}, priority=10),
                    Topo("b", {"spout": (1, 1500, 50, NO)}, priority=20),
                    Topo("c", {"spout": (1, 1500, 50, NO)}, priority=30)],
        expected={"a": {"sup-0": ["spout"]}, "b": {"sup-1": ["spout"]}},
        waiting={"c": "no supervisor has that free (short of memory)"},
    ),
    Case(  # an equally important topology never evicts: the one launched first keeps its place
        "no_eviction_among_equals",
        nodes={"sup-0": (4, 2000, 400, NO)},
        topologies=[Topo("first", {"spout": (1, 1500, 50, NO)}, launch=0),
                    Topo("second", {"spout": (1, 1500, 50, NO)}, launch=1)],
        current={"second": {("spout", 1, 1): ("sup-0", 0)}},
        expected={"second": {"sup-0": ["spout"]}},
        waiting={"first": "not enough resources"},
    ),
    Case(  # TestDefaultEvictionStrategy: a user within its guarantee evicts a user beyond it, whatever the priority
        "user_pool_eviction",
        nodes={"sup-0": (4, 2000, 400, NO)},
        topologies=[Topo("bobby-topo", {"spout": (1, 1500, 50, NO)}, priority=0, user="bobby"),
                    Topo("jerry-topo", {"spout": (1, 1000, 50, NO)}, priority=20, user="jerry", launch=5)],
        current={"bobby-topo": {("spout", 1, 1): ("sup-0", 0)}},
        pools={"jerry": Resources(memory=1000, cpu=100)},
        expected={"jerry-topo": {"sup-0": ["spout"]}},
        waiting={"bobby-topo": "evicted for the more important topology 'jerry-topo'"},
        evicted=("bobby-topo",),
    ),
    Case(  # generic resources: a GPU executor runs only where a GPU is offered
        "gpu_only_on_the_gpu_node",
        nodes={"sup-0": (4, 4096, 800, NO), "sup-1": (4, 1024, 200, {"gpu.count": 1})},
        topologies=[Topo("t", {"reader": (2, 128, 10, NO), "infer": (1, 256, 50, {"gpu.count": 1})},
                         edges=(("reader", "infer"),), spouts=("reader",))],
        expected={"t": {"sup-0": ["reader", "reader"], "sup-1": ["infer"]}},
    ),
    Case(  # generic resources are counted: two GPU executors do not fit one GPU
        "gpu_counted",
        nodes={"sup-0": (4, 4096, 800, {"gpu.count": 1})},
        topologies=[Topo("t", {"infer": (2, 256, 50, {"gpu.count": 1})})],
        expected={},
        waiting={"t": "short of gpu.count"},
    ),
    Case(  # ConstraintSolverStrategy: components that must not share a worker get two workers of one node
        "constraint_separate_workers",
        nodes={"sup-0": (4, 4096, 800, NO)},
        topologies=[Topo("t", {"spout": (1, 128, 10, NO), "bolt": (1, 128, 10, NO)}, edges=(("spout", "bolt"),),
                         spouts=("spout",), separate=(("spout", "bolt"),))],
        constrained=("t",),
        expected={"t": {"sup-0": ["bolt", "spout"]}},
    ),
    Case(  # spread components: each executor on its own node, the rest of the topology waits without room
        "constraint_spread",
        nodes={"sup-0": (4, 4096, 800, NO), "sup-1": (4, 4096, 800, NO)},
        topologies=[Topo("t", {"spout": (2, 128, 10, NO)}, spread=("spout",)),
                    Topo("u", {"spout": (3, 128, 10, NO)}, spread=("spout",), launch=1)],
        constrained=("t", "u"),
        expected={"t": {"sup-0": ["spout"], "sup-1": ["spout"]}},
        waiting={"u": "no free slot on a supervisor with room that its constraints allow"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_ported_placement_case(case: Case) -> None:
    plan = _run(case)
    _check_invariants(case, plan)
    assert {t: _shape(p) for t, p in plan.placements.items()} == case.expected
    assert set(plan.waiting) == set(case.waiting)
    for tid, phrase in case.waiting.items():
        assert phrase in plan.waiting[tid]
    assert plan.evicted == set(case.evicted)


def test_healthy_executors_keep_their_exact_slots() -> None:
    """testScheduleResilience, test 1: a worker fails; executors of the other workers keep their slots."""
    case = CASES[3]
    current = {("wordSpout2", 1, 1): ("sup-0", 3)}  # the worker of the other executor (sup-1) failed
    plan = schedule_resource_aware([case.topologies[1].demand()], _nodes(case.nodes), {"topology2": current})
    assert plan.placements["topology2"][("wordSpout2", 1, 1)] == ("sup-0", 3)
    assert plan.placements["topology2"][("wordSpout2", 2, 2)] == ("sup-1", 0)


def test_constraints_are_ignored_by_the_default_strategy() -> None:
    case = CASES[-2]
    plan = schedule_resource_aware([t.demand() for t in case.topologies], _nodes(case.nodes), {})
    assert len(set(plan.placements["t"].values())) == 1


def test_communicating_components_are_ordered_breadth_first_from_the_spouts() -> None:
    """TestDefaultResourceAwareStrategy's ordering: spout, its neighbours, theirs; one executor of each in turn."""
    demand = Topo("t", {"sink": (1, 1, 1, NO), "spout": (2, 1, 1, NO), "split": (2, 1, 1, NO), "lone": (1, 1, 1, NO)},
                  edges=(("spout", "split"), ("split", "sink")), spouts=("spout",)).demand()
    assert [e[0] for e in executor_order(demand)] == ["spout", "split", "sink", "lone", "spout", "split"]


def test_an_evicted_topology_returns_when_room_is_left() -> None:
    """The least important topology is evicted first, and one evicted but still fitting elsewhere runs."""
    nodes = _nodes({"sup-0": (4, 2000, 400, NO), "sup-1": (4, 1000, 400, NO)})
    low = Topo("low", {"s": (1, 900, 10, NO)}, priority=30).demand()
    mid = Topo("mid", {"s": (1, 900, 10, NO)}, priority=20).demand()
    high = Topo("high", {"s": (1, 1900, 10, NO)}, priority=10).demand()
    current = {"low": {("s", 1, 1): ("sup-0", 0)}, "mid": {("s", 1, 1): ("sup-0", 1)}}
    plan = schedule_resource_aware([low, mid, high], nodes, current)
    assert plan.placements["high"] == {("s", 1, 1): ("sup-0", 0)}
    assert plan.placements["mid"] == {("s", 1, 1): ("sup-1", 0)}
    assert set(plan.evicted) == {"low", "mid"}
    assert "evicted" in plan.waiting["low"] and "mid" not in plan.waiting
