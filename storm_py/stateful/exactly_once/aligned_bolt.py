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

from storm_py.api.components import (
    BasicBolt,
    BasicOutputCollector,
    OutputCollector,
    OutputFieldsDeclarer,
)
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.errors import FailedException
from storm_py.runtime.contracts import Drains, own_configuration
from storm_py.stateful.anchored_collector import AnchoredCollector
from storm_py.stateful.exactly_once.coordinator import BARRIER, BARRIER_FIELDS, BARRIER_STREAM_ID, RESTART
from storm_py.stateful.exactly_once.tuple_path import AlignedPath, FailWatchingCollector
from storm_py.stateful.state.key_group_move import KeyGroupMove
from storm_py.stateful.state.key_value import KeyValueState
from storm_py.stateful.state.providers import new_state, state_namespace

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


class AlignedBasicBolt(BasicBolt):
    """What the bolt executor runs in place of a basic bolt under exactly_once (its compiled basic runner: emits
    anchored to the input, the input acked, or failed when ``execute`` raises): ``execute`` is the executor's compiled
    :meth:`AlignedPath.execute_basic <storm_py.stateful.exactly_once.tuple_path.AlignedPath.execute_basic>`."""

    def __init__(self, owner: AlignedBoltExecutor) -> None:
        self.owner = owner
        self.execute = owner.path.execute_basic  # type: ignore[method-assign]

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        self.owner.path.execute_basic(tup, collector)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.owner.declare_output_fields(declarer)


