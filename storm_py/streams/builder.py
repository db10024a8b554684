"""``StreamBuilder``: where a Stream API pipeline starts (``new_stream``) and becomes a ``StormTopology``
(``build``: the planner's bolts given to an ordinary :class:`~storm_py.api.topology.TopologyBuilder`)."""

from __future__ import annotations

from typing import Any

from storm_py.api.components import OutputFieldsDeclarer, Spout
from storm_py.api.topology import ALL, FIELDS, GLOBAL, BoltDeclarer, Grouping, StormTopology, TopologyBuilder
from storm_py.api.tuple import DEFAULT_STREAM
from storm_py.streams import nodes as n
from storm_py.streams.bolts import generated_bolt
from storm_py.streams.nodes import Graph, Node
from storm_py.streams.operations import PairValueMapper
from storm_py.streams.planner import Sink, plan
from storm_py.streams.stream import PairStream, Stream, check_parallelism


class StreamBuilder:
    """Collects streams into one topology (Storm's ``StreamBuilder``)."""

    def __init__(self) -> None:
        self._graph = Graph()

    def new_stream(self, spout: Spout, value_mapper: Any = None, parallelism: int = 1) -> Stream:
        """A stream of ``spout``'s tuples (its ``"default"`` stream) run with ``parallelism`` tasks; with a
        ``value_mapper``, the stream of ``value_mapper(tuple)`` (a ``PairStream`` for a ``PairValueMapper``)."""
        if isinstance(value_mapper, int) and not isinstance(value_mapper, bool):
            value_mapper, parallelism = None, value_mapper
        if not isinstance(spout, Spout):
            raise TypeError(f"new_stream: expected a Spout, got {spout!r}")
        par = check_parallelism(parallelism, "new_stream")
        declarer = OutputFieldsDeclarer()
        spout.declare_output_fields(declarer)
        if DEFAULT_STREAM not in declarer.streams:
            raise ValueError(f"new_stream: {type(spout).__name__} declares no {DEFAULT_STREAM!r} stream "
                             f"(it declares {sorted(declarer.streams)}); the stream API reads a spout's default stream")
        node = self._graph.add(Node(n.SPOUT, "new_stream", [], par, False, fn=spout))
        stream = Stream(self._graph, node)
        if value_mapper is None:
            return stream
        if isinstance(value_mapper, PairValueMapper):
            return stream.map_to_pair(value_mapper)
        try:
            return stream.map(value_mapper)
        except TypeError:
            raise TypeError(f"new_stream: the value mapper must be callable or have an apply() method, "
                            f"got {value_mapper!r}") from None

    def build(self) -> StormTopology:
        """The topology of every stream declared so far (each call builds the whole graph again)."""
        built = plan(self._graph.nodes)
        builder = TopologyBuilder()
        for cid, (spout, par) in built.spouts.items():
            builder.set_spout(cid, spout, par)
        for component in built.components:
            if isinstance(component, Sink):
                declarer = builder.set_bolt(component.id, component.bolt, component.parallelism)
            else:
                declarer = builder.set_bolt(component.id, generated_bolt(component), component.parallelism)
            for (source, stream), grouping in component.inputs.items():
                _subscribe(declarer, source, stream, grouping)
        return builder.create_topology()


def _subscribe(declarer: BoltDeclarer, source: str, stream: str, grouping: Grouping) -> None:
    if grouping.kind == FIELDS and grouping.fields is not None:
        declarer.fields_grouping(source, grouping.fields, stream)
    elif grouping.kind == GLOBAL:
        declarer.global_grouping(source, stream)
    elif grouping.kind == ALL:
        declarer.all_grouping(source, stream)
    else:
        declarer.shuffle_grouping(source, stream)


__all__ = ["PairStream", "Stream", "StreamBuilder"]
