"""This module owns the checkpoint spout (``$checkpointspout``): it drives the checkpoint protocol's core with the
cluster's clock and keeps the protocol's state in its own managed state (namespace ``$checkpointspout-<task>``); a
checkpoint asked for by nimbus (before a rescale of the tasks) begins at once and is reported in its gauges."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from storm_py.api.components import OutputFieldsDeclarer, Spout, SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.clock import Clock
from storm_py.cluster_state.checkpoint_request import SERVED_GAUGE
from storm_py.config.keys import setting
from storm_py.stateful.at_least_once.checkpoint import (
    CHECKPOINT_FIELDS,
    CHECKPOINT_STREAM_ID,
    COMMITTED,
    INITIAL,
    MIN_INTERVAL_MS,
    PREPARING,
    CheckpointAsk,
    CheckpointCoordinator,
    TxState,
)
from storm_py.stateful.exactly_once.coordinator import COMMITTED as EO_COMMITTED
from storm_py.stateful.exactly_once.coordinator import INITIAL as INITIAL_DECISION
from storm_py.stateful.exactly_once.coordinator import PREPARING as EO_PREPARING
from storm_py.stateful.exactly_once.coordinator import RESTARTING as EO_RESTARTING
from storm_py.stateful.exactly_once.coordinator import ExactlyOnceCoordinator, Published, Report
from storm_py.stateful.managed_spout import EXACTLY_ONCE, REPORT_KEY, control_namespace, poll_secs
from storm_py.stateful.managed_spout import TX_STATE_KEY as SPOUT_TX_STATE_KEY
from storm_py.stateful.state.key_value import KeyValueState
from storm_py.stateful.state.providers import new_state, state_namespace

log = logging.getLogger(__name__)

#: the heartbeat gauges of the last committed checkpoint (read by nimbus's REST API and /metrics)
GAUGE_TXID = "checkpoint.txid"
GAUGE_COMMITTED_AT = "checkpoint.committed.wall"

#: the key of the protocol's state in the spout's managed state (the one spouts read)
TX_STATE_KEY = SPOUT_TX_STATE_KEY


def checkpoint_interval_secs(conf: dict[str, Any]) -> float:
    """``topology.state.checkpoint.interval.ms`` in seconds, never below Storm's floor of 100 ms."""
    return max(MIN_INTERVAL_MS, int(setting(conf, "topology.state.checkpoint.interval.ms"))) / 1000.0


