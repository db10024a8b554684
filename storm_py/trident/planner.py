"""The Trident planner: the stream graph becomes bolts, wired onto the transactional machinery.

As Storm's ``TridentTopology.build``: processors joined by an edge that is no repartition (and a state
query with the state it reads) fuse into one *group*; each group becomes one bolt running a
:class:`~storm_py.trident.bolt.SubtopologyExecutor`, with the largest parallelism hint of its members.
A repartition becomes the grouping one bolt subscribes to another with (``fields``, ``shuffle``, ``all``,
``global``, or ``batch_global``'s per-batch choice); a stream straight from a spout is shuffled.  Every
spout rides in one :class:`~storm_py.trident.spout.TridentSpoutsExecutor` under the transactional builder,
which adds the coordinator (txids, replays, ordered commits, persisted metadata) and the counting protocol;
groups holding state are committers, so their updates run in the commit phase in txid order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from storm_py.errors import InvalidTopologyException
from storm_py.transactional.builder import TransactionalTopologyBuilder
from storm_py.trident.bolt import BatchGlobalGrouping, SubtopologyExecutor
from storm_py.trident.graph import PARTITION, PROCESSOR, SPOUT, Node, StreamGraph
from storm_py.trident.processors import PersistProcessor, Processor, QueryProcessor
from storm_py.trident.spout import CommitterTridentSpoutsExecutor, TridentSpoutsExecutor

if TYPE_CHECKING:
    from storm_py.api.topology import StormTopology

#: the component id of the emitter of every spout (its coordinator is ``<id>/coordinator``)
SPOUT_ID = "trident-spout"


@dataclass
class BoltPlan:
    """One bolt: its id, nodes (declaration order), parallelism, inputs and whether it commits."""

    id: str
    nodes: list[Node]
    parallelism: int
    committer: bool
    #: ``{(component, stream): (grouping kind, fields)}``
    inputs: dict[tuple[str, str], tuple[str, list[str]]] = field(default_factory=dict)
    executor: SubtopologyExecutor | None = None


@dataclass
class Plan:
    """The planned topology: the transactional id, the spouts and the bolts."""

    tx_id: str
    spouts: dict[str, tuple[Any, list[str]]]
    bolts: list[BoltPlan]
    #: emitter tasks: the largest hint of a partitioned spout (the others emit in the first task only)
    spout_parallelism: int = 1

    def build(self) -> StormTopology:
        """The :class:`StormTopology` of this plan."""
        committer = any(getattr(spout, "committer", False) for spout, _ in self.spouts.values())
        spouts = (CommitterTridentSpoutsExecutor if committer else TridentSpoutsExecutor)(self.spouts)
        builder = TransactionalTopologyBuilder(self.tx_id, SPOUT_ID, spouts, self.spout_parallelism)
        for bolt in self.bolts:
            add = builder.set_committer_bolt if bolt.committer else builder.set_bolt
            decl = add(bolt.id, bolt.executor, bolt.parallelism)
            for (component, stream), (kind, fields) in bolt.inputs.items():
                if kind == "fields":
                    decl.fields_grouping(component, fields, stream)
                elif kind == "all":
                    decl.all_grouping(component, stream)
                elif kind == "global":
                    decl.global_grouping(component, stream)
                elif kind == "batch_global":
                    decl.custom_grouping(component, BatchGlobalGrouping(), stream)
                else:
                    decl.shuffle_grouping(component, stream)
        return builder.build_topology()


def stream_id(node: Node) -> str:
    """The stream of a node: a repartition's (its source's output, partitioned), or a spout's or processor's
    output read by another bolt without one."""
    return f"s{node.id}"


def _source(parent: Node) -> tuple[Node, tuple[str, list[str]] | None]:
    """The spout or processor an edge really comes from, and its repartition (None: no repartition)."""
    if parent.kind == PARTITION:
        return parent.parents[0], parent.partition
    return parent, None


def _groups(topology: StreamGraph) -> list[list[Node]]:
    procs = [n for n in topology.nodes if n.kind == PROCESSOR]
    root: dict[int, int] = {n.id: n.id for n in procs}

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    def union(a: Node, b: Node) -> None:
        root[find(a.id)] = find(b.id)

    for node in procs:
        for parent in node.parents:
            if parent.kind == PROCESSOR:
                union(node, parent)
        if node.colocate is not None:
            union(node, node.colocate)
    groups: dict[int, list[Node]] = {}
    for node in procs:
        groups.setdefault(find(node.id), []).append(node)
    return sorted(groups.values(), key=lambda g: g[0].id)


def plan(topology: StreamGraph) -> Plan:
    """Group the graph into bolts and wire their processors."""
    spouts = [n for n in topology.nodes if n.kind == SPOUT]
    if not spouts:
        raise InvalidTopologyException("a Trident topology needs at least one stream (new_stream)")
    groups = _groups(topology)
    component: dict[int, str] = {n.id: SPOUT_ID for n in spouts}
    bolts: list[BoltPlan] = []
    for i, nodes in enumerate(groups):
        names = [name for n in nodes for name in n.names]
        bolt_id = f"b-{i}" + "".join(f"-{name}" for name in names)
        committer = any(isinstance(n.proc, (PersistProcessor, QueryProcessor)) for n in nodes)
        hints = [n.parallelism for n in nodes]
        hints += [q.parallelism for n in nodes for q in n.parents if q.kind == PARTITION]
        parallelism = max(h or 1 for h in hints)
        bolts.append(BoltPlan(bolt_id, nodes, parallelism, committer))
        for n in nodes:
            component[n.id] = bolt_id
    #: the streams each spout or processor sends to other bolts: one per repartition reading it (named
    #: after the partition node), or its own for a direct edge
    streams: dict[int, dict[str, list[str]]] = {}
    for bolt in bolts:
        members = {n.id for n in bolt.nodes}
        for node in bolt.nodes:
            for parent in node.parents:
                src, partition = _source(parent)
                if src.id in members:
                    if partition is not None:
                        raise InvalidTopologyException(
                            f"a stream is repartitioned and then combined again with itself within one bolt "
                            f"({src!r} -> {node!r}); repartition both sides before merging them"
                        )
                    continue
                stream = stream_id(parent)
                streams.setdefault(src.id, {})[stream] = list(src.schema.fields)
                bolt.inputs[(component[src.id], stream)] = partition or ("shuffle", [])
    for bolt in bolts:
        bolt.executor = _executor(bolt, streams, component)
    tx_id = "+".join(sorted(n.txid for n in spouts))
    emitters = max([n.parallelism or 1 for n in spouts if getattr(n.spout, "partitioned", False)], default=1)
    return Plan(tx_id, {n.txid: (n.spout, sorted(streams.get(n.id, {}))) for n in spouts}, bolts, emitters)


def _executor(
    bolt: BoltPlan, streams: dict[int, dict[str, list[str]]], component: dict[int, str]
) -> SubtopologyExecutor:
    members = {n.id for n in bolt.nodes}
    procs: list[Processor] = []
    for slot, node in enumerate(bolt.nodes):
        proc = node.proc
        assert proc is not None
        proc.slot = slot
        proc.children = []
        proc.streams = sorted(streams.get(node.id, {}))
        procs.append(proc)
    routes: dict[tuple[str, str], list[tuple[Processor, int]]] = {}
    for node in bolt.nodes:
        assert node.proc is not None
        for index, parent in enumerate(node.parents):
            src, _ = _source(parent)
            if src.id in members:
                assert src.proc is not None
                src.proc.children.append((node.proc, index))
            else:
                routes.setdefault((component[src.id], stream_id(parent)), []).append((node.proc, index))
    outputs = {stream: fields for n in bolt.nodes for stream, fields in streams.get(n.id, {}).items()}
    states = {n.id: n.state_factory for n in bolt.nodes if n.state_factory is not None}
    kinds = {kind for kind, _ in bolt.inputs.values()}
    single = kinds.pop() if len(kinds) == 1 and kinds <= {"global", "batch_global"} else None
    return SubtopologyExecutor(procs, routes, outputs, states, single)
