"""The Trident API: ``TridentTopology``, ``Stream``, ``GroupedStream``, ``TridentState`` and ``Assembly``.

Declaring a stream builds a graph of :class:`Node` (spouts, processors, repartitions); ``build()`` hands
it to the planner (:mod:`storm_py.trident.planner`).  Every processing operation becomes one processor
node; ``partition_by``/``shuffle``/``broadcast``/``global_``/``batch_global`` become partition nodes, the
only places a stream crosses from one bolt to another.  Aggregations are planned as Storm plans them: a
combiner in two phases (partial aggregate, repartition, combine), a reducer or aggregator after the
repartition.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from storm_py.api.tuple import Fields
from storm_py.errors import InvalidTopologyException
from storm_py.trident import aggregate as a
from storm_py.trident import processors as p
from storm_py.trident.builtin import (
    CombinerAggStateUpdater,
    MapCombinerAggStateUpdater,
    MapReducerAggStateUpdater,
    ReducerAggStateUpdater,
)
from storm_py.trident.drpc import RETURN_INFO, ReturnProcessor, last_descendant
from storm_py.trident.graph import PARTITION, PROCESSOR, SPOUT, Node, StreamGraph
from storm_py.trident.operation import CombinerAggregator, is_filter
from storm_py.trident.partitioned import PartitionedTridentSpout, is_partitioned
from storm_py.trident.planner import plan
from storm_py.trident.rich import RichSpoutBatch
from storm_py.trident.tuple import Schema, as_names

if TYPE_CHECKING:
    from storm_py.api.topology import StormTopology

FieldsArg = Fields | Sequence[str] | str

class TridentTopology(StreamGraph):
    """Storm's ``TridentTopology``: ``new_stream``, ``merge``, ``join``, ``build``."""

    def new_stream(self, txid: str, spout: Any) -> Stream:
        """A stream of the batches of ``spout``: a Trident spout, a (opaque-)partitioned transactional spout
        (e.g. the Kafka Trident spouts) or a regular spout whose tuples are taken in batches; ``txid`` names
        its persisted metadata (unique per topology)."""
        if not isinstance(txid, str) or not txid or "/" in txid or "+" in txid:
            raise InvalidTopologyException(
                f"new_stream: txid must be a non-empty string without '/' or '+', got {txid!r}"
            )
        if any(n.kind == SPOUT and n.txid == txid for n in self.nodes):
            raise InvalidTopologyException(f"new_stream: txid {txid!r} is already used by another stream")
        if is_partitioned(spout):
            spout = PartitionedTridentSpout(spout, txid)
        elif callable(getattr(spout, "next_tuple", None)) and not callable(getattr(spout, "emit_batch", None)):
            spout = RichSpoutBatch(spout)
        if not callable(getattr(spout, "emit_batch", None)) or not callable(getattr(spout, "get_output_fields", None)):
            raise InvalidTopologyException(f"new_stream: {type(spout).__name__} is not a Trident spout")
        node = self.add(SPOUT, Schema(spout.get_output_fields()), [])
        node.spout = spout
        node.txid = txid
        return Stream(self, node)

    def new_drpc_stream(self, function: str, local_drpc: Any = None) -> Stream:
        """A stream of the DRPC requests of ``function`` (fields ``args``, ``return-info``), each request a
        batch answered with the tuples the stream ends with; without ``local_drpc`` the requests come from
        the servers of ``drpc.servers``."""
        try:
            drpc = importlib.import_module("storm_py.drpc")
        except ImportError as exc:
            raise InvalidTopologyException(f"new_drpc_stream({function!r}): storm_py.drpc is not available") from exc
        return drpc_stream(self, function, drpc.DRPCSpout(function, local_drpc), drpc.ReturnResults)

    def merge(self, *streams: Stream) -> Stream:
        """One stream of every tuple of ``streams``, under the first stream's field names."""
        flat = list(streams[0]) if len(streams) == 1 and isinstance(streams[0], (list, tuple)) else list(streams)
        if not flat:
            raise InvalidTopologyException("merge: no stream given")
        width = len(flat[0].node.schema.fields)
        for s in flat:
            if len(s.node.schema.fields) != width:
                raise InvalidTopologyException(
                    f"merge: streams have different numbers of fields: {[list(x.get_output_fields()) for x in flat]}"
                )
        schema = flat[0].node.schema
        return Stream(self, _proc(self, p.MergeProcessor(schema), [s.node for s in flat]))

    def join(
        self, stream1: Stream, fields1: FieldsArg, stream2: Stream, fields2: FieldsArg, out_fields: FieldsArg
    ) -> Stream:
        """The inner join of two streams within each batch: ``join fields, stream1's other fields, stream2's``."""
        keys1, keys2 = as_names(fields1, "join"), as_names(fields2, "join")
        if len(keys1) != len(keys2) or not keys1:
            raise InvalidTopologyException(f"join: join fields {keys1} and {keys2} must be non-empty and as many")
        s1, s2 = stream1.node.schema, stream2.node.schema
        rest1 = [f for f in s1.fields if f not in keys1]
        rest2 = [f for f in s2.fields if f not in keys2]
        out = as_names(out_fields, "join")
        if len(out) != len(keys1) + len(rest1) + len(rest2):
            raise InvalidTopologyException(
                f"join: out_fields {out} must name the {len(keys1)} join fields, {rest1} and {rest2}"
            )
        left, right = stream1.partition_by(keys1), stream2.partition_by(keys2)
        proc = p.JoinProcessor(
            Schema(out),
            (s1.positions(keys1, "join"), s2.positions(keys2, "join")),
            (s1.positions(rest1, "join"), s2.positions(rest2, "join")),
        )
        return Stream(self, _proc(self, proc, [left.node, right.node]))

    def build(self) -> StormTopology:
        """The topology: one bolt per group of operations between repartitions, batches coordinated by the
        transactional coordinator."""
        _complete_drpc(self)
        return plan(self).build()


