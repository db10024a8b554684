"""The planner: turns a builder's graph of operations into bolts (Storm's ``StreamBuilder.build``).

Consecutive operations of one parallelism run in one bolt; a new bolt starts after a spout, at a ``window``, at a
``repartition``, at a key repartition (fields grouping on ``"key"``) and at a global aggregation of a stream of
parallelism above 1 (global grouping).  A windowed aggregation that crosses a repartition is split: a partial
aggregate per task where the window is, merged downstream once every upstream task has ended the window (each
task says so on a punctuation stream, all-grouped).  ``update_state_by_key`` always starts a stateful bolt
partitioned by key; ``state_query`` joins that bolt, fed by fields grouping on ``"value"``.

The result, a :class:`Plan`, is pure data: :mod:`storm_py.streams.bolts` runs each :class:`BoltPlan`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from storm_py.api.topology import ALL, FIELDS, GLOBAL, SHUFFLE, Grouping
from storm_py.api.tuple import DEFAULT_STREAM, Fields
from storm_py.streams import nodes as n
from storm_py.streams.nodes import Node
from storm_py.streams.windows import Window

#: the fields of a generated bolt's streams
VALUE_FIELDS: Final = ("value",)
PAIR_FIELDS: Final = ("key", "value")
#: the suffix of the stream that ends a window for the tasks downstream (Storm's punctuation)
PUNCTUATION: Final = "__punctuation"
PUNCTUATION_FIELDS: Final = ("task",)

# combine modes
RUNNING: Final = "running"  # emit the result so far after every value
WINDOWED: Final = "windowed"  # emit once per window, then start afresh
PARTIAL: Final = "partial"  # emit the raw accumulators once per window (merged downstream)
MERGE: Final = "merge"  # merge partial accumulators, emit once per window

# how an input tuple becomes a value
AS_TUPLE: Final = "tuple"  # a spout's tuple, as it is
AS_VALUE: Final = "value"
AS_PAIR: Final = "pair"

# entry ports of a step
MAIN: Final = 0
RIGHT_SIDE: Final = 1


@dataclass
class Step:
    """One operation inside a bolt: what it does and where its results go."""

    kind: str
    operation: str
    fn: Any = None
    arg: Any = None
    mode: str = ""
    #: steps of the same bolt fed by this one: (step index, entry port); a branch's children are per port index
    children: list[tuple[int, int]] = field(default_factory=list)
    branch_children: list[list[tuple[int, int]]] = field(default_factory=list)
    #: the stream this step's results leave the bolt on, when anything outside consumes them
    output: str | None = None
    pair: bool = False


@dataclass
class BoltPlan:
    """One generated bolt: its steps, its inputs and outputs."""

    id: str
    parallelism: int
    window: Window | None = None
    stateful: bool = False
    steps: list[Step] = field(default_factory=list)
    #: (component, stream) -> grouping
    inputs: dict[tuple[str, str], Grouping] = field(default_factory=dict)
    #: (component, stream) -> how its tuples become values, and the steps (index, port) they enter
    entries: dict[tuple[str, str], tuple[str, list[tuple[int, int]]]] = field(default_factory=dict)
    #: output stream -> its fields
    outputs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: inputs that carry punctuation: (component, punctuation stream)
    punctuation_inputs: list[tuple[str, str]] = field(default_factory=list)
    #: the event-time field every output tuple carries last (a window of the builder has a timestamp field)
    timestamp_field: str | None = None

    def windowed(self) -> bool:
        """Whether its values come in windows (its own, or ended by punctuation from upstream)."""
        return self.window is not None or bool(self.punctuation_inputs)


@dataclass
class Plan:
    """What ``build()`` makes: the spouts, the generated bolts and the user's sink bolts, in build order."""

    spouts: dict[str, tuple[Any, int]] = field(default_factory=dict)
    #: component id -> a generated bolt or ("sink", user bolt, parallelism, inputs)
    components: list[BoltPlan | Sink] = field(default_factory=list)


@dataclass
class Sink:
    """A user bolt given to ``to``."""

    id: str
    bolt: Any
    parallelism: int
    inputs: dict[tuple[str, str], Grouping]


