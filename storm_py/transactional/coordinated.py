"""CoordinatedBolt: the counting protocol that tells each task it has received the whole of a batch.

Every tuple of a batch carries the batch id as its first value.  Per batch id a task tracks how many tuples
it received (counted when its delegate acks them), how many each upstream task said it sent, and how many it
sent to each downstream task.  When a task finishes a batch it sends one report ``[id, {task: count}]`` on
:data:`~storm_py.transactional.streams.COORD_STREAM` to every task of the components it feeds (all grouping);
a task missing from the counts received nothing, so tasks that got no tuple of a batch finish it too.

A task has received the whole batch once it has one report from every task of every source component and has
received as many tuples as those reports add up to; a committer additionally waits for the batch's commit
tuple (its *id stream*).  Then the delegate's ``finished_id`` runs (a batch bolt's ``finish_batch``), the
task sends its own reports, and acks the tuples it held back.  Holding reports (or, for committers, the
commit tuple) keeps the batch's tuple tree open until the task is done; a tuple failed by the delegate, an
exception, or a ``FailedException`` in ``finish_batch`` fails the held tuples and so the batch.

Regular tuples of a batch are not anchored (the batch is the unit): a lost tuple leaves a count short, the
batch never finishes, and its tree times out and is replayed.  Reports travel behind the tuples they count
(delivery between two tasks is in order), but a report that overtakes them is handled too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from storm_py.api.components import Bolt, OutputCollector, OutputFieldsDeclarer, own_configuration
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import DEFAULT_STREAM, Tuple
from storm_py.clock import SYSTEM_CLOCK, Clock
from storm_py.config.keys import setting
from storm_py.errors import FailedException
from storm_py.transactional.streams import COORD_FIELDS, COORD_STREAM

log = logging.getLogger(__name__)

REGULAR = 0
ID = 1
COORD = 2


class TrackingInfo:
    """What a task knows about one batch."""

    __slots__ = ("emitted", "expected", "failed", "held", "received", "received_id", "report_count", "touched")

    def __init__(self, received_id: bool, now: float) -> None:
        self.report_count = 0
        self.expected = 0
        self.received = 0
        self.failed = False
        self.received_id = received_id
        self.emitted: dict[int, int] = {}
        self.held: list[Tuple] = []
        self.touched = now

    def __repr__(self) -> str:
        return (
            f"TrackingInfo(reports={self.report_count}, expected={self.expected}, received={self.received}, "
            f"failed={self.failed}, received_id={self.received_id}, emitted={self.emitted})"
        )


class _CountingCollector:
    """The collector the delegate sees: counts emits per target task and routes acks/fails through the tracker."""

    __slots__ = ("_bolt", "_out")

    def __init__(self, bolt: CoordinatedBolt, out: OutputCollector) -> None:
        self._bolt = bolt
        self._out = out

    def emit(self, values: Sequence[Any], anchors: Any = None, stream: str = DEFAULT_STREAM) -> list[int]:
        tasks = self._out.emit(values, anchors, stream)
        track = self._bolt.tracked.get(values[0])
        if track is not None:
            emitted = track.emitted
            for t in tasks:
                emitted[t] = emitted.get(t, 0) + 1
        else:
            self._bolt.untracked_emit(values[0], stream)
        return tasks

    def emit_direct(
        self, task_id: int, values: Sequence[Any], anchors: Any = None, stream: str = DEFAULT_STREAM
    ) -> None:
        track = self._bolt.tracked.get(values[0])
        if track is not None:
            track.emitted[task_id] = track.emitted.get(task_id, 0) + 1
        else:
            self._bolt.untracked_emit(values[0], stream)
        self._out.emit_direct(task_id, values, anchors, stream)

    def ack(self, tup: Tuple) -> None:
        self._bolt._on_ack(tup)

    def fail(self, tup: Tuple) -> None:
        self._bolt._on_fail(tup)

    def reset_timeout(self, tup: Tuple) -> None:
        self._out.reset_timeout(tup)

    def report_error(self, exc: BaseException) -> None:
        self._out.report_error(exc)


class CoordinatedBolt(Bolt):
    """Wraps a delegate (batch bolt executor, basic bolt executor or emitter) with the counting protocol.

    Args:
        delegate: has ``prepare(conf, context, collector)``, ``execute(tup)`` (acking or failing through the
            collector), ``declare_output_fields``; optionally ``finished_id(id)``, ``timeout_id(id)``,
            ``cleanup()``, ``get_component_configuration()``.
        sources: upstream components whose reports to wait for, ``{component: single}`` (``single``: one
            report in all instead of one per task).  Empty for the emitter, which finishes a batch as soon as
            its batch tuple is processed.
        id_stream: ``(component, stream)`` whose tuple a batch must also wait for (the commit stream, for
            committers); that tuple is held instead of the reports.
        hold_reports_from: without an id stream, hold only the reports of these sources (the others are acked
            at once); None holds all.  A bolt fed by both processing-phase and commit-phase bolts must not
            hold the processing-phase reports, or the batch tree could never complete.
        untracked: ``(component, stream)`` inputs that are no part of any batch (the commit stream of a
            committer emitter): executed and acked as they are.
    """

    def __init__(
        self,
        delegate: Any,
        sources: Mapping[str, bool] | None = None,
        id_stream: tuple[str, str] | None = None,
        hold_reports_from: frozenset[str] | None = None,
        untracked: frozenset[tuple[str, str]] = frozenset(),
    ) -> None:
        self.delegate = delegate
        self.sources: dict[str, bool] = dict(sources or {})
        self.id_stream = id_stream
        self.hold_reports_from = hold_reports_from
        self.untracked = untracked
        self.tracked: dict[Any, TrackingInfo] = {}
        self.num_reports = 0
        self._out: OutputCollector | None = None
        self._task = -1
        self._clock: Clock = SYSTEM_CLOCK
        self._expire_after: float | None = None
        self._next_sweep = 0.0
        self._warned = False

    # ------------------------------------------------------------------------------------------ lifecycle

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self._out = collector
        self._task = context.this_task_id
        self._clock = context.clock
        self.tracked = {}
        self.num_reports = sum(
            1 if single else len(context.get_component_tasks(c)) for c, single in self.sources.items()
        )
        if setting(conf, "topology.enable.message.timeouts"):
            self._expire_after = 2.0 * float(setting(conf, "topology.message.timeout.secs"))
        self._next_sweep = self._clock.now() + (self._expire_after or 0.0)
        self.delegate.prepare(conf, context, _CountingCollector(self, collector))

    def cleanup(self) -> None:
        cleanup = getattr(self.delegate, "cleanup", None)
        if cleanup is not None:
            cleanup()

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.delegate.declare_output_fields(declarer)
        declarer.declare_stream(COORD_STREAM, list(COORD_FIELDS))

    def get_component_configuration(self) -> dict[str, Any] | None:
        return own_configuration(self.delegate)

    # -------------------------------------------------------------------------------------------- inputs

    def execute(self, tup: Tuple) -> None:
        stream = tup.source_stream
        id_stream = self.id_stream
        if stream == COORD_STREAM and self.sources:
            kind = COORD
        elif id_stream is not None and stream == id_stream[1] and tup.source_component == id_stream[0]:
            kind = ID
        elif tup.is_tick():
            self._maybe_sweep(self._clock.now())
            return
        elif self.untracked and (tup.source_component, stream) in self.untracked:
            self._run_delegate(tup)
            return
        else:  # a regular tuple of a batch: the hot path
            batch_id = tup.values[0]
            track = self.tracked.get(batch_id)
            if track is None:
                now = self._clock.now()
                self._maybe_sweep(now)
                self.tracked[batch_id] = TrackingInfo(id_stream is None, now)
            elif track.failed:  # the batch already failed: its stragglers fail too
                assert self._out is not None
                self._out.fail(tup)
                return
            self._run_delegate(tup)
            return
        now = self._clock.now()
        self._maybe_sweep(now)
        batch_id = tup.values[0]
        track = self.tracked.get(batch_id)
        if track is None:
            track = TrackingInfo(id_stream is None, now)
            self.tracked[batch_id] = track
        track.touched = now
        if kind == ID:
            track.received_id = True
        else:
            counts = tup.values[1]
            track.report_count += 1
            track.expected += int(counts.get(self._task, 0)) if counts else 0
        self._check(tup, kind)

    def _maybe_sweep(self, now: float) -> None:
        if now >= self._next_sweep and self._expire_after is not None:
            self._sweep(now)

    def _run_delegate(self, tup: Tuple) -> None:
        try:
            self.delegate.execute(tup)
        except Exception as exc:
            log.exception("coordinated bolt delegate raised on %r", tup)
            assert self._out is not None
            self._out.report_error(exc)
            self._on_fail(tup)

    def _on_ack(self, tup: Tuple) -> None:
        out = self._out
        assert out is not None
        if self.untracked and (tup.source_component, tup.source_stream) in self.untracked:
            out.ack(tup)
            return
        track = self.tracked.get(tup.values[0])
        if track is not None:
            track.received += 1
            if (
                self.sources
                and not track.failed
                and (
                    not track.received_id
                    or track.received != track.expected
                    or track.report_count != self.num_reports
                )
            ):
                out.ack(tup)  # the common case: the batch cannot be finished by this tuple
                return
        if self._check(tup, REGULAR):
            out.fail(tup)
        else:
            out.ack(tup)

    def _on_fail(self, tup: Tuple) -> None:
        out = self._out
        assert out is not None
        if not self.untracked or (tup.source_component, tup.source_stream) not in self.untracked:
            track = self.tracked.get(tup.values[0])
            if track is not None:
                track.failed = True
            self._check(tup, REGULAR)
        out.fail(tup)

    def untracked_emit(self, first: Any, stream: str) -> None:
        """An emit whose first value is no open batch: downstream tasks will not count it (warned once)."""
        if not self._warned:
            self._warned = True
            log.warning(
                "task %d emitted on %r a tuple whose first value %r is not an open batch id: every tuple of a "
                "batch must carry the batch id (the TransactionAttempt) first, or the batch never completes",
                self._task, stream, first,
            )

    # ---------------------------------------------------------------------------------------- the protocol

    def _check(self, tup: Tuple, kind: int) -> bool:
        """Finish or fail the batch of ``tup`` if it is decided; True when it failed."""
        out = self._out
        assert out is not None
        batch_id = tup.values[0]
        track = self.tracked.get(batch_id)
        if track is None:
            if kind != REGULAR:
                out.fail(tup)
            return False
        delayed = False
        if kind == ID or (
            kind == COORD
            and self.id_stream is None
            and (self.hold_reports_from is None or tup.source_component in self.hold_reports_from)
        ):
            track.held.append(tup)
            delayed = True
        failed = False
        if track.failed:
            failed = True
            self._drop(batch_id, track)
            track.touched = self._clock.now()
        elif track.received_id and (
            not self.sources or (track.report_count == self.num_reports and track.expected == track.received)
        ):
            failed = self._finish(batch_id, track, tup, kind, delayed)
        if not delayed and kind != REGULAR:
            if track.failed:
                out.fail(tup)
            else:
                out.ack(tup)
        return failed

    def _finish(self, batch_id: Any, track: TrackingInfo, tup: Tuple, kind: int, delayed: bool) -> bool:
        out = self._out
        assert out is not None
        finished = getattr(self.delegate, "finished_id", None)
        try:
            if finished is not None:
                finished(batch_id)
        except Exception as exc:
            if not isinstance(exc, FailedException):
                log.exception("finishing batch %r raised", batch_id)
                out.report_error(exc)
            else:
                log.info("finishing batch %r failed: %s", batch_id, exc)
            self._drop(batch_id, track)
            return True
        anchors = list(track.held)
        if not delayed and (kind != REGULAR or not self.sources):
            anchors.append(tup)
        out.emit([batch_id, dict(track.emitted)], anchors, COORD_STREAM)
        for held in track.held:
            out.ack(held)
        del self.tracked[batch_id]
        return False

    def _drop(self, batch_id: Any, track: TrackingInfo) -> None:
        """Fail what the batch held and drop its delegate instance.

        The failed track stays (until swept) so that the batch's later tuples and reports fail at once
        instead of opening a new track that could only time out.
        """
        out = self._out
        assert out is not None
        track.failed = True
        held, track.held = track.held, []
        for t in held:
            out.fail(t)
        timeout = getattr(self.delegate, "timeout_id", None)
        if timeout is not None:
            timeout(batch_id)

    def _sweep(self, now: float) -> None:
        """Forget batches untouched for twice the message timeout (their trees have failed by then)."""
        limit = self._expire_after
        assert limit is not None
        self._next_sweep = now + min(limit, 1.0)
        for batch_id, track in [(b, t) for b, t in self.tracked.items() if now - t.touched > limit]:
            log.debug("forgetting batch %r after %.1fs: %r", batch_id, now - track.touched, track)
            if not track.failed:
                self._drop(batch_id, track)
            del self.tracked[batch_id]
