"""The graph a :class:`~storm_py.streams.builder.StreamBuilder` collects: one :class:`Node` per operation declared,
each knowing its parents, its parallelism, whether it carries pairs and the window it runs under.  Pure data: the
planner (:mod:`storm_py.streams.planner`) turns the graph into bolts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from storm_py.streams.windows import Window

# node kinds
SPOUT: Final = "spout"
MAP: Final = "map"
FILTER: Final = "filter"
FLAT_MAP: Final = "flat_map"
PEEK: Final = "peek"
FOR_EACH: Final = "for_each"
BRANCH: Final = "branch"
PORT: Final = "port"
WINDOW: Final = "window"
REPARTITION: Final = "repartition"
COMBINE: Final = "combine"
COMBINE_BY_KEY: Final = "combine_by_key"
JOIN: Final = "join"
UPDATE_STATE: Final = "update_state"
STATE_QUERY: Final = "state_query"
SINK: Final = "sink"

#: join kinds: which side's keys are kept when the other side lacks them
INNER: Final = "inner"
LEFT: Final = "left"
RIGHT: Final = "right"
FULL: Final = "full"
CO_GROUP: Final = "co_group"

#: node kinds a value passes through with its key unchanged (a stream partitioned by key stays so)
KEEPS_KEYS: Final = frozenset({FILTER, PEEK, PORT, COMBINE_BY_KEY, JOIN, UPDATE_STATE})


@dataclass(eq=False)
class Node:
    """One operation of the graph."""

    kind: str
    #: the snake_case name of the operation that made it (error messages, introspection)
    operation: str
    parents: list[Node]
    parallelism: int
    #: whether its values are ``(key, value)`` pairs
    pair: bool
    #: the window its values belong to (set by ``window`` and inherited downstream), or ``None``
    window: Window | None = None
    #: the window node upstream that set ``window`` (two distinct ones never meet in a join's bolt)
    window_node: Node | None = None
    #: the operation's function, predicates, aggregator, joiner kind, spout or bolt
    fn: Any = None
    arg: Any = None
    #: a ``map_values``-like operation: keeps the key, so a stream partitioned by key stays so
    keeps_key: bool = False
    children: list[Node] = field(default_factory=list)

    def __post_init__(self) -> None:
        for parent in self.parents:
            parent.children.append(self)


class Graph:
    """The nodes of one builder, in the order they were declared (parents always come before children)."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []

    def add(self, node: Node) -> Node:
        """Record ``node`` (already linked to its parents)."""
        self.nodes.append(node)
        return node
