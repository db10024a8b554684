"""Spout, bolt and acker executors and the collectors their tasks emit through.

An executor runs one or more tasks of one component.  The worker loop calls ``step(now)`` on every executor in
turn; ``step`` drains the executor's inbox (batches of ``(task, [items])``), fires its timers and, for spouts,
calls ``next_tuple``.  Emits go into ``outbuf`` (target task -> list), which the worker flushes after each step:
tuples between tasks of one worker are handed over as Python objects, in batches, never serialized.
"""

from __future__ import annotations

import logging
import traceback
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from storm_py.api.components import BasicBolt
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import DEFAULT_STREAM, Tuple, anchor_roots, make_tick_tuple
from storm_py.errors import FailedException, ReportedFailedException
from storm_py.runtime.acker import ACK, ACKED, FAIL, FAILED, INIT, RESET, RESET_TIMEOUT, AckerBolt
from storm_py.runtime.routing import StreamRoute

if TYPE_CHECKING:
    from storm_py.runtime.worker_runtime import WorkerRuntime

log = logging.getLogger(__name__)

#: how many next_tuple calls a spout task gets per pass of the worker loop
SPOUT_CALLS_PER_PASS = 128
#: complete-latency samples kept per spout executor (for percentiles)
LATENCY_SAMPLES = 20000


class ExecutorStats:
    """Plain counters of one executor (read by heartbeats and the topology summary)."""

    __slots__ = ("acked", "emitted", "executed", "failed", "lat_count", "lat_samples", "lat_sum", "transferred")

    def __init__(self) -> None:
        self.emitted = 0
        self.transferred = 0
        self.executed = 0
        self.acked = 0
        self.failed = 0
        self.lat_sum = 0.0
        self.lat_count = 0
        self.lat_samples: list[float] = []

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly snapshot."""
        return {
            "emitted": self.emitted,
            "transferred": self.transferred,
            "executed": self.executed,
            "acked": self.acked,
            "failed": self.failed,
            "complete_latency_ms": (self.lat_sum / self.lat_count) if self.lat_count else 0.0,
            "lat_sum": self.lat_sum,
            "lat_count": self.lat_count,
        }


class Executor:
    """What every executor has: its tasks, an inbox, an out-buffer and counters."""

    is_spout = False

    def __init__(self, rt: WorkerRuntime, component_id: str, task_ids: list[int]) -> None:
        self.rt = rt
        self.component_id = component_id
        self.task_ids = task_ids
        self.inbox: deque[tuple[int, list[Any]]] = deque()
        self.outbuf: defaultdict[int, list[Any]] = defaultdict(list)
        self.stats = ExecutorStats()
        self.conf = rt.component_conf(component_id)
        freq = self.conf.get("topology.tick.tuple.freq.secs")
        self.tick_freq: float | None = float(freq) if freq else None
        self.next_tick = rt.clock.now() + self.tick_freq if self.tick_freq else float("inf")

    def prepare(self) -> None:
        """Create and prepare the tasks' component objects."""

    def step(self, now: float) -> bool:
        """Do one round of work; return whether anything was done."""
        raise NotImplementedError

    def shutdown(self) -> None:
        """Clean up the tasks' component objects."""

    def context_for(self, task: int) -> TopologyContext:
        """The context handed to a task."""
        return self.rt.make_context(task, self.component_id)

    def report_error(self, task: int, exc: BaseException) -> None:
        """Record an error with its traceback for the topology summary."""
        self.rt.report_error(self.component_id, task, exc)


def bad_stream(stream: str, route: StreamRoute | None, component_id: str) -> NoReturn:
    """Raise the error of a regular emit on an undeclared or a direct stream (Storm's rules)."""
    if route is None:
        raise ValueError(f"unknown stream {stream!r}: {component_id!r} does not declare it")
    raise ValueError(f"cannot do a regular emit to direct stream {stream!r} of {component_id!r}")


def direct_route(
    routes: dict[str, StreamRoute], stream: str, task_id: int, component_id: str
) -> tuple[StreamRoute, list[int]]:
    """The route and target of an ``emit_direct``: a task that does not subscribe gets nothing (dropped)."""
    route = routes.get(stream)
    if route is None:
        raise ValueError(f"unknown stream {stream!r}: {component_id!r} does not declare it")
    if not route.direct:
        raise ValueError(f"cannot emit_direct to stream {stream!r} of {component_id!r}: it is not direct")
    return route, ([task_id] if task_id in route.direct_targets else [])