def _proc(topology: TridentTopology, proc: p.Processor, parents: list[Node]) -> Node:
    node = topology.add(PROCESSOR, proc.schema, parents)
    node.proc = proc
    return node


def drpc_stream(topology: TridentTopology, function: str, spout: Any, return_results: Any) -> Stream:
    """A DRPC stream over ``spout`` (a rich spout of ``args``/``return-info`` tuples); ``return_results()``
    makes the bolt that answers a ``[result, return-info]`` tuple."""
    if not isinstance(function, str) or not function:
        raise InvalidTopologyException(f"new_drpc_stream: function must be a non-empty string, got {function!r}")
    batches = RichSpoutBatch(spout, max_batch_size=1)
    if RETURN_INFO not in batches.get_output_fields():
        raise InvalidTopologyException(f"new_drpc_stream: {type(spout).__name__} emits no {RETURN_INFO!r} field")
    stream = topology.new_stream(f"drpc-{function}", batches)
    topology.drpc_returns.append((stream.node, return_results))
    return stream


def _complete_drpc(topology: TridentTopology) -> None:
    """Join every DRPC stream's last operation with its requests' return info (once per topology)."""
    for spout_node, return_results in topology.drpc_returns:
        last = last_descendant(topology.nodes, spout_node)
        requests = Stream(topology, spout_node).project([RETURN_INFO]).batch_global()
        results = Stream(topology, last).batch_global()
        proc = ReturnProcessor(Schema([]), return_results)
        _proc(topology, proc, [requests.node, results.node])
    topology.drpc_returns = []


def _out_schema(schema: Schema, added: list[str], what: str) -> Schema:
    clash = [f for f in added if f in schema.index]
    if clash:
        raise InvalidTopologyException(f"{what}: output fields {clash} are already fields of the stream")
    return Schema([*schema.fields, *added])


