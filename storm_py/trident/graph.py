"""The stream graph a Trident topology declares: its :class:`Node` s (spouts, processors, repartitions) and the
:class:`StreamGraph` holding them, which the planner (:mod:`storm_py.trident.planner`) turns into bolts."""

from __future__ import annotations

from typing import Any

from storm_py.trident import processors as p
from storm_py.trident.tuple import Schema

SPOUT, PARTITION, PROCESSOR = "spout", "partition", "processor"
PARTITIONS = ("fields", "shuffle", "all", "global", "batch_global")


class Node:
    """One node of the stream graph."""

    def __init__(self, id: int, kind: str, schema: Schema, parents: list[Node]) -> None:
        self.id = id
        self.kind = kind
        self.schema = schema
        self.parents = parents
        self.proc: p.Processor | None = None
        self.spout: Any = None
        self.txid = ""
        self.partition: tuple[str, list[str]] = ("shuffle", [])
        self.parallelism: int | None = None
        self.names: list[str] = []
        #: the state node a query node must share a bolt with
        self.colocate: Node | None = None
        self.state_factory: Any = None

    def __repr__(self) -> str:
        what = self.proc.kind if self.proc is not None else self.partition[0] if self.kind == PARTITION else self.txid
        return f"Node({self.id}, {self.kind}:{what}, {list(self.schema.fields)})"


class StreamGraph:
    """The nodes declared so far, in declaration order (a node's id is its index)."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        #: DRPC streams whose answer is yet to be added (at build): (spout node, ReturnResults factory)
        self.drpc_returns: list[tuple[Node, Any]] = []

    def add(self, kind: str, schema: Schema, parents: list[Node]) -> Node:
        """A new node of ``kind`` reading ``parents``."""
        node = Node(len(self.nodes), kind, schema, parents)
        self.nodes.append(node)
        return node