class CheckpointSpout(Spout):
    """Emits ``[txid, action]`` on ``$checkpoint`` with message id ``txid``; one task per topology.  Under
    exactly_once it emits nothing: it publishes its decisions in its state (see
    :mod:`storm_py.stateful.exactly_once.coordinator`), reading the reports of the tasks of ``stateful_spouts``."""

    def __init__(self, stateful_spouts: Sequence[str] = ()) -> None:
        self.stateful_spouts = tuple(stateful_spouts)
        self._clock: Clock | None = None
        self._collector: SpoutOutputCollector | None = None
        self._state: KeyValueState | None = None
        self.core: CheckpointCoordinator | None = None
        self.eo: ExactlyOnceCoordinator | None = None
        #: a checkpoint asked for out of the interval (see :meth:`hold_for_checkpoint`)
        self.ask = CheckpointAsk()

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self._clock = context.clock
        self._collector = collector
        self._state = state = new_state(state_namespace(context), conf, context)
        if conf.get("topology.state.guarantee") == EXACTLY_ONCE:
            self._open_exactly_once(conf, context, state)
            return
        saved = state.get(TX_STATE_KEY)
        if saved is None:
            current = INITIAL
            state.put(TX_STATE_KEY, current.to_list())
            state.commit()
        else:
            current = TxState.from_saved(saved)
        log.info("checkpoint spout starts at %s (interval %.3fs)", current, checkpoint_interval_secs(conf))
        self.core = CheckpointCoordinator(current, checkpoint_interval_secs(conf), self._clock.now())

    def _open_exactly_once(self, conf: dict[str, Any], context: TopologyContext, state: KeyValueState) -> None:
        saved = state.get(TX_STATE_KEY)
        current = INITIAL_DECISION if saved is None else Published.from_saved(saved)
        assert self._clock is not None
        self._conf, self._context = conf, context
        self._poll = poll_secs(conf)
        self._next_poll = float("-inf")
        self._controls = [
            control_namespace(c, t) for c in self.stateful_spouts for t in context.get_component_tasks(c)
        ]
        stuck = float(setting(conf, "topology.message.timeout.secs"))
        log.info("checkpoint coordinator (exactly_once) starts at %s", current)
        self.eo = ExactlyOnceCoordinator(current, checkpoint_interval_secs(conf), stuck, self._clock.now())

    def hold_for_checkpoint(self, request: int | None) -> None:
        """The topology is held for a checkpoint asked for under ``request`` (``None``: released): one begins as
        soon as the protocol is ready, and its commit is reported in the gauges (``checkpoint.request``)."""
        if request is None:
            return
        self.ask.ask(request)
        self._next_poll = float("-inf")
        log.info("checkpoint asked for (request %d)", request)

    def _exactly_once_step(self, eo: ExactlyOnceCoordinator, now: float) -> None:
        if now < self._next_poll:
            return
        self._next_poll = now + self._poll
        state = self._state
        assert state is not None
        try:
            reports = {
                i: Report.from_saved(new_state(ns, self._conf, self._context).get(REPORT_KEY))
                for i, ns in enumerate(self._controls)
            }
        except Exception as exc:
            log.warning("checkpoint coordinator cannot read the spouts' reports: %s", exc)
            return
        if self.ask.due() and eo.current.phase == EO_COMMITTED:
            eo.last_checkpoint = float("-inf")  # asked for: the next decision prepares one
        decision = eo.decide(reports, now)
        if decision is None:
            return
        try:
            state.put(TX_STATE_KEY, decision.to_list())
            state.commit()
        except Exception as exc:
            log.warning("checkpoint coordinator cannot save %s: %s", decision, exc)
            eo.publish_failed(now)
            return
        log.debug("checkpoint decision: %s", decision)
        before = eo.current.phase
        eo.published(decision, now)
        if decision.phase == EO_PREPARING:
            self.ask.begun()
        elif decision.phase == EO_COMMITTED and before == EO_PREPARING:
            self.ask.committed()
        elif decision.phase == EO_RESTARTING:
            self.ask.abandoned()

    def next_tuple(self) -> None:
        if self.eo is not None:
            assert self._clock is not None
            self._exactly_once_step(self.eo, self._clock.now())
            return
        core, clock, collector = self.core, self._clock, self._collector
        assert core is not None and clock is not None and collector is not None
        now = clock.now()
        if self.ask.due() and not core.in_progress:
            core.last_checkpoint = float("-inf")  # asked for: the next step from COMMITTED prepares one
        emit, to_save = core.next_emit(now)
        if emit is None:
            return
        if to_save is not None and not self._save(to_save, now):
            return
        core.emitted(emit, to_save, now)
        if to_save is not None and to_save.state == PREPARING:
            self.ask.begun()
        log.debug("checkpoint: txid %d %s", emit.txid, emit.action)
        collector.emit([emit.txid, emit.action], msg_id=emit.txid, stream=CHECKPOINT_STREAM_ID)

    def ack(self, msg_id: Any) -> None:
        core, clock = self.core, self._clock
        assert core is not None and clock is not None
        nxt = core.acked(int(msg_id))
        if nxt is not None and self._save(nxt, clock.now()):
            core.advanced(nxt, clock.now())
            if nxt.state == COMMITTED:
                self.ask.committed()

    def fail(self, msg_id: Any) -> None:
        core, clock = self.core, self._clock
        assert core is not None and clock is not None
        log.warning("checkpoint txid %s failed: recovering from %s", msg_id, core.current)
        core.failed(clock.now())
        self.ask.abandoned()

    def _save(self, tx: TxState, now: float) -> bool:
        """Save ``tx`` in the spout's state; a backend that fails makes the step fail (and be retried)."""
        state, core = self._state, self.core
        assert state is not None and core is not None
        try:
            state.put(TX_STATE_KEY, tx.to_list())
            state.commit()
        except Exception as exc:
            log.warning("checkpoint spout cannot save %s: %s", tx, exc)
            core.failed(now)
            self.ask.abandoned()
            return False
        return True

    def checkpoint_gauges(self) -> dict[str, float]:
        """For the worker's heartbeat: the last committed checkpoint's txid, once one committed since this task
        started, when (wall-clock seconds), and the last request (a rescale's) whose checkpoint committed."""
        clock = self._clock
        if clock is None:
            return {}
        if self.eo is not None:
            txid, committed_at = self.eo.current.committed, self.eo.committed_at
        elif self.core is not None:
            cur = self.core.current
            txid = cur.txid if cur.state == COMMITTED else cur.txid - 1
            committed_at = self.core.committed_at
        else:
            return {}
        gauges = {GAUGE_TXID: float(txid)}
        if committed_at is not None:
            gauges[GAUGE_COMMITTED_AT] = clock.wall_at(committed_at)
        if self.ask.served is not None:
            gauges[SERVED_GAUGE] = float(self.ask.served)
        return gauges

    def is_exhausted(self) -> bool:
        """Never holds up ``complete_topology``: it runs while the user's spouts have tuples in flight."""
        return True

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare_stream(CHECKPOINT_STREAM_ID, list(CHECKPOINT_FIELDS))
