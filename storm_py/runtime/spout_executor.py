"""This module owns the spout side of a worker: the spout executor and the collector its spout tasks emit through.

The executor calls ``next_tuple`` while the topology is active and its tasks are under
``topology.max.spout.pending``, keeps what it emitted tracked in a :class:`~storm_py.runtime.pending.PendingMap`,
and turns the acker's answers into ``ack`` / ``fail`` calls (timeouts into ``fail``, counted apart as timed out).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from typing import Any, Final

from storm_py.api.tuple import DEFAULT_STREAM, Id, Tuple
from storm_py.config.keys import setting
from storm_py.runtime.acker import ACKED, FAILED, INIT, RESET_TIMEOUT
from storm_py.runtime.contracts import CheckpointsWhileHeld, layers
from storm_py.runtime.executor import LATENCY_SAMPLES, Executor, ExecutorHost, bad_stream, direct_route
from storm_py.runtime.hooks import cleanup_task_hooks, hook_spouts
from storm_py.runtime.pending import PendingEntry, PendingMap, Stamp
from storm_py.runtime.routing import StreamRoute
from storm_py.runtime.taps import watch
from storm_py.vector.batches import SchemaMismatchException
from storm_py.vector.routing import Parts, pairs, sorted_targets

log = logging.getLogger(__name__)

#: how many next_tuple calls a spout task gets per pass of the worker loop
SPOUT_CALLS_PER_PASS: Final = 128


class SpoutCollector:
    """The spout output collector of one spout task."""

    __slots__ = ("_default_route", "_ex", "_routes", "_spout", "_task", "component_id")

    def __init__(self, ex: SpoutExecutor, task: int, spout: Any) -> None:
        self._ex = ex
        self._task = task
        self._spout = spout
        self._routes = ex.rt.routes_for(task)
        self._default_route = self._routes.get(DEFAULT_STREAM)  # most emits: no lookup
        self.component_id = ex.component_id

    def emit(self, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit a tuple (tracked when ``msg_id`` is given and ackers run); return the target task ids."""
        route = self._default_route if stream == DEFAULT_STREAM else self._routes.get(stream)
        if route is None or route.offpath:
            return self._emit_offpath(values, msg_id, stream, route)
        if type(values) is not list:
            values = list(values)
        single = route.single
        targets = single.choose(self._task, values) if single is not None else route.choose(self._task, values)
        self._send(route, targets, values, None, msg_id)
        return targets

    def _emit_offpath(self, data: Any, msg_id: Any, stream: str, route: StreamRoute | None) -> list[int]:
        """An emit on a stream off the per-tuple path: a columnar stream's (its batch split over the targets, as
        one tree), or the error of an undeclared or a direct stream."""
        if route is None or route.direct or route.columnar is None:
            bad_stream(stream, route, self.component_id)
        columnar = route.columnar
        try:
            parts = columnar.parts(self._task, data)
        except SchemaMismatchException:
            if msg_id is not None:
                self._ex.fail_later(self._task, msg_id)
            raise
        self._send_parts(route, parts, msg_id)
        return sorted_targets(parts)

    def _send_parts(self, route: StreamRoute, parts: Parts, msg_id: Any) -> None:
        """Send each ``(target, values)`` of ``parts`` as one tree (see :meth:`_send`); nothing to send counts as
        no emit, and a ``msg_id`` of it is acked at once."""
        if not parts:
            if msg_id is not None:
                self._ex.ack_now(self._spout, msg_id)
            return
        self._send(route, [t for t, _ in parts], [], [values for _, values in parts], msg_id)

    def emit_batch(self, batch: Sequence[Sequence[Any]], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> int:
        """Emit the tuples of ``batch`` as one tuple tree; return how many tuples went to tasks.

        Tracked (``msg_id`` given and ackers running), the batch has one root, one pending entry and one acker
        entry: the spout's ``ack(msg_id)`` comes once every tuple of the batch is fully processed, its
        ``fail(msg_id)`` as soon as any of them fails or the tree times out, and the batch counts once toward
        ``topology.max.spout.pending`` (the executor's acked, failed and timed-out counts count its tuples, each
        with the tree's complete latency).  Each tuple is routed on its own, as by :meth:`emit`.  Untracked, it is
        :meth:`emit` per tuple; an empty batch with a ``msg_id`` is acked at once.
        """
        route = self._default_route if stream == DEFAULT_STREAM else self._routes.get(stream)
        if route is None or route.offpath:
            if route is not None and route.columnar is not None:
                raise ValueError(f"emit_batch takes values lists: stream {stream!r} of {self.component_id!r} is "
                                 "columnar, emit a batch with emit(batch, msg_id, stream) instead")
            bad_stream(stream, route, self.component_id)
        ex = self._ex
        out = ex.outbuf
        fields = route.fields
        comp = self.component_id
        task = self._task
        single = route.single
        one = route.one
        count = len(batch)
        tracked = msg_id is not None and ex.acking and count > 0
        ids = ex.ids
        root = ids.root() if tracked else None
        ack_val = 0
        sent = 0
        for values in batch:
            vals = values if type(values) is list else list(values)
            if one is not None:  # one target, chosen without a list
                target = one.choose_one(task, vals)
                sent += 1
                one_edge: Any = None  # untracked: no root, no edge
                if root is not None:
                    edge = ids.next()
                    ack_val ^= edge
                    one_edge = edge
                out[target].append(Tuple(vals, fields, comp, stream, task, None, root, one_edge))
                continue
            targets = single.choose(task, vals) if single is not None else route.choose(task, vals)
            sent += len(targets)
            if root is None:
                for t in targets:
                    out[t].append(Tuple(vals, fields, comp, stream, task, None))
                continue
            for t in targets:
                edge = ids.next()
                ack_val ^= edge
                out[t].append(Tuple(vals, fields, comp, stream, task, None, root, edge))
        stats = ex.stats
        stats.emitted += count
        stats.transferred += sent
        route.emitted += count
        route.transferred += sent
        if root is not None:
            ex.newer[root] = PendingEntry(task, msg_id, ex.emit_stamp, count)
            ackers = ex.acker_tasks
            r: int = root
            out[ackers[r % len(ackers)]].append((INIT, root, ack_val, task))
        elif msg_id is not None:
            ex.ack_now(self._spout, msg_id)
        return sent

    def emit_direct(
        self, task_id: int, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM
    ) -> None:
        """Emit a tuple to one task on a direct stream."""
        route, targets = direct_route(self._routes, stream, task_id, self.component_id)
        columnar = route.columnar
        if columnar is None:
            self._send(route, targets, list(values), None, msg_id)
            return
        try:
            batch = columnar.batch(values)
        except SchemaMismatchException:
            if msg_id is not None:
                self._ex.fail_later(self._task, msg_id)
            raise
        self._send_parts(route, pairs(targets, [batch]) if batch.num_rows else [], msg_id)

    def _send(self, route: StreamRoute, targets: list[int], values: list[Any], each: list[Any] | None,
              msg_id: Any) -> None:
        """The one send of a spout task's emits: a tuple to each of ``targets``, of ``values`` (an emit's), or
        when ``each`` is given of ``each[i]`` to ``targets[i]`` (a columnar batch's parts), as one tree: tracked
        when ``msg_id`` is given and ackers run, else untracked and a ``msg_id`` acked at once."""
        ex = self._ex
        out = ex.outbuf
        stats = ex.stats
        n = len(targets)
        stats.emitted += 1
        stats.transferred += n
        route.emitted += 1
        route.transferred += n
        fields = route.fields
        stream = route.stream
        comp = self.component_id
        task = self._task
        if msg_id is None or not ex.acking:
            for i in range(n):
                out[targets[i]].append(Tuple(values if each is None else each[i], fields, comp, stream, task, None))
            if msg_id is not None:
                ex.ack_now(self._spout, msg_id)
            return
        ids = ex.ids
        root: Id = ids.root()  # one int object for the pending map, the tuples and the init row
        ack_val = 0
        for i in range(n):
            edge = ids.next()
            ack_val ^= edge
            out[targets[i]].append(
                Tuple(values if each is None else each[i], fields, comp, stream, task, None, root, edge))
        ex.newer[root] = PendingEntry(task, msg_id, ex.emit_stamp, 1)  # PendingMap.add, inlined
        ackers = ex.acker_tasks
        r: int = root  # acker_for(root), inlined (compiled: on a machine int)
        out[ackers[r % len(ackers)]].append((INIT, root, ack_val, task))

    def get_pending_count(self) -> int:
        """Tuples of this executor waiting to be acked or failed."""
        return len(self._ex.pending)

    def report_error(self, exc: BaseException) -> None:
        """Record an error for the topology summary."""
        self._ex.report_error(self._task, exc)

    def flush(self) -> None:
        """Storm's explicit flush: the worker flushes after every step, so this does nothing."""


class SpoutExecutor(Executor):
    """Calls ``next_tuple`` while active and under ``max.spout.pending``; turns acker rows into ``ack``/``fail``."""

    is_spout = True

    def __init__(self, rt: ExecutorHost, component_id: str, task_ids: list[int]) -> None:
        super().__init__(rt, component_id, task_ids)
        self.acking = rt.num_ackers > 0
        self.ids = rt.ids
        msp = self.conf.get("topology.max.spout.pending")
        self.max_pending = int(msp) * len(task_ids) if (msp and self.acking) else 0
        timeouts = bool(setting(rt.conf, "topology.enable.message.timeouts"))
        timeout = float(setting(rt.conf, "topology.message.timeout.secs"))
        self.now = rt.clock.now()
        #: the emit time of what the step's spout calls emit, shared by their pending entries and set when the
        #: last call returns: complete latency counts from there, before which no emit leaves the worker, and
        #: the clock is read for no emit; emits from ``ack`` or ``fail`` get the step's start.  One list per
        #: step, not per call: a tree waiting for a checkpoint to commit holds no object of its own beyond its
        #: pending entry
        self.emit_stamp = Stamp(self.now)
        flush_ms = float(setting(self.conf, "topology.batch.flush.interval.millis"))
        #: a step stops calling next_tuple once this long has passed, so that its emits leave the worker at the
        #: end of the pass (Storm's batch flush interval; 0: only after SPOUT_CALLS_PER_PASS calls)
        self.flush_secs = flush_ms / 1000.0
        self.pending = PendingMap(timeout if (self.acking and timeouts) else None, self.now)
        #: the pending map's newer bucket, where emits add what they track (replaced at every rotation)
        self.newer = self.pending.buckets()[0]
        self.tick_freq = None
        self.next_tick = float("inf")
        #: inbox rows that are not ``(code, root, delta)``, dropped and logged (a spout reads nothing else)
        self.bad_rows = 0
        self.spouts: dict[int, Any] = {}
        self.collectors: dict[int, SpoutCollector] = {}
        self.opened = False
        self.active = False
        #: the tasks' spouts that checkpoint while the topology is held (found at prepare), and the checkpoint
        #: request the topology is held for (``None``: not held)
        self.checkpointers: dict[int, CheckpointsWhileHeld] = {}
        self.held: int | None = None
        #: emits refused with a ``msg_id`` (a batch that does not fit its stream): failed after the spout's call
        self.refused: list[tuple[int, Any]] = []

    def components(self) -> dict[int, Any]:
        return self.spouts

    def prepare(self) -> None:
        for t in self.task_ids:
            spout = self.rt.instantiate(self.component_id, t)
            self.spouts[t] = spout
            self.collectors[t] = SpoutCollector(self, t, spout)
            found = next((c for c in layers(spout) if isinstance(c, CheckpointsWhileHeld)), None)
            if found is not None:
                self.checkpointers[t] = found

    def _open(self) -> None:
        self.opened = True
        for t, spout in self.spouts.items():
            try:
                spout.open(self.rt.component_conf(self.component_id), self.context_for(t), self.collectors[t])
            except Exception as exc:
                # As in Storm, a spout that cannot open takes its worker down (restarted with backoff) instead of
                # calling next_tuple on a half-made spout forever; the error is reported as itself first.
                log.exception("spout %s task %d failed in open", self.component_id, t)
                self.report_error(t, exc)
                raise
        for t in self.spouts:
            self.context_for(t)
            watch(self, t)  # its emits: tapped for hooks and topology.debug, else left alone
        hook_spouts(self.spouts, self.contexts, self.stats)
        tracer = self.rt.tracer
        if tracer is not None and not self.component_id.startswith("__"):
            for t, spout in list(self.spouts.items()):
                self.spouts[t] = tracer.spout(spout, self.component_id, t, self.outbuf)

    def set_active(self, active: bool, hold: int | None = None) -> None:
        """Follow the topology's status: open on first activation, then ``activate``/``deactivate``.  While the
        topology is inactive but held for a checkpoint (``hold``: the request's id), spouts that checkpoint while
        held run on and are told (the others are deactivated)."""
        held = None if active or not self.checkpointers else hold
        runs = active or held is not None
        if runs == self.active and held == self.held:
            return
        if runs and not self.opened:
            self._open()
        if held != self.held:
            self.held = held
            for t, checkpointer in self.checkpointers.items():
                try:
                    checkpointer.hold_for_checkpoint(held)
                except Exception as exc:
                    self.report_error(t, exc)
        if runs == self.active:
            return
        self.active = runs
        for t, spout in self.spouts.items():
            try:
                spout.activate() if runs else spout.deactivate()
            except Exception as exc:
                self.report_error(t, exc)

    def ack_now(self, spout: Any, msg_id: Any) -> None:
        """With no ackers an emitted tuple counts as acked at once (Storm calls ``ack`` inside ``emit``)."""
        self.stats.acked += 1
        try:
            spout.ack(msg_id)
        except Exception as exc:
            self.report_error(-1, exc)

    def fail_later(self, task: int, msg_id: Any) -> None:
        """Fail ``msg_id`` of ``task`` once the spout's current call returned (its emit was refused)."""
        self.refused.append((task, msg_id))

    def _fail_refused(self) -> None:
        refused, self.refused = self.refused, []
        for task, msg_id in refused:
            self.stats.failed += 1
            try:
                self.spouts[task].fail(msg_id)
            except Exception as exc:
                self.report_error(task, exc)

    def step(self, now: float) -> bool:
        since = now - self.now
        self.now = now
        self.emit_stamp = Stamp(now)  # what ack and fail emit below keeps the step's start
        did = False
        inbox = self.inbox
        if inbox:
            did = True
            self._handle_acker_rows(inbox, now)
        pending = self.pending
        if now >= pending.next_rotate:
            did = True
            self._expire(pending.rotate(now))
            self.newer = pending.buckets()[0]
        if self.active:
            newer, older = pending.buckets()
            rt = self.rt
            max_pending = self.max_pending
            stats = self.stats
            flush_secs = self.flush_secs
            deadline = now + flush_secs
            clock = self.clock
            since /= len(self.spouts) or 1  # once the executor waits, every task's turn counts its share
            # the worker's backlog changes only between steps (emits wait in the out-buffer until the step ends)
            throttled = rt.backlog >= rt.backlog_limit
            stamp = Stamp(now)  # the spout calls' emits share it (see emit_stamp)
            self.emit_stamp = stamp
            at = now
            for task, spout in self.spouts.items():
                for _ in range(SPOUT_CALLS_PER_PASS):
                    if max_pending and len(newer) + len(older) >= max_pending:
                        stats.skipped_max_spout += since  # the time since the last pass went waiting
                        break
                    if throttled:
                        stats.skipped_backpressure += since
                        break
                    before = stats.emitted
                    try:
                        spout.next_tuple()
                    except Exception as exc:
                        log.exception("spout %s task %d failed in next_tuple", self.component_id, task)
                        self.report_error(task, exc)
                        break
                    if stats.emitted == before:
                        break  # nothing to emit: the pass goes on and what was emitted leaves the worker
                    did = True
                    at = clock.now()
                    if flush_secs and at >= deadline:
                        break  # every task still gets a call per pass; the emits leave at the pass's end
            stamp.at = at
            if self.refused:
                self._fail_refused()
        else:
            self.stats.skipped_inactive += since
        return did

    def _handle_acker_rows(self, inbox: deque[tuple[int, list[Any]]], now: float) -> None:
        rows: list[Any]  # (code, root, delta): what the frame decoder checked, or what a local sender handed in
        pending = self.pending
        newer, older = pending.buckets()
        spouts = self.spouts
        stats = self.stats
        samples = stats.lat_samples
        n = 0
        while inbox:
            target, rows = inbox.popleft()
            n += len(rows)
            for row in rows:
                if type(row) is not tuple or len(row) != 3:
                    self.bad_rows += 1
                    log.warning("spout %s task %d dropped a row it cannot read (not (code, root, delta)): %.60r",
                                self.component_id, target, row)
                    continue
                code, root, _delta = row
                if code == RESET_TIMEOUT:
                    pending.reset(root)
                    continue
                entry = newer.pop(root, None)  # PendingMap.complete, inlined
                if entry is None:
                    entry = older.pop(root, None)
                    if entry is None:
                        continue  # already timed out: a late ack or fail is ignored
                task = entry.task
                msg_id = entry.msg_id
                size = entry.size
                spout = spouts[task]
                try:
                    if code == ACKED:
                        stats.acked += size
                        latency = (now - entry.stamp.at) * 1000.0
                        stats.lat_sum += latency * size  # every tuple of a batch completed with its tree
                        stats.lat_count += size
                        if len(samples) < LATENCY_SAMPLES:
                            samples.append(latency)
                        else:  # keep the latest samples: a ring over the sample buffer
                            samples[stats.lat_count % LATENCY_SAMPLES] = latency
                        spout.ack(msg_id)
                    elif code == FAILED:
                        stats.failed += size
                        spout.fail(msg_id)
                except Exception as exc:
                    log.exception("spout %s task %d failed in ack/fail", self.component_id, task)
                    self.report_error(task, exc)
        self.rt.backlog -= n

    def _expire(self, expired: dict[int, PendingEntry]) -> None:
        for entry in expired.values():
            self.stats.timed_out += entry.size
            try:
                self.spouts[entry.task].fail(entry.msg_id)
            except Exception as exc:
                self.report_error(entry.task, exc)

    def pending_count(self) -> int:
        """Tuples emitted and not yet acked, failed or timed out."""
        return len(self.pending)

    def shutdown(self) -> None:
        for t, spout in self.spouts.items():
            try:
                if self.active:
                    spout.deactivate()
                if self.opened:
                    spout.close()
            except Exception as exc:
                self.report_error(t, exc)
        for context in self.contexts.values():
            cleanup_task_hooks(context)
