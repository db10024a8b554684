"""This module owns the collectors a bolt task emits through: the plain bolt collector and the basic one.

Both build the outgoing tuples of a task through one emit path (``_TaskEmitter._emit``, Storm's ``boltEmit``),
with Storm's anchoring (a fresh random edge id per anchor and target, XORed into the anchor's ack value), and put
them into their executor's out-buffer.  Acks of consecutive inputs of one tree are merged into one ack row by
one type, :class:`AckRuns`: the executor's acks sent at once (:class:`SentAcks`) and the acks a stateful bolt holds
(:class:`HeldAcks`) are its two kinds, which differ only in where a finished row goes.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from typing import Any, Protocol

from storm_py.api.tuple import DEFAULT_STREAM, Id, Tuple, tuple_roots
from storm_py.runtime.acker import ACK, FAIL, RESET
from storm_py.runtime.executor import ExecutorHost, ExecutorStats, bad_stream, direct_route
from storm_py.runtime.hooks import report_ack, report_fail
from storm_py.runtime.routing import StreamRoute
from storm_py.vector.routing import Parts, pairs, sorted_targets


class BoltHost(Protocol):
    """What the collectors of a bolt task use of the executor running it
    (:class:`storm_py.runtime.bolt_executor.BoltExecutor`)."""

    @property
    def rt(self) -> ExecutorHost: ...

    @property
    def component_id(self) -> str: ...

    @property
    def outbuf(self) -> defaultdict[int, list[Any]]: ...

    @property
    def stats(self) -> ExecutorStats: ...

    @property
    def process_samples(self) -> dict[int, float]: ...

    @property
    def acks(self) -> SentAcks:
        """The task's acks on their way to the ackers (merged by run, see :class:`AckRuns`)."""
        ...

    def ack_held(self, held: HeldAcks) -> None:
        """Send the ack rows of ``held`` (closed) over the next steps."""
        ...

    def report_error(self, task: int, exc: BaseException) -> None:
        """Record an error of ``task`` for the topology summary."""
        ...


class AckRuns:
    """Acks merged into acker rows: the acks of consecutive inputs of one tree XORed into one row, the one merge
    of the acking protocol.  A kind says where a finished row goes (:meth:`row`).

    Inputs of one tree come in runs (a spout tuple and what a bolt emitted from it, a batch emitted as one tree),
    so a run costs one row instead of a row per input, and each ack of the run one comparison and one XOR on a
    machine int.  XOR is associative and a tree cannot complete while a tuple it waits for is unacked, so a
    root's acks may travel in several rows, and after a fail of the same step.
    """

    __slots__ = ("run_root", "run_val")

    def __init__(self) -> None:
        #: the run of acks still open: its root (None: no run) and the XOR of its acks so far
        self.run_root: Id = None
        self.run_val = 0

    def ack(self, tup: Tuple | None, root: Id = None, val: int = 0) -> None:
        """Add the acks of ``tup`` (acked: its edge XORed with what its emits XORed in) into each of its trees, or
        with ``tup`` None the ack ``val`` into the tree of ``root`` (see :meth:`add`): the one merge.

        An ack of one tree (the common case: an input of one spout tuple) is merged here, in this one call: into
        the open run when it is of the same tree (an equal root is the same tree: a root decoded from a frame is
        another object), else the open run is a row and this one opens.  An input of several trees comes back
        here once per tree.
        """
        if tup is not None:
            root = tup._root
            if root is None:
                ids = tup._ids
                if ids:
                    av: int = tup._ack_val
                    for r, v in ids.items():
                        self.ack(None, r, v ^ av)
                return
            edge: int = tup._edge  # compiled: XORed as machine ints
            val = edge ^ tup._ack_val
        last = self.run_root
        if root is last or (last is not None and root == last):
            self.run_val ^= val
            return
        if last is not None:
            self.row(last, self.run_val)
        self.run_root = root
        self.run_val = val

    def add(self, root: Id, val: int) -> None:
        """XOR ``val`` into the ack of ``root`` (merged by :meth:`ack`)."""
        self.ack(None, root, val)

    def close(self) -> None:
        """End the open run: it becomes a row."""
        last = self.run_root
        if last is not None:
            self.run_root = None
            self.row(last, self.run_val)

    def row(self, root: Id, val: int) -> None:
        """A finished row: the XOR ``val`` of consecutive acks of the tree of ``root``."""
        raise NotImplementedError