class AlignedBoltExecutor:
    """Runs one bolt task under exactly_once (see the module's description); ``stateful`` bolts get their state
    and its hooks, the others only pass barriers and markers on.

    Data tuples run through :attr:`path` (:class:`~storm_py.stateful.exactly_once.tuple_path.AlignedPath`): straight
    into the bolt while no barrier blocks and no restart fences a channel (:meth:`_sync`), else through the alignment.
    A basic bolt is run by the bolt executor's basic runner through :attr:`basic_bolt`; :meth:`execute` runs it with an
    anchoring collector of its own (what a caller without that runner uses).
    """

    #: the compiled path data tuples run through: made at ``prepare``, since this bolt is copied for each task
    #: before (and compiled objects are not copied)
    path: AlignedPath

    def __init__(self, bolt: Any, barrier_sources: Sequence[str], stateful: bool) -> None:
        self.bolt = bolt
        self.barrier_sources = tuple(barrier_sources)
        self.stateful = stateful
        self.alignment = Alignment(frozenset())
        self.state: KeyValueState | None = None
        self.move: KeyGroupMove | None = None
        #: data held while its channel is blocked, each with whether the basic runner acked it already
        self.held: list[tuple[Tuple, bool]] = []
        self._basic: AnchoredCollector | None = None
        self.basic_bolt: AlignedBasicBolt | None = None

    @property
    def wrapped_component(self) -> Any:
        """The user's bolt this runs (what the runtime hands to it, e.g. credentials, goes there)."""
        return self.bolt

    def replace_wrapped(self, component: Any) -> None:
        """Run ``component`` in place of the user's bolt (its async driver); before ``prepare`` only."""
        self.bolt = component

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.path = AlignedPath(self._execute, self._failed, self._execute_basic, self._broken)
        self.collector = collector
        self.component_id = context.this_component_id
        channels = frozenset(t for c in self.barrier_sources for t in context.get_component_tasks(c))
        self.alignment = Alignment(channels)
        if self.stateful:
            self.state = new_state(state_namespace(context), conf, context)
            self.move = KeyGroupMove.of_task(conf, context)
        if isinstance(self.bolt, BasicBolt):
            self._basic = AnchoredCollector(collector)
            self.basic_bolt = AlignedBasicBolt(self)
            self.bolt.prepare(conf, context)
        else:
            self.bolt.prepare(conf, context, FailWatchingCollector(collector, self._broken))
        self._sync()

    @property
    def execute(self) -> Callable[[Tuple], None]:
        """The compiled path's ``execute``, once prepared: the executor runs every input straight through it."""
        return self.path.execute

    def _broken(self) -> None:
        """The bolt failed a tuple or raised: the next barrier fails (every component rolls back)."""
        self.alignment.broken = True

    def _sync(self) -> None:
        """Let the compiled path run data straight through the bolt when nothing holds or drops it."""
        a = self.alignment
        direct = a.initialized and not a.fenced and not a.blocked
        path = self.path
        path.bolt_execute = self.bolt.execute if direct and self._basic is None else None
        path.basic_execute = self.bolt.execute if direct and self._basic is not None else None

    def _execute(self, tup: Tuple) -> None:
        if tup.source_stream == BARRIER_STREAM_ID:
            ok, released = self._barrier(tup)
            if ok:
                self.collector.ack(tup)
            else:
                self.collector.fail(tup)
            self._run_held(released)
            return
        self._data(tup, False)

    def _data(self, tup: Tuple, acked: bool) -> None:
        """A data tuple off the direct path: run, held or dropped as the alignment says (``acked``: the basic
        runner acked it already; otherwise it is acked once run by a basic bolt, or dropped)."""
        verdict = self.alignment.data(tup.source_task)
        if verdict == HOLD:
            self.held.append((tup, acked))
        elif verdict == RUN:
            self._run(tup, not acked)
        elif not acked:
            self.collector.ack(tup)  # dropped: done with (it carries no tree unless a component anchored it to one)

    def _barrier(self, tup: Tuple) -> tuple[bool, list[tuple[Tuple, bool]]]:
        """:meth:`_control` of a barrier or marker, then the direct path set again as the alignment now allows."""
        try:
            return self._control(tup)
        finally:
            self._sync()

    def _execute_basic(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        """A basic bolt's input from the basic runner, off the direct path: the runner acks it when this returns
        (dropped, held or run) and fails it when this raises (a failed barrier, or the bolt raised)."""
        if tup.source_stream == BARRIER_STREAM_ID:
            ok, released = self._barrier(tup)
            self._run_held(released)
            if not ok:
                raise FailedException(f"bolt {self.component_id}: barrier or marker {tup.values!r} failed")
            return
        verdict = self.alignment.data(tup.source_task)
        if verdict == HOLD:
            self.held.append((tup, True))
        elif verdict == RUN:
            try:
                self.bolt.execute(tup, collector)
            except Exception:
                self._broken()
                raise

    def _run(self, tup: Tuple, ack: bool) -> None:
        """Run a data tuple through the bolt (a basic one with the anchoring collector); ``ack``: ack it after."""
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
                if ack:
                    self.collector.ack(tup)
        except Exception as exc:
            self._failed(tup, exc)

    def _failed(self, tup: Tuple, exc: Exception) -> None:
        """The bolt raised on ``tup``: any failure rolls every component back."""
        if not isinstance(exc, FailedException):
            log.error("bolt %s raised on %r: %s", self.component_id, tup, exc)
        self.collector.report_error(exc)
        self._broken()

    def _control(self, tup: Tuple) -> tuple[bool, list[tuple[Tuple, bool]]]:
        """A barrier or restart marker: act on it; whether to ack it (else fail it), and the held data to run
        after it (the channels are unblocked)."""
        txid, action, generation, committed = (int(tup.values[0]), str(tup.values[1]), int(tup.values[2]),
                                               int(tup.values[3]))
        collector = self.collector
        if action == RESTART:
            if self.alignment.restart(tup.source_task, generation):
                self.held = []
                if isinstance(self.bolt, Drains):  # dropped like the held data: the spouts replay them
                    self.bolt.cancel_in_flight()
                try:
                    self._restore(txid)
                except Exception as exc:
                    log.error("bolt %s cannot restore txid %d: %s", self.component_id, txid, exc)
                    collector.report_error(exc)
                    self._broken()
                    return False, []
                collector.emit([txid, action, generation, committed], anchors=tup, stream=BARRIER_STREAM_ID)
            return True, []
        if action != BARRIER:
            return False, []
        verdict = self.alignment.arrive(tup.source_task, txid, generation)
        if verdict == "fail":
            return False, []
        if verdict == "wait":
            return True, []
        try:
            if isinstance(self.bolt, Drains):  # the barrier follows everything the inputs before it emit
                self.bolt.drain()
            self._prepare(txid, committed)
        except Exception as exc:
            log.error("bolt %s cannot prepare txid %d: %s", self.component_id, txid, exc)
            collector.report_error(exc)
            self._broken()
            return False, []
        collector.emit([txid, action, generation, committed], anchors=tup, stream=BARRIER_STREAM_ID)
        held, self.held = self.held, []
        return True, held

    def _run_held(self, held: list[tuple[Tuple, bool]]) -> None:
        """Run data held while its channel was blocked (each with whether the basic runner acked it then)."""
        for tup, acked in held:
            self._data(tup, acked)

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
        if self.move is not None:  # after a rescale: this task's key groups, as of the committed checkpoint
            self.move.settle(state, txid)
            self.move = None
        self._commit_up_to(txid)
        self.bolt.pre_rollback()
        state.rollback()
        self.bolt.init_state(state)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.bolt.declare_output_fields(declarer)
        declarer.declare_stream(BARRIER_STREAM_ID, list(BARRIER_FIELDS))

    def get_component_configuration(self) -> dict[str, Any] | None:
        return own_configuration(self.bolt)

    def cleanup(self) -> None:
        self.bolt.cleanup()
