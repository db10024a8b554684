"""This module owns which tuple trees are traced and the spans a traced tree makes: pure functions of the ids
the tuples already carry, so no worker tells another anything and an untraced tuple carries nothing more.

A tree is traced when its root id falls in the sampled share (:class:`Sampler`: a hash of the root against
the percentage, the same answer in every worker).  Its spans, with ids derived from the tree's ids:

* the trace id: from the root id;
* ``emit <spout>`` (the spout's ``next_tuple`` that emitted the root): span id from the root id, no parent;
* ``send <stream> -> <component>`` for each tuple of the tree a task emits, one per target task: span id from
  the tuple's edge id, parent the span of the emit or execute the tuple was emitted in;
* ``execute <bolt>`` for each traced tuple a bolt executes: span id from its edge id (another derivation),
  parent the ``send`` span of that edge — which the receiving worker can name without being told.

So a tree's spans form the tuple tree: spout emit -> send -> execute -> send -> execute ...  A tuple anchored to
several trees belongs to each traced one.  An unanchored tuple is in no tree and is not traced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from storm_py.api.tuple import Tuple, anchor_map, tuple_anchors

MASK64: Final = (1 << 64) - 1
#: The sampled share is decided in steps of 1/10000 (0.01 %).
SCALE: Final = 10_000
_ROOT, _SEND, _EXECUTE, _TRACE = 0x5EED, 0x5E4D, 0xE8EC, 0x7ACE
#: Fibonacci hashing's multiplier (2**64 over the golden ratio, odd): the high bits of a root times it spread any
#: run of roots, strided or not, evenly over the sampling scale.
_GOLDEN: Final = 0x9E3779B97F4A7C15

Kind = Literal["internal", "producer", "consumer"]


def mix64(value: int, salt: int) -> int:
    """A 64-bit hash of ``value`` (splitmix64's finalizer over value + salt); never 0."""
    z = (value + salt * 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    z ^= z >> 31
    return z or 1


def trace_id(root: int) -> int:
    """The 128-bit trace id of the tree of ``root``."""
    return (mix64(root, _TRACE) << 64) | mix64(root, _ROOT ^ _TRACE)


def root_span_id(root: int) -> int:
    """The span id of the spout emit that started the tree."""
    return mix64(root, _ROOT)


def send_span_id(edge: int) -> int:
    """The span id of sending the tuple of ``edge``."""
    return mix64(edge, _SEND)


def execute_span_id(edge: int) -> int:
    """The span id of executing the tuple of ``edge``."""
    return mix64(edge, _EXECUTE)


class Sampler:
    """Whether a tree is traced: the same answer for a root in every worker."""

    __slots__ = ("threshold",)

    def __init__(self, percent: float) -> None:
        self.threshold = 0
        self.set_percent(percent)

    def set_percent(self, percent: float) -> None:
        """Trace ``percent`` % of the trees from now on."""
        if not 0 <= percent <= 100:
            raise ValueError(f"a sampled share must be a percentage from 0 to 100, got {percent}")
        self.threshold = round(percent * SCALE / 100)

    def sampled(self, root: Any) -> bool:
        """Whether the tree of ``root`` is traced: the top of ``root`` times :data:`_GOLDEN` (64 bits) scaled to
        ``[0, SCALE)``.  Every tuple a traced task sees is asked this, so it is one multiplication rather than
        :func:`mix64`'s three."""
        return ((int(root) * _GOLDEN) & MASK64) * SCALE >> 64 < self.threshold

    def traced(self, tup: Tuple) -> list[tuple[int, int]]:
        """The ``(root, edge)`` pairs of ``tup`` in traced trees (empty: nothing to trace)."""
        root = tup._root
        if root is not None:
            return [(root, tup._edge)] if self.sampled(root) else []
        ids = tup._ids
        if not ids:
            return []
        return [(r, e) for r, e in anchor_map(tuple_anchors(tup)).items() if self.sampled(r)]


@dataclass(frozen=True)
class SpanRecord:
    """One finished span (times: wall-clock epoch seconds)."""

    trace_id: int
    span_id: int
    parent_id: int | None
    name: str
    kind: Kind
    start: float
    end: float
    attributes: Mapping[str, str | int] = field(default_factory=dict)


def _sends(children: Iterable[tuple[int, Tuple]], sampler: Sampler, parent_of: Mapping[int, int],
           components: Mapping[int, str], at: float) -> list[SpanRecord]:
    """``send`` spans of the emitted ``children`` (``(target task, tuple)``) in the trees ``parent_of`` (root ->
    the emitting span) names."""
    out: list[SpanRecord] = []
    for target, child in children:
        for root, edge in sampler.traced(child):
            parent = parent_of.get(root)
            if parent is None:
                continue
            to = components.get(target, "?")
            out.append(SpanRecord(trace_id(root), send_span_id(edge), parent,
                                  f"send {child.source_stream} -> {to}", "producer", at, at,
                                  {"storm_py.stream": child.source_stream, "storm_py.target.task": target,
                                   "storm_py.target.component": to}))
    return out


def spout_spans(component: str, task: int, emitted: Iterable[tuple[int, Tuple]], sampler: Sampler,
                components: Mapping[int, str], start: float, end: float) -> list[SpanRecord]:
    """The spans of one ``next_tuple`` of spout ``task`` that emitted ``emitted`` (``(target task, tuple)``)."""
    emitted = list(emitted)
    roots: dict[int, int] = {}
    out: list[SpanRecord] = []
    for _, tup in emitted:
        root = tup._root
        if root is not None and root not in roots and sampler.sampled(root):
            roots[root] = root_span_id(root)
            out.append(SpanRecord(trace_id(root), roots[root], None, f"emit {component}", "internal", start, end,
                                  {"storm_py.component": component, "storm_py.task": task,
                                   "storm_py.root.id": f"{root:x}"}))
    if roots:
        out += _sends(emitted, sampler, roots, components, end)
    return out


def bolt_spans(component: str, task: int, tup: Tuple, children: Iterable[tuple[int, Tuple]], sampler: Sampler,
               components: Mapping[int, str], start: float, end: float) -> list[SpanRecord]:
    """The spans of bolt ``task`` executing ``tup``, which emitted ``children`` (``(target task, tuple)``)."""
    out: list[SpanRecord] = []
    executing: dict[int, int] = {}
    for root, edge in sampler.traced(tup):
        executing[root] = execute_span_id(edge)
        out.append(SpanRecord(trace_id(root), executing[root], send_span_id(edge), f"execute {component}",
                              "consumer", start, end,
                              {"storm_py.component": component, "storm_py.task": task,
                               "storm_py.source.component": tup.source_component,
                               "storm_py.stream": tup.source_stream}))
    if executing:
        out += _sends(children, sampler, executing, components, end)
    return out