class SentAcks(AckRuns):
    """A bolt executor's acks: each finished row goes into the out-buffer of its root's acker at once."""

    __slots__ = ("_ackers", "_out")

    def __init__(self, out: defaultdict[int, list[Any]], ackers: tuple[int, ...]) -> None:
        super().__init__()
        self._out = out  # the executor's out-buffer, cleared in place after every flush, never replaced
        self._ackers = ackers

    def row(self, root: Id, val: int) -> None:
        r: int = root  # acker_for(root), inlined (compiled: on a machine int)
        ackers = self._ackers
        self._out[ackers[r % len(ackers)]].append((ACK, root, val))


def _anchor_list(anchors: Any) -> list[Tuple]:
    if anchors is None:
        return []
    if isinstance(anchors, Tuple):
        return [anchors]
    return list(anchors)


class _TaskEmitter:
    """What the two bolt-side collectors share: a task's routes, counters, out-buffer and the general send."""

    __slots__ = (
        "_acker_for", "_acking", "_acks", "_clock", "_default_route", "_ex", "_hooks", "_ids", "_out", "_routes",
        "_samples", "_stats", "_task", "component_id",
    )

    def __init__(self, ex: BoltHost, task: int) -> None:
        self._ex = ex
        self._task = task
        self._routes = ex.rt.routes_for(task)
        self._default_route = self._routes.get(DEFAULT_STREAM)  # most emits: no lookup
        self._acking = ex.rt.num_ackers > 0
        self._ids = ex.rt.ids
        self._out = ex.outbuf  # cleared in place after every flush, never replaced
        self._stats = ex.stats
        self._acker_for = ex.rt.acker_for
        self._acks: AckRuns = ex.acks
        self._samples = ex.process_samples  # likewise
        self._clock = ex.rt.clock.now
        self.component_id = ex.component_id
        #: the task's hooks, set once it prepared with some (empty: no hook code runs)
        self._hooks: list[Any] = []

    def _emit_direct(self, task_id: int, values: Any, anchors: Any, stream: str) -> None:
        route, targets = direct_route(self._routes, stream, task_id, self.component_id)
        columnar = route.columnar
        if columnar is not None:  # one batch, to the named task
            batch = columnar.batch(values)
            parts = pairs(targets, [batch]) if batch.num_rows else []
        else:
            parts = pairs(targets, list(values))
        route.emitted += 1
        route.transferred += len(parts)
        self._send(route, parts, anchors)

    def _emit_offpath(self, values: Any, anchors: Any, stream: str, route: StreamRoute | None) -> list[int]:
        """An emit on a stream off the per-tuple path: a columnar stream's (the batch split over the targets), or
        the error of an undeclared or a direct stream."""
        if route is None or route.direct or route.columnar is None:
            bad_stream(stream, route, self.component_id)
        route.emitted += 1
        parts = route.columnar.parts(self._task, values)
        route.transferred += len(parts)
        self._send(route, parts, anchors)
        return sorted_targets(parts)

    def _send(self, route: StreamRoute, parts: Parts, anchors: Any) -> None:
        """Send the values of each ``(target, values)`` of ``parts`` anchored to ``anchors`` (the general case)."""
        out = self._out
        fields = route.fields
        stream = route.stream
        comp = self.component_id
        task = self._task
        alist = ([a for a in _anchor_list(anchors) if a._root is not None or a._ids]
                 if (anchors is not None and self._acking) else [])
        if not alist:
            for t, values in parts:
                out[t].append(Tuple(values, fields, comp, stream, task, None))
            return
        id_source = self._ids
        for t, values in parts:
            ids: dict[int, int] = {}
            for a in alist:
                edge = id_source.next()
                a._ack_val ^= edge
                for root in tuple_roots(a):
                    ids[root] = ids.get(root, 0) ^ edge
            if len(ids) == 1:
                ((root, edge),) = ids.items()
                out[t].append(Tuple(values, fields, comp, stream, task, None, root, edge))
            else:
                out[t].append(Tuple(values, fields, comp, stream, task, ids or None))

    def _emit(self, values: Sequence[Any], anchors: Any, stream: str) -> list[int]:
        """The one emit path of both collectors (Storm's ``boltEmit``): route ``values`` on ``stream``, anchored to
        ``anchors`` (a Tuple, an iterable of Tuples or None); return the target tasks."""
        route = self._default_route if stream == DEFAULT_STREAM else self._routes.get(stream)
        if route is None or route.offpath:
            return self._emit_offpath(values, anchors, stream, route)
        route.emitted += 1  # counted per stream on the route (the executor's totals are their sums)
        if not route.choosers:
            return []  # nobody subscribes: emitted, not transferred
        if type(values) is not list:
            values = list(values)
        single = route.single
        task = self._task
        targets = single.choose(task, values) if single is not None else route.choose(task, values)
        if not targets:
            return targets
        route.transferred += len(targets)
        out = self._out
        fields = route.fields
        comp = self.component_id
        if anchors is None or not self._acking:  # not anchored: no edge ids
            for t in targets:
                out[t].append(Tuple(values, fields, comp, stream, task, None))
            return targets
        if type(anchors) is Tuple:
            root = anchors._root
            if root is not None:  # the common case, inlined: one anchor that belongs to one spout tuple
                id_source = self._ids
                for t in targets:
                    edge = id_source.next()
                    anchors._ack_val ^= edge
                    out[t].append(Tuple(values, fields, comp, stream, task, None, root, edge))
                return targets
            if not anchors._ids:  # an anchor in no tree (an untracked input): nothing to anchor to
                for t in targets:
                    out[t].append(Tuple(values, fields, comp, stream, task, None))
                return targets
        self._send(route, pairs(targets, values), anchors)
        return targets

    def report_error(self, exc: BaseException) -> None:
        """Record an error for the topology summary."""
        self._ex.report_error(self._task, exc)