class Stream:
    """Storm's Trident ``Stream``: each operation returns a new stream."""

    def __init__(self, topology: TridentTopology, node: Node) -> None:
        self.topology = topology
        self.node = node

    def get_output_fields(self) -> Fields:
        """The stream's fields."""
        return self.node.schema.fields

    def _then(self, proc: p.Processor) -> Stream:
        return Stream(self.topology, _proc(self.topology, proc, [self.node]))

    def _in(self, fields: FieldsArg | None, what: str) -> tuple[Schema, list[int]]:
        schema = self.node.schema
        names = list(schema.fields) if fields is None else as_names(fields, what)
        return Schema(names), schema.positions(names, what)

    # ---------------------------------------------------------------------------------- per-tuple operations

    def each(self, in_fields: FieldsArg, function: Any, out_fields: FieldsArg | None = None) -> Stream:
        """Run a function (its emits appended to the tuple) or a filter on every tuple."""
        if out_fields is None and is_filter(function):
            return self.filter(in_fields, function)
        if not callable(getattr(function, "execute", None)):
            raise InvalidTopologyException(f"each: {type(function).__name__} is neither a function nor a filter")
        added = as_names(out_fields, "each")
        in_schema, positions = self._in(in_fields, "each")
        schema = _out_schema(self.node.schema, added, "each")
        return self._then(p.EachProcessor(schema, in_schema, positions, function, list(self.node.schema.fields)))

    def filter(self, in_fields: Any, filter: Any = None) -> Stream:
        """Keep the tuples the filter keeps (``filter(filter)`` sees every field)."""
        if filter is None:
            in_fields, filter = None, in_fields
        if not is_filter(filter):
            raise InvalidTopologyException(f"filter: {type(filter).__name__} has no is_keep")
        in_schema, positions = self._in(in_fields, "filter")
        return self._then(p.FilterProcessor(self.node.schema, in_schema, positions, filter))

    def _mapping(self, function: Any, out_fields: FieldsArg | None, kind: str) -> Stream:
        schema = self.node.schema if out_fields is None else Schema(as_names(out_fields, kind))
        return self._then(p.MapProcessor(schema, self.node.schema, function, kind))

    def map(self, function: Any, out_fields: FieldsArg | None = None) -> Stream:
        """One output tuple (a list of values) per tuple; the stream's fields unless ``out_fields`` is given."""
        return self._mapping(function, out_fields, "map")

    def flat_map(self, function: Any, out_fields: FieldsArg | None = None) -> Stream:
        """Any number of output tuples per tuple."""
        return self._mapping(function, out_fields, "flat_map")

    def peek(self, consumer: Any) -> Stream:
        """Look at every tuple (a callable or an object with ``accept``); the stream is unchanged."""
        return self._then(p.MapProcessor(self.node.schema, self.node.schema, consumer, "peek"))

    def project(self, fields: FieldsArg) -> Stream:
        """Keep only ``fields``, in that order."""
        schema, positions = self._in(fields, "project")
        return self._then(p.ProjectProcessor(schema, positions))

    # ---------------------------------------------------------------------------------------- repartitions

    def _partition(self, kind: str, fields: list[str] | None = None) -> Stream:
        base = self.node.parents[0] if self.node.kind == PARTITION else self.node
        node = self.topology.add(PARTITION, self.node.schema, [base])
        node.partition = (kind, fields or [])
        return Stream(self.topology, node)

    def partition_by(self, fields: FieldsArg) -> Stream:
        """Tuples with equal ``fields`` go to the same partition."""
        names = as_names(fields, "partition_by")
        self.node.schema.positions(names, "partition_by")
        return self._partition("fields", names)

    def shuffle(self) -> Stream:
        """Tuples spread randomly over the partitions."""
        return self._partition("shuffle")

    def broadcast(self) -> Stream:
        """Every tuple to every partition."""
        return self._partition("all")

    def global_(self) -> Stream:
        """Every tuple to one partition (the same one for every batch)."""
        return self._partition("global")

    def batch_global(self) -> Stream:
        """Every tuple of a batch to one partition, a different one per batch."""
        return self._partition("batch_global")

    def parallelism_hint(self, n: int) -> Stream:
        """Run every operation since the last repartition in ``n`` tasks (right after a repartition: the
        operations after it)."""
        if not isinstance(n, int) or n < 1:
            raise InvalidTopologyException(f"parallelism_hint must be a positive integer, got {n!r}")
        if self.node.kind == PARTITION:  # right after a repartition: the operations that follow it
            self.node.parallelism = n
            return self
        todo, seen = [self.node], set()
        while todo:
            node = todo.pop()
            if node.id in seen or node.kind == PARTITION:
                continue
            seen.add(node.id)
            node.parallelism = n
            todo.extend(node.parents)
        return self

    def name(self, name: str) -> Stream:
        """Name the operation (bolts are named after the operations they run)."""
        self.node.names.append(str(name))
        return self

    # ----------------------------------------------------------------------------------------- aggregation

    def group_by(self, fields: FieldsArg) -> GroupedStream:
        """Group by ``fields`` for aggregate, persistent_aggregate and state_query."""
        names = as_names(fields, "group_by")
        self.node.schema.positions(names, "group_by")
        return GroupedStream(self, names)

    def partition_aggregate(self, *args: Any) -> Stream:
        """``partition_aggregate([in_fields,] aggregator, out_fields)``: per partition and batch."""
        in_fields, agg, out = _agg_args(args, "partition_aggregate")
        return self._aggregate(in_fields, agg, out, None)

    def _aggregate(self, in_fields: Any, agg: Any, out: list[str], group: list[str] | None) -> Stream:
        in_schema, positions = self._in(in_fields, "aggregate")
        keys = group or []
        schema = Schema([*keys, *out])
        group_pos = None if group is None else self.node.schema.positions(keys, "aggregate")
        if isinstance(agg, CombinerAggregator):
            return self._then(a.CombinerProcessor(schema, in_schema, positions, agg, group_pos))
        return self._then(a.AggregateProcessor(schema, in_schema, positions, agg, group_pos))

    def aggregate(self, *args: Any) -> Stream:
        """``aggregate([in_fields,] aggregator, out_fields)``: one result per batch over all partitions."""
        in_fields, agg, out = _agg_args(args, "aggregate")
        if isinstance(agg, CombinerAggregator):
            partial = self._aggregate(in_fields, agg, out, None)
            return partial.global_()._aggregate(out, a.CombineValues(agg), out, None)
        return self.global_()._aggregate(in_fields, agg, out, None)

    def persistent_aggregate(self, state_factory: Any, *args: Any) -> TridentState:
        """``persistent_aggregate(state_factory, [in_fields,] aggregator, out_fields)``: the aggregate over
        every batch so far, kept in the state under one global key."""
        in_fields, agg, out = _agg_args(args, "persistent_aggregate")
        if isinstance(agg, CombinerAggregator):
            batch = self.aggregate(in_fields, agg, out)
            return batch.partition_persist(state_factory, out, CombinerAggStateUpdater(agg), out)
        in_schema, _ = self._in(in_fields, "persistent_aggregate")
        return self.global_().partition_persist(state_factory, list(in_schema.fields), ReducerAggStateUpdater(agg), out)

    def partition_persist(
        self, state_factory: Any, fields: FieldsArg | None, updater: Any, out_fields: FieldsArg | None = None
    ) -> TridentState:
        """Hand each batch's tuples (``fields``) to ``updater`` with this partition's state, in the commit
        phase; what the updater emits (``out_fields``) is the state's new-values stream."""
        if not callable(getattr(state_factory, "make_state", None)):
            raise InvalidTopologyException(f"partition_persist: {type(state_factory).__name__} is no StateFactory")
        in_schema, positions = self._in(fields, "partition_persist")
        out = Schema(as_names(out_fields, "partition_persist"))
        proc = p.PersistProcessor(out, in_schema, positions, len(self.topology.nodes), updater)
        node = _proc(self.topology, proc, [self.node])
        node.state_factory = state_factory
        return TridentState(Stream(self.topology, node))

    def state_query(self, state: TridentState, in_fields: FieldsArg, function: Any, out_fields: FieldsArg) -> Stream:
        """Look each tuple up in ``state`` (run in the bolt holding the state); emits are appended."""
        base = self if self.node.kind == PARTITION else self.shuffle()
        in_schema, positions = base._in(in_fields, "state_query")
        schema = _out_schema(base.node.schema, as_names(out_fields, "state_query"), "state_query")
        state_node = state.stream.node
        proc = p.QueryProcessor(schema, in_schema, positions, state_node.id, function)
        node = _proc(self.topology, proc, [base.node])
        node.colocate = state_node
        return Stream(self.topology, node)

    def apply_assembly(self, assembly: Assembly) -> Stream:
        """``assembly.apply(self)``."""
        return assembly.apply(self)


