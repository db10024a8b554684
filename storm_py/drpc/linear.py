"""This module owns :class:`LinearDRPCTopologyBuilder`: Storm's builder of a DRPC function as a chain of bolts.

The generated topology (component ids as Storm's)::

    spout (DRPCSpout) -> prepare-request (PrepareRequest) -> bolt0 -> bolt1 -> ... -> boltN (JoinResult)
                                                                              -> boltN+1 (ReturnResults)

Each request is a batch keyed by its request id (a random 64-bit int, the first value of every tuple): every
step runs inside :class:`~storm_py.transactional.coordinated.CoordinatedBolt`, whose counting protocol tells a
task it has seen every tuple of a request; a :class:`~storm_py.transactional.BaseBatchBolt` step gets one
instance per request (its ``id`` is the request id) and its ``finish_batch`` runs then.  The first step sees
the single ``[request, args]`` tuple; step 1 waits for one report from step 0 (only the task that ran the
request reports), later steps for every task of the step before.  A last step that is a batch bolt also waits
for the request's ``id`` tuple, fields-grouped on the request: only the task of that id finishes the request, so
such a step on several tasks must be fields-grouped on the request id alone (the builder refuses it otherwise;
Storm's gives a wrong answer silently).

The last step declares exactly one stream of two fields, ``[request id, result]``; ``JoinResult`` pairs its
tuple with the request's return-info and ``ReturnResults`` answers the client with ``str(result)``.  A failed
or timed-out tuple tree fails the request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from storm_py.api.components import BasicBolt, OutputFieldsDeclarer
from storm_py.api.topology import BoltDeclarer, StormTopology, TopologyBuilder
from storm_py.api.tuple import DEFAULT_STREAM, Fields
from storm_py.drpc.bolts import ID_STREAM, RETURN_STREAM, JoinResult, PrepareRequest, ReturnResults
from storm_py.drpc.local import LocalDRPC
from storm_py.drpc.service import check_function
from storm_py.drpc.spout import DRPCSpout
from storm_py.errors import InvalidTopologyException
from storm_py.transactional.batch import BasicBoltExecutor, BatchBoltExecutor, is_batch_bolt
from storm_py.transactional.coordinated import CoordinatedBolt
from storm_py.transactional.streams import COORD_STREAM

SPOUT_ID = "spout"
PREPARE_ID = "prepare-request"


def bolt_id(index: int) -> str:
    """The component id of step ``index`` (Storm's ``bolt<i>``)."""
    return f"bolt{index}"


@dataclass
class _Input:
    kind: str
    stream: str
    fields: Fields | Sequence[str] | None = None


@dataclass
class _Step:
    bolt: Any
    parallelism: int
    inputs: list[_Input] = field(default_factory=list)
    conf: dict[str, Any] = field(default_factory=dict)
    num_tasks: int | None = None


class LinearDRPCInputDeclarer:
    """Storm's linear declarer: groupings from the previous step (no component id), chainable."""

    def __init__(self, step: _Step) -> None:
        self._step = step

    def _add(self, kind: str, stream: str, fields: Fields | Sequence[str] | None = None) -> LinearDRPCInputDeclarer:
        self._step.inputs.append(_Input(kind, stream, fields))
        return self

    def shuffle_grouping(self, stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """Tuples of the previous step spread evenly."""
        return self._add("shuffle", stream)

    def fields_grouping(self, fields: Fields | Sequence[str], stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """Equal values of ``fields``, same task."""
        return self._add("fields", stream, fields)

    def all_grouping(self, stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """Every task gets every tuple."""
        return self._add("all", stream)

    def global_grouping(self, stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """Every tuple to the lowest task."""
        return self._add("global", stream)

    def none_grouping(self, stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """No preference (as shuffle)."""
        return self._add("none", stream)

    def local_or_shuffle_grouping(self, stream: str = DEFAULT_STREAM) -> LinearDRPCInputDeclarer:
        """A task in the same worker if there is one, else shuffle."""
        return self._add("local_or_shuffle", stream)

    def add_configuration(self, key: str, value: Any) -> LinearDRPCInputDeclarer:
        """A component config entry."""
        self._step.conf[key] = value
        return self

    def add_configurations(self, conf: Mapping[str, Any]) -> LinearDRPCInputDeclarer:
        """Component config entries."""
        self._step.conf.update(conf)
        return self

    def set_num_tasks(self, n: int) -> LinearDRPCInputDeclarer:
        """Tasks of the step (default: its parallelism)."""
        self._step.num_tasks = n
        return self


class LinearDRPCTopologyBuilder:
    """Storm's ``LinearDRPCTopologyBuilder(function)`` (see the module docstring)."""

    def __init__(self, function: str) -> None:
        self.function = check_function(function)
        self._steps: list[_Step] = []

    def add_bolt(self, bolt: Any, parallelism: int = 1) -> LinearDRPCInputDeclarer:
        """Append a step: a ``BaseBatchBolt``, a ``BasicBolt`` or a ``Bolt`` (which acks its inputs itself)."""
        if not callable(getattr(bolt, "execute", None)):
            raise InvalidTopologyException(f"step {len(self._steps)} of DRPC function {self.function!r} is not a "
                                           f"bolt: {type(bolt).__name__}")
        step = _Step(bolt, parallelism)
        self._steps.append(step)
        return LinearDRPCInputDeclarer(step)

    def create_local_topology(self, local_drpc: LocalDRPC) -> StormTopology:
        """The topology served by ``local_drpc`` (in this process)."""
        return self._build(DRPCSpout(self.function, local_drpc)).create_topology()

    def create_remote_topology(self) -> StormTopology:
        """The topology served by the servers of ``drpc.servers``."""
        return self._build(DRPCSpout(self.function)).create_topology()

    def _build(self, spout: DRPCSpout) -> TopologyBuilder:
        if not self._steps:
            raise InvalidTopologyException(f"DRPC function {self.function!r} has no bolt: add_bolt at least once")
        self._check_last_step()
        builder = TopologyBuilder()
        builder.set_spout(SPOUT_ID, spout)
        builder.set_bolt(PREPARE_ID, PrepareRequest()).none_grouping(SPOUT_ID)
        last = len(self._steps) - 1
        for i, step in enumerate(self._steps):
            sources: dict[str, bool] = {}
            if i >= 1:
                sources[bolt_id(i - 1)] = i == 1  # step 0: one report, from the task that ran the request
            delegate: Any
            if is_batch_bolt(step.bolt):
                delegate = BatchBoltExecutor(step.bolt)
            elif isinstance(step.bolt, BasicBolt):
                delegate = BasicBoltExecutor(step.bolt)
            else:
                delegate = step.bolt
            waits_for_id = i == last and callable(getattr(delegate, "finished_id", None))
            coordinated = CoordinatedBolt(delegate, sources, (PREPARE_ID, ID_STREAM) if waits_for_id else None)
            decl = builder.set_bolt(bolt_id(i), coordinated, step.parallelism)
            decl.add_configurations(step.conf)
            if step.num_tasks is not None:
                decl.set_num_tasks(step.num_tasks)
            previous = PREPARE_ID if i == 0 else bolt_id(i - 1)
            if i == 0 and not step.inputs:
                decl.none_grouping(PREPARE_ID)
            for spec in step.inputs:
                _subscribe(decl, previous, spec)
            if i > 0:
                decl.all_grouping(previous, COORD_STREAM)
            if waits_for_id:
                decl.fields_grouping(PREPARE_ID, ["request"], ID_STREAM)
        stream, fields = _result_stream(self.function, self._steps[last].bolt)
        join = bolt_id(last + 1)
        builder.set_bolt(join, JoinResult(PREPARE_ID)) \
            .fields_grouping(bolt_id(last), [fields[0]], stream) \
            .fields_grouping(PREPARE_ID, ["request"], RETURN_STREAM)
        builder.set_bolt(bolt_id(last + 2), ReturnResults()).none_grouping(join)
        return builder


    def _check_last_step(self) -> None:
        """A last step that is a batch bolt on several tasks must be grouped on the request id alone: its
        request's ``id`` tuple goes to the task of that id, and only that task finishes the request."""
        last = len(self._steps) - 1
        step = self._steps[last]
        tasks = step.num_tasks if step.num_tasks is not None else step.parallelism
        if not is_batch_bolt(step.bolt) or tasks <= 1:
            return
        previous: Any = PrepareRequest() if last == 0 else self._steps[last - 1].bolt
        declarer = OutputFieldsDeclarer()
        previous.declare_output_fields(declarer)
        firsts = {spec.stream: list(declarer.streams[spec.stream][0])[:1] for spec in step.inputs
                  if spec.stream in declarer.streams}
        if not step.inputs or any(
            spec.kind != "fields" or spec.fields is None or list(spec.fields) != firsts.get(spec.stream)
            for spec in step.inputs
        ):
            raise InvalidTopologyException(
                f"the last bolt of DRPC function {self.function!r} is a batch bolt on {tasks} tasks: group it on "
                "the request id alone (fields_grouping on the first field), or a request's tuples and the task "
                "that finishes it could differ"
            )


def _subscribe(decl: BoltDeclarer, source: str, spec: _Input) -> None:
    if spec.kind == "fields":
        assert spec.fields is not None
        decl.fields_grouping(source, spec.fields, spec.stream)
        return
    getattr(decl, f"{spec.kind}_grouping")(source, spec.stream)


def _result_stream(function: str, bolt: Any) -> tuple[str, list[str]]:
    declarer = OutputFieldsDeclarer()
    bolt.declare_output_fields(declarer)
    streams = {s: f for s, f in _declared(declarer).items()}
    if len(streams) != 1:
        raise InvalidTopologyException(
            f"the last bolt of DRPC function {function!r} must declare exactly one stream, declares "
            f"{sorted(streams) or 'none'}"
        )
    (stream, fields), = streams.items()
    if len(fields) != 2:
        raise InvalidTopologyException(
            f"the last bolt of DRPC function {function!r} must emit two fields, [request id, result]; its stream "
            f"{stream!r} has {list(fields)}"
        )
    return stream, list(fields)


def _declared(declarer: OutputFieldsDeclarer) -> dict[str, Sequence[str]]:
    return {stream: list(info[0]) for stream, info in declarer.streams.items()}
