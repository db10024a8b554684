"""This module owns :class:`ManagedBolt`, what the wiring puts in place of every bolt of a topology with managed
state: at ``prepare`` it becomes the executor of the topology's guarantee (Storm's stateful executor or
checkpoint forwarder under at_least_once, the aligned executor under exactly_once), so one built topology runs
under either."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from storm_py.api.components import BasicBolt, Bolt, OutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.runtime.contracts import own_configuration
from storm_py.stateful.at_least_once.bolt_wrappers import CheckpointTupleForwarder, StatefulBoltExecutor
from storm_py.stateful.at_least_once.checkpoint import CHECKPOINT_FIELDS, CHECKPOINT_STREAM_ID
from storm_py.stateful.exactly_once.aligned_bolt import AlignedBoltExecutor
from storm_py.stateful.exactly_once.coordinator import BARRIER_FIELDS, BARRIER_STREAM_ID

EXACTLY_ONCE = "exactly_once"


class ManagedBolt(Bolt):
    """A user bolt with the streams of both guarantees; its executor is chosen by ``topology.state.guarantee``."""

    @property
    def wrapped_component(self) -> Any:
        """The user's component this runs (what the runtime hands to it, e.g. credentials, goes there)."""
        return self.bolt

    def replace_wrapped(self, component: Any) -> None:
        """Run ``component`` in place of the user's bolt (its async driver); before ``prepare`` only."""
        self.bolt = component

    def __init__(self, bolt: Any, stateful: bool, checkpoint_sources: Sequence[str],
                 barrier_sources: Sequence[str], sink: bool = False) -> None:
        self.bolt = bolt
        self.stateful = stateful
        #: a :class:`~storm_py.stateful.api.sink.CheckpointedSink`: stateful under exactly_once only
        self.sink = sink
        self.checkpoint_sources = tuple(checkpoint_sources)
        self.barrier_sources = tuple(barrier_sources)
        self.delegate: AlignedBoltExecutor | StatefulBoltExecutor | CheckpointTupleForwarder | None = None
        #: once prepared, the basic bolt the runtime runs instead of this one (a basic bolt's wrapper: see
        #: :class:`~storm_py.stateful.at_least_once.bolt_wrappers.BasicCheckpointForwarder` under at_least_once and
        #: :class:`~storm_py.stateful.exactly_once.aligned_bolt.AlignedBasicBolt` under exactly_once), else None
        #: (:class:`~storm_py.runtime.contracts.RunsAsBasic`)
        self.basic_bolt: BasicBolt | None = None

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        # each executor's data path (compiled where it has one) becomes this bolt's ``execute``
        if conf.get("topology.state.guarantee") == EXACTLY_ONCE:
            aligned = self.delegate = AlignedBoltExecutor(self.bolt, self.barrier_sources, self.stateful or self.sink)
            aligned.prepare(conf, context, collector)
            self.basic_bolt = aligned.basic_bolt
            self.execute = aligned.path.execute  # type: ignore[method-assign]
        elif self.stateful:
            stateful = self.delegate = StatefulBoltExecutor(self.bolt, self.checkpoint_sources)
            stateful.prepare(conf, context, collector)
            self.execute = stateful.path.execute  # type: ignore[method-assign]
        else:
            forwarder = self.delegate = CheckpointTupleForwarder(self.bolt, self.checkpoint_sources)
            forwarder.prepare(conf, context, collector)
            self.basic_bolt = forwarder.basic_bolt
            self.execute = forwarder.execute  # type: ignore[method-assign]

    def execute(self, tup: Tuple) -> None:
        if self.delegate is None:
            raise RuntimeError(f"{type(self.bolt).__name__} was not prepared: execute came before prepare")
        self.delegate.execute(tup)

    def cleanup(self) -> None:
        if self.delegate is not None:
            self.delegate.cleanup()

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.bolt.declare_output_fields(declarer)
        declarer.declare_stream(CHECKPOINT_STREAM_ID, list(CHECKPOINT_FIELDS))
        declarer.declare_stream(BARRIER_STREAM_ID, list(BARRIER_FIELDS))

    def get_component_configuration(self) -> dict[str, Any] | None:
        return own_configuration(self.bolt)