class Assembly:
    """Storm's ``Assembly``: a reusable chain of operations applied with ``Stream.apply_assembly``."""

    def apply(self, input: Stream) -> Stream:
        """The stream after the assembly's operations."""
        raise NotImplementedError(f"{type(self).__name__} must implement apply")


def _agg_args(args: tuple[Any, ...], what: str) -> tuple[Any, Any, list[str]]:
    if len(args) == 2:
        return None, args[0], as_names(args[1], what)
    if len(args) == 3:
        return args[0], args[1], as_names(args[2], what)
    raise InvalidTopologyException(f"{what} takes ([in_fields,] aggregator, out_fields), got {len(args)} arguments")


class GroupedStream:
    """Storm's ``GroupedStream``: aggregations and queries per group."""

    def __init__(self, stream: Stream, fields: list[str]) -> None:
        self.stream = stream
        self.group_fields = fields

    def get_output_fields(self) -> Fields:
        """The grouped stream's fields."""
        return self.stream.get_output_fields()

    def partition_aggregate(self, *args: Any) -> Stream:
        """Per group within each partition: ``group fields + out_fields``."""
        in_fields, agg, out = _agg_args(args, "partition_aggregate")
        return self.stream._aggregate(in_fields, agg, out, self.group_fields)

    def aggregate(self, *args: Any) -> Stream:
        """Per group over the whole batch: ``group fields + out_fields``."""
        in_fields, agg, out = _agg_args(args, "aggregate")
        keys = self.group_fields
        if isinstance(agg, CombinerAggregator):
            partial = self.stream._aggregate(in_fields, agg, out, keys)
            return partial.partition_by(keys)._aggregate(out, a.CombineValues(agg), out, keys)
        return self.stream.partition_by(keys)._aggregate(in_fields, agg, out, keys)

    def persistent_aggregate(self, state_factory: Any, *args: Any) -> TridentState:
        """Per group over every batch so far, kept in a map state keyed by the group's values."""
        in_fields, agg, out = _agg_args(args, "persistent_aggregate")
        keys = self.group_fields
        if isinstance(agg, CombinerAggregator):
            batch = self.aggregate(in_fields, agg, out)
            updater: Any = MapCombinerAggStateUpdater(agg, len(keys))
            return batch.partition_persist(state_factory, [*keys, *out], updater, [*keys, *out])
        in_schema, inputs = self.stream._in(in_fields, "persistent_aggregate")
        schema = self.stream.node.schema
        updater = MapReducerAggStateUpdater(agg, schema.positions(keys, "persistent_aggregate"), inputs, in_schema)
        return self.stream.partition_by(keys).partition_persist(state_factory, None, updater, [*keys, *out])

    def state_query(self, state: TridentState, *args: Any) -> Stream:
        """``state_query(state, [in_fields,] function, out_fields)`` per group (in_fields default to the group)."""
        if len(args) == 2:
            in_fields, function, out = self.group_fields, args[0], args[1]
        else:
            in_fields, function, out = args
        return self.stream.partition_by(self.group_fields).state_query(state, in_fields, function, out)


class TridentState:
    """Storm's ``TridentState``: the result of ``persistent_aggregate`` / ``partition_persist``."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream

    def parallelism_hint(self, n: int) -> TridentState:
        """Run the state's bolt (every operation since the last repartition) in ``n`` tasks."""
        self.stream.parallelism_hint(n)
        return self

    def new_values_stream(self) -> Stream:
        """The values the updater emits each batch (for aggregates: the new value of every updated key)."""
        return self.stream
