"""This module owns the wrapper of a :class:`~storm_py.stateful.api.spout.StatefulSpout`: it gives the spout
its managed state and, every poll, reads the checkpoint spout's state and acts on it.

- at_least_once (Storm's protocol, the spout's position checkpointed beside the bolts' states): on
  ``PREPARING(n)`` the spout's state is prepared as ``n``, on ``COMMITTED(n)`` committed; a state that went back
  (the checkpoint was rolled back) is rolled back and handed to ``init_state`` again.  Replays come from ``fail``.
- exactly_once: the steps of :class:`~storm_py.stateful.exactly_once.coordinator.SpoutView` (commit, restart with a
  marker, prepare with a barrier); data is emitted untracked (no tuple trees: the checkpoint decides what is replayed),
  barriers and markers as tracked tuples on ``$barrier`` whose trees tell the spout they went through; their fate is
  reported in the control state ``<component>-<task>$control``.

While its topology is held for a checkpoint (nimbus asked for one before rescaling the tasks) the spout's own
``next_tuple`` is not called and it is deactivated, while the executor goes on following the checkpoints.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from storm_py.api.components import OutputFieldsDeclarer, Spout, SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import DEFAULT_STREAM
from storm_py.clock import Clock
from storm_py.config.keys import setting
from storm_py.runtime.spout_executor import SpoutCollector
from storm_py.stateful.api.spout import StatefulSpout
from storm_py.stateful.at_least_once import checkpoint as storm
from storm_py.stateful.at_least_once.checkpoint import CHECKPOINT_COMPONENT_ID, MIN_INTERVAL_MS
from storm_py.stateful.exactly_once.coordinator import (
    BARRIER,
    BARRIER_FIELDS,
    BARRIER_STREAM_ID,
    RESTART,
    Published,
    Report,
    SpoutView,
)
from storm_py.stateful.exactly_once.spout_path import PollGate, UntrackedSpoutCollector
from storm_py.stateful.state.key_value import KeyValueState
from storm_py.stateful.state.providers import new_state, state_namespace
from storm_py.stateful.state.task_names import Rescales, namespace

log = logging.getLogger(__name__)

#: the key of a spout task's report in its control state, and of the coordinator's state in its own
REPORT_KEY = "report"
TX_STATE_KEY = "__state"
EXACTLY_ONCE = "exactly_once"


def poll_secs(conf: dict[str, Any]) -> float:
    """How often spouts and the coordinator look at each other's state: a tenth of the checkpoint interval."""
    return max(MIN_INTERVAL_MS, int(setting(conf, "topology.state.checkpoint.interval.ms"))) / 10000.0


def control_namespace(component: str, task: int) -> str:
    """Where a spout task reports to the coordinator."""
    return f"{component}-{task}$control"