# ---------------------------------------------------------------------------------------------------------- spouts


class SpoutCollector:
    """The spout output collector of one spout task."""

    __slots__ = ("_ex", "_routes", "_spout", "_task", "component_id")

    def __init__(self, ex: SpoutExecutor, task: int, spout: Any) -> None:
        self._ex = ex
        self._task = task
        self._spout = spout
        self._routes = ex.rt.routes_for(task)
        self.component_id = ex.component_id

    def emit(self, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit a tuple (tracked when ``msg_id`` is given and ackers run); return the target task ids."""
        route = self._routes.get(stream)
        if route is None or route.direct:
            bad_stream(stream, route, self.component_id)
        if type(values) is not list:
            values = list(values)
        single = route.single
        targets = single(self._task, values) if single is not None else route.choose(self._task, values)
        self._send(route, targets, values, msg_id)
        return targets

    def emit_direct(
        self, task_id: int, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM
    ) -> None:
        """Emit a tuple to one task on a direct stream."""
        route, targets = direct_route(self._routes, stream, task_id, self.component_id)
        self._send(route, targets, list(values), msg_id)

    def _send(self, route: StreamRoute, targets: list[int], values: list[Any], msg_id: Any) -> None:
        ex = self._ex
        out = ex.outbuf
        stats = ex.stats
        stats.emitted += 1
        stats.transferred += len(targets)
        fields = route.fields
        stream = route.stream
        comp = self.component_id
        task = self._task
        if msg_id is None or not ex.acking:
            for t in targets:
                out[t].append(Tuple(values, fields, comp, stream, task, None))
            if msg_id is not None:
                ex.ack_now(self._spout, msg_id)
            return
        rand = ex.rand64
        root = ex.new_root()
        ack_val = 0
        for t in targets:
            edge = rand()
            ack_val ^= edge
            out[t].append(Tuple(values, fields, comp, stream, task, [root, edge]))
        ex.pending0[root] = (task, msg_id, ex.now)
        out[ex.acker_for(root)].append((INIT, root, ack_val, task))

    def get_pending_count(self) -> int:
        """Tuples of this executor waiting to be acked or failed."""
        return self._ex.pending_count()

    def report_error(self, exc: BaseException) -> None:
        """Record an error for the topology summary."""
        self._ex.report_error(self._task, exc)

    def flush(self) -> None:
        """Storm's explicit flush: the worker flushes after every step, so this does nothing."""


class SpoutExecutor(Executor):
    """Calls ``next_tuple`` while active and under ``max.spout.pending``; turns acker rows into ``ack``/``fail``."""

    is_spout = True

    def __init__(self, rt: WorkerRuntime, component_id: str, task_ids: list[int]) -> None:
        super().__init__(rt, component_id, task_ids)
        self.acking = rt.num_ackers > 0
        self.rand64 = rt.rand64
        self.new_root = rt.new_root
        self.acker_for = rt.acker_for
        self.pending0: dict[int, tuple[int, Any, float]] = {}
        self.pending1: dict[int, tuple[int, Any, float]] = {}
        msp = self.conf.get("topology.max.spout.pending")
        self.max_pending = int(msp) * len(task_ids) if (msp and self.acking) else 0
        timeouts = bool(rt.conf.get("topology.enable.message.timeouts", True))
        timeout = float(rt.conf.get("topology.message.timeout.secs", 30))
        self.rotate_every = timeout if (self.acking and timeouts) else None
        self.next_rotate = rt.clock.now() + timeout if self.rotate_every else float("inf")
        self.tick_freq = None
        self.next_tick = float("inf")
        self.now = rt.clock.now()
        self.spouts: dict[int, Any] = {}
        self.collectors: dict[int, SpoutCollector] = {}
        self.opened = False
        self.active = False

    def prepare(self) -> None:
        for t in self.task_ids:
            spout = self.rt.instantiate(self.component_id, t)
            self.spouts[t] = spout
            self.collectors[t] = SpoutCollector(self, t, spout)

    def _open(self) -> None:
        self.opened = True
        for t, spout in self.spouts.items():
            try:
                spout.open(self.rt.component_conf(self.component_id), self.context_for(t), self.collectors[t])
            except Exception as exc:
                log.exception("spout %s task %d failed in open", self.component_id, t)
                self.report_error(t, exc)

    def set_active(self, active: bool) -> None:
        """Follow the topology's status: open on first activation, then ``activate``/``deactivate``."""
        if active == self.active:
            return
        if active and not self.opened:
            self._open()
        self.active = active
        for t, spout in self.spouts.items():
            try:
                spout.activate() if active else spout.deactivate()
            except Exception as exc:
                self.report_error(t, exc)

    def ack_now(self, spout: Any, msg_id: Any) -> None:
        """With no ackers an emitted tuple counts as acked at once (Storm calls ``ack`` inside ``emit``)."""
        self.stats.acked += 1
        try:
            spout.ack(msg_id)
        except Exception as exc:
            self.report_error(-1, exc)

    def step(self, now: float) -> bool:
        self.now = now
        did = False
        inbox = self.inbox
        if inbox:
            did = True
            self._handle_acker_rows(inbox, now)
        if now >= self.next_rotate:
            did = True
            self.next_rotate = now + (self.rotate_every or 0.0)
            self._rotate()
        if self.active:
            rt = self.rt
            max_pending = self.max_pending
            for task, spout in self.spouts.items():
                stats = self.stats
                for _ in range(SPOUT_CALLS_PER_PASS):
                    if max_pending and len(self.pending0) + len(self.pending1) >= max_pending:
                        break
                    if rt.backlog >= rt.backlog_limit:
                        break
                    before = stats.emitted
                    try:
                        spout.next_tuple()
                    except Exception as exc:
                        log.exception("spout %s task %d failed in next_tuple", self.component_id, task)
                        self.report_error(task, exc)
                        break
                    if stats.emitted == before:
                        break
                    did = True
        return did

    def _handle_acker_rows(self, inbox: deque[tuple[int, list[Any]]], now: float) -> None:
        p0 = self.pending0
        p1 = self.pending1
        spouts = self.spouts
        stats = self.stats
        samples = stats.lat_samples
        n = 0
        while inbox:
            _, rows = inbox.popleft()
            n += len(rows)
            for code, root, delta in rows:
                if code == RESET_TIMEOUT:
                    entry = p1.pop(root, None)
                    if entry is not None:
                        p0[root] = entry
                    continue
                entry = p0.pop(root, None)
                if entry is None:
                    entry = p1.pop(root, None)
                    if entry is None:
                        continue  # already timed out: a late ack or fail is ignored
                task, msg_id, emitted_at = entry
                spout = spouts[task]
                try:
                    if code == ACKED:
                        stats.acked += 1
                        delta = (now - emitted_at) * 1000.0
                        stats.lat_sum += delta
                        stats.lat_count += 1
                        if len(samples) < LATENCY_SAMPLES:
                            samples.append(delta)
                        else:  # keep the latest samples: a ring over the sample buffer
                            samples[stats.lat_count % LATENCY_SAMPLES] = delta
                        spout.ack(msg_id)
                    elif code == FAILED:
                        stats.failed += 1
                        spout.fail(msg_id)
                except Exception as exc:
                    log.exception("spout %s task %d failed in ack/fail", self.component_id, task)
                    self.report_error(task, exc)
        self.rt.backlog -= n

    def _rotate(self) -> None:
        expired = self.pending1
        self.pending1 = self.pending0
        self.pending0 = {}
        for task, msg_id, _ in expired.values():
            self.stats.failed += 1
            try:
                self.spouts[task].fail(msg_id)
            except Exception as exc:
                self.report_error(task, exc)

    def pending_count(self) -> int:
        """Tuples emitted and not yet acked, failed or timed out."""
        return len(self.pending0) + len(self.pending1)

    def shutdown(self) -> None:
        for t, spout in self.spouts.items():
            try:
                if self.active:
                    spout.deactivate()
                if self.opened:
                    spout.close()
            except Exception as exc:
                self.report_error(t, exc)


# ----------------------------------------------------------------------------------------------------------- bolts


def _anchor_list(anchors: Any) -> list[Tuple]:
    if anchors is None:
        return []
    if isinstance(anchors, Tuple):
        return [anchors]
    return list(anchors)


class _TaskEmitter:
    """What the two bolt-side collectors share: a task's routes, counters, out-buffer and the general send."""

    __slots__ = (
        "_acker_for", "_acking", "_acks", "_ex", "_out", "_rand", "_routes", "_stats", "_task", "component_id",
    )

    def __init__(self, ex: BoltExecutor, task: int) -> None:
        self._ex = ex
        self._task = task
        self._routes = ex.rt.routes_for(task)
        self._acking = ex.rt.num_ackers > 0
        self._rand = ex.rt.rand64
        self._out = ex.outbuf  # cleared in place after every flush, never replaced
        self._acks = ex.acks  # likewise
        self._stats = ex.stats
        self._acker_for = ex.rt.acker_for
        self.component_id = ex.component_id

    def _emit_direct(self, task_id: int, values: Sequence[Any], anchors: Any, stream: str) -> None:
        route, targets = direct_route(self._routes, stream, task_id, self.component_id)
        self._stats.emitted += 1
        self._stats.transferred += len(targets)
        self._send(route, targets, list(values), anchors)

    def _send(self, route: StreamRoute, targets: list[int], values: list[Any], anchors: Any) -> None:
        out = self._out
        fields = route.fields
        stream = route.stream
        comp = self.component_id
        task = self._task
        alist = [a for a in _anchor_list(anchors) if a._ids] if (anchors is not None and self._acking) else []
        if not alist:
            for t in targets:
                out[t].append(Tuple(values, fields, comp, stream, task, None))
            return
        rand = self._rand
        for t in targets:
            ids: dict[int, int] = {}
            for a in alist:
                edge = rand()
                a._ack_val ^= edge
                for root in anchor_roots(a._ids):
                    ids[root] = ids.get(root, 0) ^ edge
            if len(ids) == 1:
                ((root, edge),) = ids.items()
                out[t].append(Tuple(values, fields, comp, stream, task, [root, edge]))
            else:
                out[t].append(Tuple(values, fields, comp, stream, task, ids or None))

    def report_error(self, exc: BaseException) -> None:
        """Record an error for the topology summary."""
        self._ex.report_error(self._task, exc)


# BoltCollector.emit and BasicCollector.emit share their body line for line except where the anchor comes from
# (an argument, or the input being executed) and their signatures (the public API).  They are written out
# twice on purpose: every tuple a bolt emits runs one of them, and a shared helper or the basic collector
# delegating to the bolt collector cost 4-5 % of the instructions of a word count (measured with
# ``bench/two_workers.py --instructions``).  A change to one must be made to the other.


class BoltCollector(_TaskEmitter):
    """The output collector of one bolt task: anchoring, ack, fail, reset_timeout."""

    __slots__ = ()

    def emit(self, values: Sequence[Any], anchors: Any = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit a tuple anchored to ``anchors`` (a Tuple, an iterable of Tuples or None); return target tasks."""
        route = self._routes.get(stream)
        if route is None or route.direct:
            bad_stream(stream, route, self.component_id)
        stats = self._stats
        stats.emitted += 1
        if not route.choosers:
            return []  # nobody subscribes: emitted, not transferred
        if type(values) is not list:
            values = list(values)
        single = route.single
        task = self._task
        targets = single(task, values) if single is not None else route.choose(task, values)
        if not targets:
            return targets
        stats.transferred += len(targets)
        if type(anchors) is Tuple and self._acking:
            aids = anchors._ids
            if type(aids) is list:  # the common case, inlined: one anchor that belongs to one spout tuple
                root = aids[0]
                out = self._out
                rand = self._rand
                fields = route.fields
                comp = self.component_id
                for t in targets:
                    edge = rand()
                    anchors._ack_val ^= edge
                    out[t].append(Tuple(values, fields, comp, stream, task, [root, edge]))
                return targets
        self._send(route, targets, values, anchors)
        return targets

    def emit_direct(
        self, task_id: int, values: Sequence[Any], anchors: Any = None, stream: str = DEFAULT_STREAM
    ) -> None:
        """Emit a tuple to one task on a direct stream."""
        self._emit_direct(task_id, values, anchors, stream)

    def ack(self, tup: Tuple) -> None:
        """The input was processed: tell the ackers of each of its roots (merged per root until the step ends)."""
        self._stats.acked += 1
        ids = tup._ids
        if ids and self._acking:
            acks = self._acks
            if type(ids) is list:
                root = ids[0]
                acks[root] = acks.get(root, 0) ^ ids[1] ^ tup._ack_val
                return
            av = tup._ack_val
            for root, v in ids.items():  # type: ignore[union-attr]
                acks[root] = acks.get(root, 0) ^ v ^ av

    def fail(self, tup: Tuple) -> None:
        """The input failed: fail the tuple tree of each of its roots at once."""
        ids = tup._ids
        self._stats.failed += 1
        if ids and self._acking:
            out = self._out
            acker_for = self._acker_for
            for root in anchor_roots(ids):
                out[acker_for(root)].append((FAIL, root))

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the message timeout of the input's tuple trees."""
        ids = tup._ids
        if ids and self._acking:
            out = self._out
            acker_for = self._acker_for
            for root in anchor_roots(ids):
                out[acker_for(root)].append((RESET, root))

    def flush(self) -> None:
        """Storm's explicit flush: the worker flushes after every step, so this does nothing."""


class BasicCollector(_TaskEmitter):
    """The collector a :class:`BasicBolt` sees: emits are anchored to the current input."""

    __slots__ = ("_bolt_collector", "input")

    def __init__(self, ex: BoltExecutor, task: int, bolt_collector: BoltCollector) -> None:
        super().__init__(ex, task)
        self._bolt_collector = bolt_collector
        self.input: Tuple | None = None

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit anchored to the input being executed; return the target tasks."""
        route = self._routes.get(stream)
        if route is None or route.direct:
            bad_stream(stream, route, self.component_id)
        stats = self._stats
        stats.emitted += 1
        if not route.choosers:
            return []  # nobody subscribes: emitted, not transferred
        if type(values) is not list:
            values = list(values)
        single = route.single
        task = self._task
        targets = single(task, values) if single is not None else route.choose(task, values)
        if not targets:
            return targets
        stats.transferred += len(targets)
        anchor = self.input
        if anchor is not None and self._acking:
            aids = anchor._ids
            if type(aids) is list:  # the common case, inlined: one anchor that belongs to one spout tuple
                root = aids[0]
                out = self._out
                rand = self._rand
                fields = route.fields
                comp = self.component_id
                for t in targets:
                    edge = rand()
                    anchor._ack_val ^= edge
                    out[t].append(Tuple(values, fields, comp, stream, task, [root, edge]))
                return targets
        self._send(route, targets, values, anchor)
        return targets

    def emit_direct(self, task_id: int, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        """Emit directly to ``task_id``, anchored to the input being executed."""
        self._emit_direct(task_id, values, self.input, stream)

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the message timeout of ``tup``'s trees."""
        self._bolt_collector.reset_timeout(tup)


class BoltExecutor(Executor):
    """Executes input tuples on the bolt tasks; a bolt that raises fails the input and processing goes on."""

    def __init__(self, rt: WorkerRuntime, component_id: str, task_ids: list[int]) -> None:
        super().__init__(rt, component_id, task_ids)
        self.acker_for = rt.acker_for
        #: XOR of the acks of this step per root: one ack row per tree and step instead of one per input tuple
        #: (XOR is associative, and a tree cannot complete while a tuple it waits for is unacked, so the rows
        #: may travel after a fail of the same step)
        self.acks: dict[int, int] = {}
        self.bolts: dict[int, Any] = {}
        self.collectors: dict[int, BoltCollector] = {}
        self.runners: dict[int, Any] = {}

    def prepare(self) -> None:
        conf = self.rt.component_conf(self.component_id)
        for t in self.task_ids:
            bolt = self.rt.instantiate(self.component_id, t)
            collector = BoltCollector(self, t)
            self.bolts[t] = bolt
            self.collectors[t] = collector
            try:
                if isinstance(bolt, BasicBolt):
                    bolt.prepare(conf, self.context_for(t))
                    self.runners[t] = self._basic_runner(bolt, collector)
                else:
                    bolt.prepare(conf, self.context_for(t), collector)
                    self.runners[t] = self._runner(bolt.execute, t)
            except Exception as exc:
                log.exception("bolt %s task %d failed in prepare", self.component_id, t)
                self.report_error(t, exc)
                self.runners[t] = self._runner(bolt.execute, t)

    def _runner(self, execute: Callable[[Tuple], None], task: int) -> Callable[[list[Tuple]], None]:
        """Run a batch through a bolt's ``execute``; one that raises fails its input and the batch goes on."""
        on_error = self._on_error

        def run(batch: list[Tuple]) -> None:
            for tup in batch:
                try:
                    execute(tup)
                except Exception as exc:
                    on_error(task, tup, exc)

        return run

    def _basic_runner(self, bolt: BasicBolt, collector: BoltCollector) -> Callable[[list[Tuple]], None]:
        """Run a batch through a :class:`BasicBolt`: anchor its emits to the input, ack or fail the input."""
        basic = BasicCollector(self, collector._task, collector)
        execute = bolt.execute
        ack = collector.ack
        fail = collector.fail
        report = self.report_error
        on_error = self._on_error
        task = collector._task
        stats = self.stats
        acks = self.acks
        acking = collector._acking

        def run(batch: list[Tuple]) -> None:
            acked = 0
            for tup in batch:
                basic.input = tup
                try:
                    execute(tup, basic)
                except ReportedFailedException as exc:
                    report(task, exc)
                    fail(tup)
                    continue
                except FailedException:
                    fail(tup)
                    continue
                except Exception as exc:
                    on_error(task, tup, exc)
                    continue
                ids = tup._ids
                if type(ids) is list and acking:  # BoltCollector.ack's common case, inlined
                    root = ids[0]
                    acks[root] = acks.get(root, 0) ^ ids[1] ^ tup._ack_val
                    acked += 1
                else:
                    ack(tup)
            stats.acked += acked

        return run

    def step(self, now: float) -> bool:
        inbox = self.inbox
        did = False
        if inbox:
            did = True
            runners = self.runners
            n = 0
            while inbox:
                task, batch = inbox.popleft()
                n += len(batch)
                runners[task](batch)
            self.stats.executed += n
            self.rt.backlog -= n
        if now >= self.next_tick:
            did = True
            self.next_tick = now + (self.tick_freq or 0.0)
            tick = make_tick_tuple(self.tick_freq or 0)
            for run in self.runners.values():
                run([tick])
        if self.acks:
            self._flush_acks()
        return did

    def _flush_acks(self) -> None:
        out = self.outbuf
        acker_for = self.acker_for
        for root, val in self.acks.items():
            out[acker_for(root)].append((ACK, root, val))
        self.acks.clear()

    def _on_error(self, task: int, tup: Tuple, exc: Exception) -> None:
        log.error("bolt %s task %d raised on %r: %s", self.component_id, task, tup, exc)
        self.report_error(task, exc)
        self.collectors[task].fail(tup)

    def shutdown(self) -> None:
        for t, bolt in self.bolts.items():
            try:
                bolt.cleanup()
            except Exception as exc:
                self.report_error(t, exc)


class AckerExecutor(Executor):
    """Runs ``__acker`` tasks: batches of ack rows go straight into each task's ledger."""

    def __init__(self, rt: WorkerRuntime, component_id: str, task_ids: list[int]) -> None:
        super().__init__(rt, component_id, task_ids)
        self.ackers: dict[int, AckerBolt] = {}

    def prepare(self) -> None:
        for t in self.task_ids:
            acker = AckerBolt()
            acker.bind(self._emit, self.rt.clock.now)
            self.ackers[t] = acker

    def step(self, now: float) -> bool:
        inbox = self.inbox
        did = False
        if inbox:
            did = True
            ackers = self.ackers
            n = 0
            while inbox:
                task, rows = inbox.popleft()
                n += len(rows)
                ackers[task].ledger.process(rows, now, self._emit)
            self.stats.executed += n
            self.rt.backlog -= n
        if now >= self.next_tick:
            did = True
            self.next_tick = now + (self.tick_freq or 0.0)
            for acker in self.ackers.values():
                acker.ledger.rotate()
        return did

    def _emit(self, task: int, row: tuple[int, int, int]) -> None:
        self.outbuf[task].append(row)


def error_text(exc: BaseException) -> str:
    """The error with its traceback, as shown in the topology summary."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


__all__ = [
    "ACK",
    "FAIL",
    "FAILED",
    "RESET",
    "AckerExecutor",
    "BoltExecutor",
    "Executor",
    "SpoutExecutor",
    "error_text",
]
