"""This module owns :class:`ManagedBolt`, what the wiring puts in place of every bolt of a topology with managed
state: it declares the streams of both guarantees, and the system-topology rewrite puts in its place the bolt
``topology.state.guarantee`` chooses (:meth:`ManagedBolt.resolve_bolt`: Storm's stateful executor or checkpoint
forwarder under at_least_once, the aligned executor under exactly_once), so one built topology runs under
either."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from storm_py.api.components import Bolt, OutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.runtime.contracts import own_configuration
from storm_py.stateful.at_least_once.bolt_wrappers import CheckpointTupleForwarder, StatefulBoltExecutor
from storm_py.stateful.at_least_once.checkpoint import CHECKPOINT_FIELDS, CHECKPOINT_STREAM_ID
from storm_py.stateful.exactly_once.aligned_bolt import AlignedBoltExecutor
from storm_py.stateful.exactly_once.coordinator import BARRIER_FIELDS, BARRIER_STREAM_ID

EXACTLY_ONCE = "exactly_once"


class ManagedBolt(Bolt):
    """A user bolt with the streams of both guarantees; what runs it is chosen by ``topology.state.guarantee``
    (:class:`~storm_py.runtime.contracts.ResolvesToBolt`).  It is never prepared itself."""

    @property
    def wrapped_component(self) -> Any:
        """The user's component this stands for."""
        return self.bolt

    def __init__(self, bolt: Any, stateful: bool, checkpoint_sources: Sequence[str],
                 barrier_sources: Sequence[str], sink: bool = False) -> None:
        self.bolt = bolt
        self.stateful = stateful
        #: a :class:`~storm_py.stateful.api.sink.CheckpointedSink`: stateful under exactly_once only
        self.sink = sink
        self.checkpoint_sources = tuple(checkpoint_sources)
        self.barrier_sources = tuple(barrier_sources)

    def resolve_bolt(
        self, conf: dict[str, Any]
    ) -> AlignedBoltExecutor | StatefulBoltExecutor | CheckpointTupleForwarder:
        """The bolt that runs the user's under ``conf``'s guarantee, unprepared (each task gets a copy)."""
        if conf.get("topology.state.guarantee") == EXACTLY_ONCE:
            return AlignedBoltExecutor(self.bolt, self.barrier_sources, self.stateful or self.sink)
        if self.stateful:
            return StatefulBoltExecutor(self.bolt, self.checkpoint_sources)
        return CheckpointTupleForwarder(self.bolt, self.checkpoint_sources)

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        raise self._not_run()

    def execute(self, tup: Tuple) -> None:
        raise self._not_run()

    def _not_run(self) -> TypeError:
        return TypeError(f"the managed bolt of {type(self.bolt).__name__} is not run itself: the system topology "
                         "runs what resolve_bolt(conf) chooses in its place")

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.bolt.declare_output_fields(declarer)
        declarer.declare_stream(CHECKPOINT_STREAM_ID, list(CHECKPOINT_FIELDS))
        declarer.declare_stream(BARRIER_STREAM_ID, list(BARRIER_FIELDS))

    def get_component_configuration(self) -> dict[str, Any] | None:
        return own_configuration(self.bolt)
