"""This module owns the bolts that wrap every user bolt of a topology with a stateful bolt (Storm's
``CheckpointTupleForwarder`` and ``StatefulBoltExecutor``) and the barrier core both share.

A wrapped bolt never sees checkpoint tuples.  A checkpoint ``(action, txid)`` is handled once it has arrived from
every task feeding the bolt's ``$checkpoint`` inputs (the ones before are acked at once; they belong to the same
tuple tree); it is then passed on downstream anchored to the last one, which is acked.  A forwarder only passes it
on; a stateful bolt prepares, commits or rolls back its state first, and holds the acks of its inputs until the
checkpoint that covers them commits (a rollback fails them, so their spouts replay them).

:class:`CheckpointHandler` is the shared base: a windowed or otherwise specialised executor subclasses it and
implements ``handle_tuple`` and ``handle_checkpoint``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Final

from storm_py.api.components import (
    BasicBolt,
    BasicOutputCollector,
    Bolt,
    OutputCollector,
    OutputFieldsDeclarer,
)
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.errors import FailedException, ReportedFailedException
from storm_py.runtime.bolt_collectors import HeldAcks, HoldingCollector
from storm_py.runtime.contracts import Drains, own_configuration
from storm_py.stateful.anchored_collector import AnchoredCollector
from storm_py.stateful.api.bolt import BaseStatefulBolt
from storm_py.stateful.at_least_once.checkpoint import (
    CHECKPOINT_FIELDS,
    CHECKPOINT_STREAM_ID,
    COMMIT,
    INITSTATE,
    PREPARE,
    ROLLBACK,
)
from storm_py.stateful.at_least_once.tuple_path import AckTrackingCollector, DataPath, tracking_collector
from storm_py.stateful.state.key_group_move import KeyGroupMove
from storm_py.stateful.state.key_value import KeyValueState
from storm_py.stateful.state.providers import new_state, state_namespace

__all__ = ["AckTrackingCollector", "BasicCheckpointForwarder", "CheckpointBarrier", "CheckpointHandler",
           "CheckpointTupleForwarder", "StatefulBoltExecutor"]

log = logging.getLogger(__name__)

# what the barrier says of an arriving checkpoint tuple
WAIT: Final = "wait"  # more inputs must deliver it: ack this one
STALE: Final = "stale"  # an older transaction than the last handled: ack it, do nothing
HANDLE: Final = "handle"  # every input delivered it: handle it now


class CheckpointBarrier:
    """Counts each ``(action, txid)`` over the input tasks and says when to handle it (Storm's rule)."""

    def __init__(self, input_tasks: int) -> None:
        self.input_tasks = input_tasks
        self.counts: dict[tuple[str, int], int] = {}
        self.last_txid: float = float("-inf")

    def arrive(self, action: str, txid: int) -> str:
        """One input task delivered ``(action, txid)``."""
        key = (action, txid)
        count = self.counts.get(key, 0) + 1
        if count < self.input_tasks:
            self.counts[key] = count
            return WAIT
        self.counts.pop(key, None)
        return HANDLE if txid >= self.last_txid else STALE

    def handled(self, action: str, txid: int) -> None:
        """``(action, txid)`` was handled: older transactions are stale from now on."""
        self.last_txid = txid - 1 if action == ROLLBACK else txid


class CheckpointHandler(Bolt):
    """Splits the input into checkpoint tuples (through the barrier) and the wrapped bolt's tuples."""

    def __init__(self, bolt: Any, checkpoint_sources: Sequence[str]) -> None:
        self.bolt = bolt
        self.checkpoint_sources = tuple(checkpoint_sources)
        self.collector: OutputCollector | None = None
        self.barrier = CheckpointBarrier(0)

    @property
    def wrapped_component(self) -> Any:
        """The user's bolt this runs (what the runtime hands to it, e.g. credentials, goes there)."""
        return self.bolt

    def replace_wrapped(self, component: Any) -> None:
        """Run ``component`` in place of the user's bolt (its async driver); before ``prepare`` only."""
        self.bolt = component

    def init_checkpoints(self, context: TopologyContext, collector: OutputCollector) -> None:
        """Count the tasks that send this bolt checkpoint tuples; keep the collector."""
        self.collector = collector
        self.barrier = CheckpointBarrier(sum(len(context.get_component_tasks(c)) for c in self.checkpoint_sources))

    def execute(self, tup: Tuple) -> None:
        if tup.source_stream == CHECKPOINT_STREAM_ID:
            self.process_checkpoint(tup)
        else:
            self.handle_tuple(tup)

    def process_checkpoint(self, tup: Tuple) -> None:
        """Pass a checkpoint tuple through the barrier and handle it when every input delivered it."""
        collector = self.collector
        assert collector is not None
        txid, action = int(tup.values[0]), str(tup.values[1])
        decision = self.barrier.arrive(action, txid)
        if decision != HANDLE:
            collector.ack(tup)
            return
        try:
            self.handle_checkpoint(tup, action, txid)
        except Exception as exc:
            log.error("%s failed to handle checkpoint %s of txid %d: %s", type(self.bolt).__name__, action, txid, exc)
            collector.fail(tup)
            collector.report_error(exc)
            return
        self.barrier.handled(action, txid)

    def forward(self, tup: Tuple, action: str, txid: int) -> None:
        """Send the checkpoint on downstream, anchored to ``tup``, and ack ``tup``."""
        collector = self.collector
        assert collector is not None
        collector.emit([txid, action], anchors=tup, stream=CHECKPOINT_STREAM_ID)
        collector.ack(tup)

    def handle_tuple(self, tup: Tuple) -> None:
        """A tuple of the wrapped bolt's own inputs."""
        raise NotImplementedError

    def handle_checkpoint(self, tup: Tuple, action: str, txid: int) -> None:
        """A checkpoint every input delivered."""
        raise NotImplementedError

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.bolt.declare_output_fields(declarer)
        declarer.declare_stream(CHECKPOINT_STREAM_ID, list(CHECKPOINT_FIELDS))

    def get_component_configuration(self) -> dict[str, Any] | None:
        return own_configuration(self.bolt)

    def cleanup(self) -> None:
        self.bolt.cleanup()


class BasicCheckpointForwarder(BasicBolt):
    """A :class:`BasicBolt` in a topology that checkpoints, run by the runtime as a basic bolt: its emits (the
    checkpoint passed on included) are anchored to the input and the input acked or failed for it, so the
    wrapped bolt keeps the runtime's basic path and only a checkpoint tuple costs more than its own execute."""

    def __init__(self, bolt: BasicBolt, checkpoint_sources: Sequence[str]) -> None:
        self.bolt = bolt
        self.checkpoint_sources = tuple(checkpoint_sources)
        self.barrier = CheckpointBarrier(0)

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self.barrier = CheckpointBarrier(sum(len(context.get_component_tasks(c)) for c in self.checkpoint_sources))
        self.bolt.prepare(conf, context)

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        if tup.source_stream != CHECKPOINT_STREAM_ID:
            self.bolt.execute(tup, collector)
            return
        txid, action = int(tup.values[0]), str(tup.values[1])
        if self.barrier.arrive(action, txid) == HANDLE:  # else acked and done with, as the others
            collector.emit([txid, action], CHECKPOINT_STREAM_ID)
            self.barrier.handled(action, txid)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.bolt.declare_output_fields(declarer)
        declarer.declare_stream(CHECKPOINT_STREAM_ID, list(CHECKPOINT_FIELDS))

    def cleanup(self) -> None:
        self.bolt.cleanup()


class CheckpointTupleForwarder(CheckpointHandler):
    """Wraps a bolt without state (rich or basic) in a topology that checkpoints: it only passes checkpoints on.

    A basic bolt's forwarder is a :class:`BasicCheckpointForwarder`, exposed as ``basic_bolt`` once prepared:
    the runtime runs that one instead (its compiled basic path); ``execute`` runs it with an anchoring collector.
    """

    def __init__(self, bolt: Any, checkpoint_sources: Sequence[str]) -> None:
        super().__init__(bolt, checkpoint_sources)
        self._basic: AnchoredCollector | None = None
        self.basic_bolt: BasicCheckpointForwarder | None = None

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.init_checkpoints(context, collector)
        if isinstance(self.bolt, BasicBolt):
            self._basic = AnchoredCollector(collector)
            self.basic_bolt = BasicCheckpointForwarder(self.bolt, self.checkpoint_sources)
            self.basic_bolt.prepare(conf, context)
        else:
            self.bolt.prepare(conf, context, collector)

    def execute(self, tup: Tuple) -> None:  # CheckpointHandler.execute, inlined: it runs for every tuple
        if self.basic_bolt is not None:
            self.handle_tuple(tup)
        elif tup.source_stream == CHECKPOINT_STREAM_ID:
            self.process_checkpoint(tup)
        else:
            self.bolt.execute(tup)

    def handle_tuple(self, tup: Tuple) -> None:
        basic, forwarder, collector = self._basic, self.basic_bolt, self.collector
        if forwarder is None:
            self.bolt.execute(tup)
            return
        assert basic is not None and collector is not None  # set with the forwarder
        basic.input = tup
        try:
            forwarder.execute(tup, basic)
        except ReportedFailedException as exc:
            collector.report_error(exc)
            collector.fail(tup)
            return
        except FailedException:
            collector.fail(tup)
            return
        finally:
            basic.input = None
        collector.ack(tup)

    def handle_checkpoint(self, tup: Tuple, action: str, txid: int) -> None:
        self.forward(tup, action, txid)


class StatefulBoltExecutor(CheckpointHandler):
    """Wraps a :class:`BaseStatefulBolt`: gives it its state and runs Storm's actions on it.

    - ``PREPARE(n)``: a bolt with executions in flight (an async bolt) drains them, ``pre_prepare(n)``, the state
      is prepared, the inputs acked so far become *prepared*; a bolt whose state is not initialised yet (restarted
      in between) fails the checkpoint, which starts recovery.
    - ``COMMIT(n)``: ``pre_commit(n)``, the state is committed, the prepared inputs are acked upstream.
    - ``ROLLBACK``: executions in flight are cancelled and their inputs failed, ``pre_rollback()``, the state is
      rolled back, prepared and acked inputs are failed.
    - ``INITSTATE``: ``init_state(state)``; the first one also runs the inputs that arrived before it.
    """

    #: the compiled data path every input runs through, and the acks held at the last ``PREPARE``: made at
    #: ``prepare``, since this bolt is copied for each task before (and compiled objects are not copied)
    path: DataPath
    prepared: HeldAcks

    def __init__(self, bolt: BaseStatefulBolt, checkpoint_sources: Sequence[str]) -> None:
        super().__init__(bolt, checkpoint_sources)
        self.bolt: BaseStatefulBolt = bolt
        self.state: KeyValueState | None = None
        self.tracking: HoldingCollector | AckTrackingCollector | None = None
        #: the move of this task's key groups after a rescale, done before the first checkpoint action it handles
        self.move: KeyGroupMove | None = None

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.prepare_with_state(conf, context, collector, new_state(state_namespace(context), conf, context))

    def prepare_with_state(
        self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector, state: KeyValueState
    ) -> None:
        """``prepare`` with a given state (what unit tests call)."""
        self.init_checkpoints(context, collector)
        self.prepared = HeldAcks()
        self.path = DataPath(self.bolt.execute, self.process_checkpoint)
        self.tracking = tracking_collector(collector, context.this_component_id)
        self.move = KeyGroupMove.of_task(conf, context)
        self.bolt.prepare(conf, context, self.tracking)
        self.state = state
        self.path.bolt_execute = self.bolt.execute  # bound once prepared (a bolt may set its own)

    @property
    def initialized(self) -> bool:
        """Whether the state was handed to the bolt (inputs before are kept until then)."""
        return self.path.initialized

    @property
    def execute(self) -> Callable[[Tuple], None]:
        """CheckpointHandler's ``execute`` as the compiled data path's, once prepared: the executor runs every input
        straight through it."""
        return self.path.execute

    def handle_tuple(self, tup: Tuple) -> None:
        self.path.execute(tup)

    def handle_checkpoint(self, tup: Tuple, action: str, txid: int) -> None:
        state, tracking, collector = self.state, self.tracking, self.collector
        assert state is not None and tracking is not None and collector is not None
        move = self.move
        if move is not None and action != PREPARE:  # a PREPARE before INITSTATE fails, and recovery follows
            move.settle(state, txid - 1 if action == ROLLBACK else txid)
            self.move = None
        if action == PREPARE:
            if not self.path.initialized:
                log.info("%s: PREPARE %d before the state is initialised: failing it to recover", tracking.component_id,
                         txid)
                collector.fail(tup)
                return
            if isinstance(self.bolt, Drains):  # the state takes exactly the inputs before the checkpoint
                self.bolt.drain()
            self.bolt.pre_prepare(txid)
            state.prepare_commit(txid)
            self.prepared.merge(tracking.take_held())
        elif action == COMMIT:
            self.bolt.pre_commit(txid)
            state.commit(txid)
            prepared, self.prepared = self.prepared, HeldAcks()
            tracking.release(prepared)
        elif action == ROLLBACK:
            if isinstance(self.bolt, Drains):  # their spouts replay them
                for t in self.bolt.cancel_in_flight():
                    collector.fail(t)
            self.bolt.pre_rollback()
            state.rollback()
            failed, self.prepared = self.prepared, HeldAcks()
            failed.merge(tracking.take_held())
            tracking.fail_held(failed)
        elif action == INITSTATE:
            self.bolt.init_state(state)
            if not self.path.initialized:
                self.path.initialized = True
                for t in self.path.take_pending():
                    try:
                        self.bolt.execute(t)
                    except Exception as exc:  # as the bolt executor does with a tuple that raises
                        log.error("%s raised on %r: %s", tracking.component_id, t, exc)
                        collector.report_error(exc)
                        collector.fail(t)
        self.forward(tup, action, txid)
