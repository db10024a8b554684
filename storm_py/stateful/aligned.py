"""This module owns the bolt side of ``topology.state.guarantee: exactly_once``: every bolt (stateful or not) is
wrapped in an :class:`AlignedBoltExecutor`, which aligns barriers across its input channels and fences what a
restart left in flight.

A *channel* is one upstream task; barriers and restart markers (stream ``$barrier``) come along each channel in
order with its data.  :class:`Alignment` is the pure core; the executor applies its decisions:

- barrier ``n`` on a channel: the channel is *blocked* (its data is held, not executed) until every channel
  delivered barrier ``n``; then the state is prepared as ``n``, the barrier goes on downstream, and the held data
  runs.  The barrier (like every marker) carries the last committed txid: a prepared txid at or below it is
  committed first.
- restart marker of a newer generation: the state is committed up to and rolled back to the marker's txid at
  once, the marker goes on downstream (before anything this bolt emits from now on), and every *other* channel is
  *fenced*: its data is dropped until its own marker of the generation arrives.
- a bolt that raised, failed a tuple or has not been initialised by a marker fails the next barrier: the
  coordinator then restarts every component.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from storm_py.api.components import Anchors, BasicBolt, OutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import DEFAULT_STREAM, Tuple
from storm_py.errors import FailedException
from storm_py.stateful.exactly_once import BARRIER, BARRIER_FIELDS, BARRIER_STREAM_ID, RESTART
from storm_py.stateful.executors import AnchoredCollector
from storm_py.stateful.providers import new_state, state_namespace
from storm_py.stateful.state import KeyValueState
from storm_py.stateful.tracking import AlignedPath

log = logging.getLogger(__name__)

# what the alignment says of an input
RUN: Final = "run"  # execute it
HOLD: Final = "hold"  # its channel is blocked by a barrier: keep it for later
DROP: Final = "drop"  # stale (before a restart) or the bolt is not initialised: drop it


@dataclass
class Alignment:
    """Per-channel barrier alignment and restart fencing for one bolt task."""

    channels: frozenset[int]
    generation: int = -1
    initialized: bool = False
    broken: bool = False
    blocked: set[int] = field(default_factory=set)
    fenced: set[int] = field(default_factory=set)
    barrier: int | None = None

    def data(self, channel: int) -> str:
        """A data tuple from ``channel``."""
        if not self.initialized or channel in self.fenced:
            return DROP
        return HOLD if channel in self.blocked else RUN

    def restart(self, channel: int, generation: int) -> bool:
        """A restart marker from ``channel``; True when it starts a new generation here (roll back, pass it on)."""
        if generation > self.generation:
            self.generation = generation
            self.initialized = True
            self.broken = False
            self.blocked = set()
            self.barrier = None
            self.fenced = set(self.channels) - {channel}
            return True
        if generation == self.generation:
            self.fenced.discard(channel)
        return False

    def arrive(self, channel: int, txid: int, generation: int) -> str:
        """Barrier ``txid`` from ``channel``: ``"fail"`` (fail it: stale, uninitialised or broken), ``"wait"`` (ack
        it: other channels still owe it) or ``"prepare"`` (every channel delivered it)."""
        if generation != self.generation or not self.initialized or self.broken or channel in self.fenced:
            return "fail"
        if self.barrier is None or txid > self.barrier:
            self.barrier = txid
            self.blocked = set()
        elif txid < self.barrier:
            return "fail"
        self.blocked.add(channel)
        if self.blocked >= self.channels:
            self.blocked = set()
            return "prepare"
        return "wait"


class _FailWatchingCollector:
    """The collector the wrapped bolt sees: a ``fail`` breaks the bolt (it is a failure to roll back)."""

    def __init__(self, delegate: OutputCollector, owner: AlignedBoltExecutor) -> None:
        self._delegate = delegate
        self._owner = owner
        self.ack: Callable[[Tuple], None] = delegate.ack  # straight through: one Python call less per tuple

    def emit(self, values: Sequence[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> list[int]:
        return self._delegate.emit(values, anchors, stream)  # positional: the compiled collector's fast call

    def emit_direct(self, task_id: int, values: Sequence[Any], anchors: Anchors = None,
                    stream: str = DEFAULT_STREAM) -> None:
        self._delegate.emit_direct(task_id, values, anchors=anchors, stream=stream)

    def fail(self, tup: Tuple) -> None:
        self._owner.alignment.broken = True
        self._delegate.fail(tup)

    def reset_timeout(self, tup: Tuple) -> None:
        self._delegate.reset_timeout(tup)

    def report_error(self, exc: BaseException) -> None:
        self._delegate.report_error(exc)


class AlignedBoltExecutor:
    """Runs one bolt task under exactly_once (see the module's description); ``stateful`` bolts get their state
    and its hooks, the others only pass barriers and markers on."""

    def __init__(self, bolt: Any, barrier_sources: Sequence[str], stateful: bool) -> None:
        self.bolt = bolt
        self.barrier_sources = tuple(barrier_sources)
        self.stateful = stateful
        self.alignment = Alignment(frozenset())
        self.state: KeyValueState | None = None
        self.held: list[Tuple] = []
        self._basic: AnchoredCollector | None = None
        self.path = AlignedPath(self._execute, self._failed)

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.component_id = context.this_component_id
        channels = frozenset(t for c in self.barrier_sources for t in context.get_component_tasks(c))
        self.alignment = Alignment(channels)
        if self.stateful:
            self.state = new_state(state_namespace(context), conf, context)
        watching = _FailWatchingCollector(collector, self)
        if isinstance(self.bolt, BasicBolt):
            self._basic = AnchoredCollector(collector)
            self.bolt.prepare(conf, context)
        else:
            self.bolt.prepare(conf, context, watching)
        self._sync()

    def execute(self, tup: Tuple) -> None:
        self.path.execute(tup)

    def _sync(self) -> None:
        """Let the compiled path run data straight through the bolt when nothing holds or drops it."""
        a = self.alignment
        direct = self._basic is None and a.initialized and not a.fenced and not a.blocked
        self.path.bolt_execute = self.bolt.execute if direct else None

    def _execute(self, tup: Tuple) -> None:
        if tup.source_stream == BARRIER_STREAM_ID:
            try:
                self._control(tup)
            finally:
                self._sync()
            return
        alignment = self.alignment  # Alignment.data, inlined: it runs for every tuple
        channel = tup.source_task
        if not alignment.initialized or channel in alignment.fenced:
            self.collector.ack(tup)  # dropped: done with (it carries no tree unless a component anchored it to one)
        elif channel in alignment.blocked:
            self.held.append(tup)
        elif self._basic is None:
            try:
                self.bolt.execute(tup)
            except Exception as exc:
                self._failed(tup, exc)
        else:
            self._run(tup)

    def _run(self, tup: Tuple) -> None:
        try:
            basic = self._basic
            if basic is None:
                self.bolt.execute(tup)
            else:
                basic.input = tup
                try:
                    self.bolt.execute(tup, basic)
                finally:
                    basic.input = None
                self.collector.ack(tup)
        except Exception as exc:
            self._failed(tup, exc)

    def _failed(self, tup: Tuple, exc: Exception) -> None:
        """The bolt raised on ``tup``: any failure rolls every component back."""
        if not isinstance(exc, FailedException):
            log.error("bolt %s raised on %r: %s", self.component_id, tup, exc)
        self.collector.report_error(exc)
        self.alignment.broken = True

    def _control(self, tup: Tuple) -> None:
        txid, action, generation, committed = (int(tup.values[0]), str(tup.values[1]), int(tup.values[2]),
                                               int(tup.values[3]))
        collector = self.collector
        if action == RESTART:
            if self.alignment.restart(tup.source_task, generation):
                self.held = []
                try:
                    self._restore(txid)
                except Exception as exc:
                    log.error("bolt %s cannot restore txid %d: %s", self.component_id, txid, exc)
                    collector.report_error(exc)
                    self.alignment.broken = True
                    collector.fail(tup)
                    return
                collector.emit([txid, action, generation, committed], anchors=tup, stream=BARRIER_STREAM_ID)
            collector.ack(tup)
            return
        if action != BARRIER:
            collector.fail(tup)
            return
        verdict = self.alignment.arrive(tup.source_task, txid, generation)
        if verdict == "fail":
            collector.fail(tup)
            return
        if verdict == "wait":
            collector.ack(tup)
            return
        try:
            self._prepare(txid, committed)
        except Exception as exc:
            log.error("bolt %s cannot prepare txid %d: %s", self.component_id, txid, exc)
            collector.report_error(exc)
            self.alignment.broken = True
            collector.fail(tup)
            return
        collector.emit([txid, action, generation, committed], anchors=tup, stream=BARRIER_STREAM_ID)
        collector.ack(tup)
        held, self.held = self.held, []
        for t in held:
            self.execute(t)

    def _commit_up_to(self, committed: int) -> None:
        state = self.state
        if state is None:
            return
        prepared = state.prepared_txid()
        if prepared is not None and committed >= prepared > state.committed_txid():
            self.bolt.pre_commit(prepared)
            state.commit(prepared)

    def _prepare(self, txid: int, committed: int) -> None:
        state = self.state
        if state is None:
            return
        self._commit_up_to(committed)
        self.bolt.pre_prepare(txid)
        state.prepare_commit(txid)

    def _restore(self, txid: int) -> None:
        state = self.state
        if state is None:
            return
        self._commit_up_to(txid)
        self.bolt.pre_rollback()
        state.rollback()
        self.bolt.init_state(state)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.bolt.declare_output_fields(declarer)
        declarer.declare_stream(BARRIER_STREAM_ID, list(BARRIER_FIELDS))

    def cleanup(self) -> None:
        self.bolt.cleanup()