class BoltCollector(_TaskEmitter):
    """The output collector of one bolt task: anchoring, ack, fail, reset_timeout."""

    __slots__ = ()

    def emit(self, values: Sequence[Any], anchors: Any = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit a tuple anchored to ``anchors`` (a Tuple, an iterable of Tuples or None); return target tasks."""
        return self._emit(values, anchors, stream)

    def emit_direct(
        self, task_id: int, values: Sequence[Any], anchors: Any = None, stream: str = DEFAULT_STREAM
    ) -> None:
        """Emit a tuple to one task on a direct stream."""
        self._emit_direct(task_id, values, anchors, stream)

    def ack(self, tup: Tuple) -> None:
        """The input was processed: tell the ackers of each of its roots (merged by run, see :class:`AckRuns`)."""
        self._stats.acked += 1
        if self._samples:
            self._processed(tup)
        if self._hooks:
            report_ack(self._hooks, tup, self._task, None)
        if self._acking and (tup._root is not None or tup._ids):  # an input of no tree has nothing to tell
            self._acks.ack(tup)

    def ack_all(self, tups: list[Tuple]) -> None:
        """``ack`` each of ``tups``, in order (a basic bolt's inputs of one batch): counted at once, each merged
        into its tree's run, unless hooks or process samples watch acks (then one :meth:`ack` each)."""
        if self._samples or self._hooks:
            for tup in tups:
                self.ack(tup)
            return
        self._stats.acked += len(tups)
        if self._acking:
            acks = self._acks
            for tup in tups:
                acks.ack(tup)

    def _processed(self, tup: Tuple) -> None:
        """A sampled input (in ``_samples``): its process latency runs from its batch's start to now."""
        samples = self._samples
        key = id(tup)
        started = samples.get(key)  # most acks are of inputs not sampled: one lookup (a compiled pop is a call)
        if started is not None:
            del samples[key]
            self._stats.process_secs += self._clock() - started
            self._stats.process_count += 1

    def fail(self, tup: Tuple) -> None:
        """The input failed: fail the tuple tree of each of its roots at once."""
        if self._samples:
            self._samples.pop(id(tup), None)
        roots = tuple_roots(tup)
        self._stats.failed += 1
        if self._hooks:
            report_fail(self._hooks, tup, self._task)
        if roots and self._acking:
            out = self._out
            acker_for = self._acker_for
            for root in roots:
                out[acker_for(root)].append((FAIL, root))

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the message timeout of the input's tuple trees."""
        roots = tuple_roots(tup)
        if roots and self._acking:
            out = self._out
            acker_for = self._acker_for
            for root in roots:
                out[acker_for(root)].append((RESET, root))

    def flush(self) -> None:
        """Storm's explicit flush: the worker flushes after every step, so this does nothing."""


class HeldAcks(AckRuns):
    """Acks made and not sent yet (see :class:`HoldingCollector`): their acker rows (a row finished by the run
    merge of :class:`AckRuns` is kept, not sent), how many inputs that is, and the inputs to be acked whole when
    released.

    A row is a root in ``roots`` (the object the inputs carry) and its XOR at the same place of ``vals``: two
    list slots and an int per tree, no tuple, so a checkpoint interval of held rows stays small.  (An
    ``array('Q')`` of the XORs would keep the int out of the heap, a tenth fewer last-level cache misses per
    sentence under callgrind's simulation, but its method call per row costs 1,300 instructions a sentence.)
    """

    __slots__ = ("count", "roots", "vals", "whole")

    def __init__(self) -> None:
        super().__init__()
        self.roots: list[Id] = []
        self.vals: list[int] = []
        self.count = 0
        self.whole: list[Tuple] = []

    def __len__(self) -> int:
        return self.count + len(self.whole)

    def row(self, root: Id, val: int) -> None:
        self.roots.append(root)
        self.vals.append(val)

    def merge(self, other: HeldAcks) -> None:
        """Add ``other``'s acks to these (its first row joins this open run when it is of the same tree: every
        row stays one run of one tree, as the released rows are sent).

        Into acks with no rows yet (a stateful bolt's prepared acks at a ``PREPARE``), ``other``'s row lists are
        taken over, not copied: a checkpoint interval of rows copied into new lists was about 0.7 last-level
        cache misses a sentence of the stateful word count (``bench/stateful_word_count.py --cache``).
        """
        other.close()
        roots = other.roots
        vals = other.vals
        if self.run_root is None and not self.roots:
            self.roots, other.roots = roots, self.roots
            self.vals, other.vals = vals, self.vals
        else:
            if roots:  # the first row joins the open run when it is of the same tree
                self.add(roots[0], vals[0])
                roots = roots[1:]
                vals = vals[1:]
            self.close()
            self.roots.extend(roots)
            self.vals.extend(vals)
        self.count += other.count
        self.whole.extend(other.whole)


class HoldingCollector(BoltCollector):
    """The collector of a task whose acks wait for a decision: a stateful bolt's, whose acks go upstream only
    once the checkpoint covering them commits (Storm's ``AckTrackingOutputCollector``).

    Every emit must be anchored.  ``ack`` settles an input at once except for its acker row, which goes into the
    held acks (:class:`HeldAcks`), which :meth:`take_held` hands over and :meth:`release` sends or
    :meth:`fail_held` fails.  Holding numbers rather than the inputs keeps a checkpoint interval of
    tuples out of the heap the garbage collector walks.  A task with hooks holds its inputs whole, acked
    through its own collector on release, so the hooks see each ack when it is made.
    """

    __slots__ = ("_held", "_parent")

    def __init__(self, parent: BoltCollector) -> None:
        super().__init__(parent._ex, parent._task)
        self._parent = parent
        self._held = HeldAcks()

    def emit(self, values: Sequence[Any], anchors: Any = None, stream: str = DEFAULT_STREAM) -> list[int]:
        if anchors is None:
            unanchored(self.component_id, stream)
        return self._emit(values, anchors, stream)

    def emit_direct(
        self, task_id: int, values: Sequence[Any], anchors: Any = None, stream: str = DEFAULT_STREAM
    ) -> None:
        if anchors is None:
            unanchored(self.component_id, stream)
        self._emit_direct(task_id, values, anchors, stream)

    def ack(self, tup: Tuple) -> None:
        held = self._held
        if self._parent._hooks:
            held.whole.append(tup)
            return
        held.count += 1
        if self._samples:
            self._processed(tup)
        if self._acking:
            held.ack(tup)

    def take_held(self) -> HeldAcks:
        """The acks held since the last call."""
        held, self._held = self._held, HeldAcks()
        return held

    def release(self, held: HeldAcks) -> None:
        """Send ``held`` upstream: one ack row per tree (a bounded number a step, from this step's end on), and
        the inputs held whole."""
        self._stats.acked += held.count
        held.close()
        if held.roots:
            self._ex.ack_held(held)
        deque(map(self._parent.ack, held.whole), maxlen=0)

    def fail_held(self, held: HeldAcks) -> None:
        """Fail the trees of ``held``: their spouts replay them."""
        self._stats.failed += held.count
        out = self._out
        acker_for = self._acker_for
        held.close()
        for root in set(held.roots):
            out[acker_for(root)].append((FAIL, root))
        deque(map(self._parent.fail, held.whole), maxlen=0)


def unanchored(component_id: str, stream: str) -> None:
    """Raise the error of an unanchored emit of a stateful bolt (Storm's ``AnchoringOutputCollector``)."""
    raise ValueError(
        f"stateful bolt {component_id!r} emitted to stream {stream!r} without anchors: bolts of a "
        "stateful topology must anchor their emits"
    )


class BasicCollector(_TaskEmitter):
    """The collector a :class:`BasicBolt` sees: emits are anchored to the current input."""

    __slots__ = ("_bolt_collector", "input")

    def __init__(self, ex: BoltHost, task: int, bolt_collector: BoltCollector) -> None:
        super().__init__(ex, task)
        self._bolt_collector = bolt_collector
        self.input: Tuple | None = None

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit anchored to the input being executed; return the target tasks."""
        return self._emit(values, self.input, stream)

    def emit_direct(self, task_id: int, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        """Emit directly to ``task_id``, anchored to the input being executed."""
        self._emit_direct(task_id, values, self.input, stream)

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the message timeout of ``tup``'s trees."""
        self._bolt_collector.reset_timeout(tup)