class _Planner:
    def __init__(self, timestamp_field: str | None) -> None:
        self.timestamp_field = timestamp_field
        self.plan = Plan()
        self.spout_count = 0
        self.bolt_count = 0
        self.stream_count = 0
        #: node -> (component id, step index) (a spout's step index is -1)
        self.where: dict[Node, tuple[str, int]] = {}
        self.bolts: dict[str, BoltPlan] = {}
        self.keyed: dict[Node, bool] = {}
        #: node -> (component, stream) where its results leave their component
        self.outlets: dict[Node, tuple[str, str]] = {}

    # --------------------------------------------------------------------------------------------- helpers

    def new_bolt(self, parallelism: int, window: Window | None = None, stateful: bool = False) -> BoltPlan:
        self.bolt_count += 1
        bolt = BoltPlan(f"bolt{self.bolt_count}", parallelism, window, stateful,
                        timestamp_field=self.timestamp_field)
        self.bolts[bolt.id] = bolt
        self.plan.components.append(bolt)
        return bolt

    def add_step(self, bolt: BoltPlan, node: Node, step: Step) -> int:
        bolt.steps.append(step)
        index = len(bolt.steps) - 1
        self.where[node] = (bolt.id, index)
        return index

    def step_of(self, node: Node) -> tuple[BoltPlan, int] | None:
        cid, index = self.where[node]
        bolt = self.bolts.get(cid)
        return None if bolt is None else (bolt, index)

    def outlet(self, node: Node) -> tuple[str, str]:
        """Where ``node``'s results leave its component (declared on first use)."""
        found = self.outlets.get(node)
        if found is not None:
            return found
        cid, index = self.where[node]
        if node.kind == n.SPOUT:
            found = (cid, DEFAULT_STREAM)
        else:
            bolt = self.bolts[cid]
            step = bolt.steps[index]
            self.stream_count += 1
            step.output = f"s{self.stream_count}"
            fields = PAIR_FIELDS if step.pair else VALUE_FIELDS
            if self.timestamp_field is not None:
                fields = (*fields, self.timestamp_field)
            bolt.outputs[step.output] = fields
            found = (cid, step.output)
        self.outlets[node] = found
        return found

    def subscribe(self, bolt: BoltPlan | Sink, source: Node, grouping: Grouping, entry: tuple[int, int] | None) -> None:
        key = self.outlet(source)
        bolt.inputs.setdefault(key, grouping)
        if isinstance(bolt, BoltPlan) and entry is not None:
            how = AS_TUPLE if source.kind == n.SPOUT else AS_PAIR if source.pair else AS_VALUE
            bolt.entries.setdefault(key, (how, []))[1].append(entry)

    def link(self, parent: Node, child_index: int, port: int = MAIN) -> None:
        """An edge inside a bolt: ``parent``'s step feeds step ``child_index`` of the same bolt."""
        found = self.step_of(parent)
        assert found is not None
        bolt, index = found
        step = bolt.steps[index]
        if step.kind == n.BRANCH:
            raise AssertionError("a branch feeds only its ports")
        step.children.append((child_index, port))

    def place_with(self, parent: Node, node: Node, step: Step, port: int = MAIN) -> int:
        found = self.step_of(parent)
        assert found is not None
        bolt, parent_index = found
        index = self.add_step(bolt, node, step)
        parent_step = bolt.steps[parent_index]
        if parent_step.kind == n.BRANCH:
            parent_step.branch_children[node.arg].append((index, port))
        else:
            parent_step.children.append((index, port))
        return index

    def start_bolt(self, node: Node, step: Step, source: Node, grouping: Grouping, *, window: Window | None = None,
                   stateful: bool = False, parallelism: int | None = None) -> BoltPlan:
        bolt = self.new_bolt(parallelism or node.parallelism, window, stateful)
        index = self.add_step(bolt, node, step)
        self.subscribe(bolt, source, grouping, (index, MAIN))
        return bolt

    def in_bolt(self, node: Node) -> bool:
        """Whether ``node`` runs in a generated bolt (not a spout or a sink)."""
        return self.step_of(node) is not None and node.kind != n.SINK

    # ---------------------------------------------------------------------------------------------- placing

    def run(self, graph_nodes: list[Node]) -> Plan:
        for node in graph_nodes:
            self.place(node)
        self.wire_punctuation()
        return self.plan

    def place(self, node: Node) -> None:
        kind = node.kind
        if kind == n.SPOUT:
            self.spout_count += 1
            cid = f"spout{self.spout_count}"
            self.plan.spouts[cid] = (node.fn, node.parallelism)
            self.where[node] = (cid, -1)
            self.keyed[node] = node.parallelism == 1
            return
        if kind == n.SINK:
            self.bolt_count += 1
            sink = Sink(f"bolt{self.bolt_count}", node.fn, node.parallelism, {})
            self.plan.components.append(sink)
            self.where[node] = (sink.id, -1)
            self.subscribe(sink, node.parents[0], Grouping(SHUFFLE), None)
            return
        if kind == n.JOIN:
            self.place_join(node)
            return
        parent = node.parents[0]
        step = Step(kind, node.operation, node.fn, node.arg, pair=node.pair)
        if kind == n.BRANCH:
            step.branch_children = [[] for _ in node.fn]
        keyed = node.parallelism == 1 or (self.keyed[parent] and (kind in n.KEEPS_KEYS or node.keeps_key))
        key_fields = Grouping(FIELDS, Fields(["key"]))
        if kind == n.WINDOW:
            split = parent.pair and node.parallelism > 1
            self.start_bolt(node, step, parent, key_fields if split else Grouping(SHUFFLE), window=node.arg)
            keyed = node.parallelism == 1 or split
        elif kind == n.REPARTITION:
            self.start_bolt(node, step, parent, Grouping(SHUFFLE))
        elif kind == n.UPDATE_STATE:
            self.start_bolt(node, step, parent, key_fields, stateful=True)
            keyed = True
        elif kind == n.STATE_QUERY:
            found = self.step_of(node.arg)
            assert found is not None
            bolt = found[0]
            index = self.add_step(bolt, node, step)
            grouping = Grouping(FIELDS, Fields(["value"])) if self.in_bolt(parent) and not parent.pair else \
                Grouping(SHUFFLE)
            self.subscribe(bolt, parent, grouping, (index, MAIN))
            keyed = True
        elif kind in (n.COMBINE, n.COMBINE_BY_KEY):
            keyed = self.place_combine(node, step, parent)
        elif not self.in_bolt(parent) or node.parallelism != parent.parallelism:
            self.start_bolt(node, step, parent, Grouping(SHUFFLE))
        else:
            self.place_with(parent, node, step)
        self.keyed[node] = keyed

    def place_combine(self, node: Node, step: Step, parent: Node) -> bool:
        by_key = node.kind == n.COMBINE_BY_KEY
        windowed = node.window is not None
        split = parent.parallelism > 1 and (not by_key or not self.keyed[parent])
        grouping = Grouping(FIELDS, Fields(["key"])) if by_key else Grouping(GLOBAL, Fields())
        if not split:
            step.mode = WINDOWED if windowed else RUNNING
            if self.in_bolt(parent):
                self.place_with(parent, node, step)
            else:
                self.start_bolt(node, step, parent, grouping)
            return True
        if windowed and self.in_bolt(parent):
            partial = Step(node.kind, node.operation, node.fn, mode=PARTIAL, pair=by_key)
            proxy = Node(node.kind, node.operation, [], parent.parallelism, by_key)
            self.place_with(parent, proxy, partial)
            step.mode = MERGE
            self.start_bolt(node, step, proxy, grouping)
        else:
            step.mode = WINDOWED if windowed else RUNNING
            self.start_bolt(node, step, parent, grouping)
        return True

    def place_join(self, node: Node) -> None:
        left, right = node.parents
        step = Step(n.JOIN, node.operation, node.fn, node.arg, pair=True)
        split = node.parallelism > 1 and not (self.keyed[left] and self.keyed[right])
        by_key = Grouping(FIELDS, Fields(["key"]))
        home: tuple[Node, Node, int, int] | None = None  # (the side whose bolt runs the join, the other, ports)
        left_found = self.step_of(left) if self.in_bolt(left) else None
        right_found = self.step_of(right) if self.in_bolt(right) else None
        if (not split and left_found is not None and right_found is not None and left_found[0] is right_found[0]
                and left_found[0].window is not None):
            index = self.place_with(left, node, step, MAIN)
            self.link(right, index, RIGHT_SIDE)
            self.keyed[node] = True
            return
        if not split and left.window_node is not right.window_node:
            for side, other, port, other_port in ((left, right, MAIN, RIGHT_SIDE), (right, left, RIGHT_SIDE, MAIN)):
                found = self.step_of(side) if self.in_bolt(side) else None
                if (found is not None and found[0].window is not None and other.window_node is None
                        and found[0].parallelism == node.parallelism):
                    home = (side, other, port, other_port)
                    break
        if home is None:
            bolt = self.new_bolt(node.parallelism)
            index = self.add_step(bolt, node, step)
            self.subscribe(bolt, left, by_key, (index, MAIN))
            self.subscribe(bolt, right, by_key, (index, RIGHT_SIDE))
        else:
            side, other, port, other_port = home
            index = self.place_with(side, node, step, port)
            bolt = self.bolts[self.where[side][0]]
            other_found = self.step_of(other) if self.in_bolt(other) else None
            if other_found is not None and other_found[0] is bolt:
                self.link(other, index, other_port)
            else:
                self.subscribe(bolt, other, by_key, (index, other_port))
        self.keyed[node] = True

    def wire_punctuation(self) -> None:
        """Every bolt fed by a windowed bolt (not itself windowing) hears when upstream windows end."""
        changed = True
        while changed:
            changed = False
            for bolt in self.bolts.values():
                if bolt.window is not None:
                    continue
                for cid, stream in bolt.entries:
                    source = self.bolts.get(cid)
                    key = (cid, stream + PUNCTUATION)
                    if source is not None and source.windowed() and key not in bolt.punctuation_inputs:
                        bolt.punctuation_inputs.append(key)
                        changed = True
        for bolt in self.bolts.values():
            if bolt.windowed():
                for stream in list(bolt.outputs):
                    bolt.outputs[stream + PUNCTUATION] = PUNCTUATION_FIELDS
            for key in bolt.punctuation_inputs:
                bolt.inputs[key] = Grouping(ALL)


def plan(graph_nodes: list[Node]) -> Plan:
    """The bolts for a builder's nodes (in declaration order).

    When a window reads event time from a field, every generated bolt carries each value's timestamp as the last
    field of its output tuples under that name (Storm's ``StreamBuilder``), so a window downstream finds it.
    """
    fields = [node.arg.timestamp_field for node in graph_nodes if node.kind == n.WINDOW and node.arg.timestamp_field]
    return _Planner(fields[0] if fields else None).run(graph_nodes)