class UntrackedCollector:
    """The collector a spout sees under exactly_once over any collector but a task's own (which gets the compiled
    :class:`~storm_py.stateful.exactly_once.spout_path.UntrackedSpoutCollector`): its emits carry no message id
    (no tuple tree)."""

    def __init__(self, delegate: SpoutOutputCollector) -> None:
        self._delegate = delegate
        #: the runtime collector's own ``emit``, for a spout whose emits never carry a message id (one Python
        #: call less per tuple than :meth:`emit`)
        self.emit_untracked = delegate.emit

    def emit(self, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> list[int]:
        return self._delegate.emit(values, None, stream)

    def emit_batch(self, batch: Sequence[Sequence[Any]], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> int:
        return self._delegate.emit_batch(batch, None, stream)

    def emit_direct(self, task_id: int, values: Sequence[Any], msg_id: Any = None,
                    stream: str = DEFAULT_STREAM) -> None:
        self._delegate.emit_direct(task_id, values, None, stream)

    def get_pending_count(self) -> int:
        return self._delegate.get_pending_count()

    def report_error(self, exc: BaseException) -> None:
        self._delegate.report_error(exc)


class StatefulSpoutExecutor(Spout):
    """Wraps a :class:`StatefulSpout` in a topology with managed state (see the module's description)."""

    @property
    def wrapped_component(self) -> Any:
        """The user's component this runs (what the runtime hands to it, e.g. credentials, goes there)."""
        return self.spout

    def __init__(self, spout: StatefulSpout) -> None:
        self.spout = spout
        self.exactly_once = False
        self.state: KeyValueState | None = None
        self.view = SpoutView()
        self.report = Report()
        self.started = False
        self._prepared = -1  # at_least_once: the txid the spout's state is prepared as
        self._unsaved = False  # a report waits to be saved
        self._gate: PollGate | None = None
        self._active = False  # activated by the runtime (the spout itself is not while held)
        self._held: int | None = None  # the checkpoint request the topology is held for

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self._conf = conf
        self._context = context
        self._clock: Clock = context.clock
        self._collector = collector
        self._poll = poll_secs(conf)
        self.exactly_once = conf.get("topology.state.guarantee") == EXACTLY_ONCE
        self.state = new_state(state_namespace(context), conf, context)
        self._control = new_state(control_namespace(context.this_component_id, context.this_task_id), conf, context)
        self._coordinator_ns = namespace(Rescales.of(conf), CHECKPOINT_COMPONENT_ID, 0,
                                         context.get_component_tasks(CHECKPOINT_COMPONENT_ID)[0])
        # the compiled gate stands for next_tuple: a call between polls goes straight to the spout's own
        self._gate = PollGate(self._clock.now, self._poll_now)
        self.next_tuple = self._gate.next_tuple  # type: ignore[method-assign]
        spout_collector: SpoutOutputCollector = collector
        if self.exactly_once:
            spout_collector = (UntrackedSpoutCollector(collector) if type(collector) is SpoutCollector
                               else UntrackedCollector(collector))
        self.spout.open(conf, context, spout_collector)
        if not self.exactly_once:
            self.spout.init_state(self.state)
            self._start()

    def _decision(self) -> Any:
        return new_state(self._coordinator_ns, self._conf, self._context).get(TX_STATE_KEY)

    def _start(self) -> None:
        """The spout has its state: its ``next_tuple`` is called from now on."""
        self.started = True
        if self._gate is not None and self._held is None:
            self._gate.spout_next_tuple = self.spout.next_tuple

    def next_tuple(self) -> None:  # once open, the gate's (see open)
        gate = self._gate
        assert gate is not None, "next_tuple before open"
        gate.next_tuple()

    def _poll_now(self, now: float) -> bool:
        """Follow the checkpoint spout's decision (called by the gate every poll interval); whether the spout is
        called now (not while the backend is away)."""
        gate = self._gate
        assert gate is not None
        gate.next_poll = now + self._poll
        if self._unsaved:
            self._save_report()
        try:
            saved = self._decision()
            if saved is not None:
                if self.exactly_once:
                    self._exactly_once_step(Published.from_saved(saved))
                else:
                    self._at_least_once_step(storm.TxState.from_saved(saved))
        except Exception as exc:  # a backend away: try again at the next poll
            log.warning("spout %s task %d cannot follow the checkpoints: %s", self._context.this_component_id,
                        self._context.this_task_id, exc)
            return False
        return True

    # ----------------------------------------------------------------------------------------- at_least_once

    def _at_least_once_step(self, tx: storm.TxState) -> None:
        state = self.state
        assert state is not None
        if tx.state == storm.PREPARING and tx.txid > self._prepared:
            self.spout.pre_prepare(tx.txid)
            state.prepare_commit(tx.txid)
            self._prepared = tx.txid
        elif tx.state in (storm.COMMITTING, storm.COMMITTED) and tx.txid == self._prepared > state.committed_txid():
            self.spout.pre_commit(tx.txid)
            state.commit(tx.txid)
        elif tx.state == storm.COMMITTED and tx.txid < self._prepared:  # the checkpoint was rolled back
            self.spout.pre_rollback()
            state.rollback()
            self._prepared = tx.txid
            self.spout.init_state(state)

    # ------------------------------------------------------------------------------------------ exactly_once

    def _exactly_once_step(self, decision: Published) -> None:
        state = self.state
        assert state is not None
        step = self.view.step(decision)
        if step.request_restart:
            log.info("spout %s task %d joins outside a restart: asking for one", self._context.this_component_id,
                     self._context.this_task_id)
            self._report(failed=decision.generation)
            return
        if step.commit is not None:
            self.spout.pre_commit(step.commit)
            state.commit(step.commit)
        if step.restart:
            prepared = state.prepared_txid()  # durable: a task that started after it was decided commits it
            if prepared is not None and decision.restore >= prepared > state.committed_txid():
                self.spout.pre_commit(prepared)
                state.commit(prepared)
            self.spout.pre_rollback()
            state.rollback()
            self.spout.init_state(state)
            self._start()
            self._send(decision.restore, RESTART, decision.generation, decision.committed)
        if step.prepare is not None:
            self.spout.pre_prepare(step.prepare)
            state.prepare_commit(step.prepare)
            self._send(step.prepare, BARRIER, decision.generation, decision.committed)

    def _send(self, txid: int, action: str, generation: int, committed: int) -> None:
        self._collector.emit([txid, action, generation, committed], msg_id=(action, generation, txid),
                             stream=BARRIER_STREAM_ID)

    def _report(self, prepared: int | None = None, restarted: int | None = None, failed: int | None = None) -> None:
        r = self.report
        self.report = Report(r.prepared if prepared is None else max(r.prepared, prepared),
                             r.restarted if restarted is None else max(r.restarted, restarted),
                             r.failed if failed is None else max(r.failed, failed))
        self._unsaved = True
        self._save_report()

    def _save_report(self) -> None:
        """Save the report; one that cannot be saved now (the backend is away) is saved at a later poll."""
        try:
            self._control.put(REPORT_KEY, self.report.to_dict())
            self._control.commit()
        except Exception as exc:
            log.warning("spout %s task %d cannot save its report %s: %s", self._context.this_component_id,
                        self._context.this_task_id, self.report, exc)
            return
        self._unsaved = False

    def ack(self, msg_id: Any) -> None:
        if self.exactly_once:
            if isinstance(msg_id, (list, tuple)) and len(msg_id) == 3:
                action, generation, txid = msg_id
                if action == RESTART:
                    self._report(restarted=generation)
                elif action == BARRIER and generation == self.view.generation:
                    self._report(prepared=txid)
        else:
            self.spout.ack(msg_id)

    def fail(self, msg_id: Any) -> None:
        if self.exactly_once:
            if isinstance(msg_id, (list, tuple)) and len(msg_id) == 3:
                log.warning("spout %s task %d: %s of generation %s txid %s failed", self._context.this_component_id,
                            self._context.this_task_id, *msg_id)
                self._report(failed=msg_id[1])
        else:
            self.spout.fail(msg_id)

    def activate(self) -> None:
        self._active = True
        if self._held is None:
            self.spout.activate()

    def deactivate(self) -> None:
        self._active = False
        if self._held is None:
            self.spout.deactivate()

    def hold_for_checkpoint(self, request: int | None) -> None:
        """Held (``request``: a checkpoint request's id): the spout emits nothing, the checkpoints go on;
        released (``None``): the spout runs again."""
        if (request is None) == (self._held is None):
            self._held = request
            return
        self._held = request
        gate = self._gate
        if request is not None:
            if gate is not None:
                gate.spout_next_tuple = None
            if self._active:
                self.spout.deactivate()
            return
        if gate is not None and self.started:
            gate.spout_next_tuple = self.spout.next_tuple
        if self._active:
            self.spout.activate()

    def close(self) -> None:
        self.spout.close()

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.spout.declare_output_fields(declarer)
        declarer.declare_stream(BARRIER_STREAM_ID, list(BARRIER_FIELDS))

    def get_component_configuration(self) -> dict[str, Any] | None:
        return self.spout.get_component_configuration()
