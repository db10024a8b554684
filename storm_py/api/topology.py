"""TopologyBuilder, its declarers, groupings and the resulting :class:`StormTopology` (pure data) and validation."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Self

from storm_py.api.async_bolt import check_async_bolt
from storm_py.api.components import (
    BasicBolt,
    Bolt,
    Component,
    CustomStreamGrouping,
    OutputFieldsDeclarer,
    RunsInWrapper,
    Spout,
    own_configuration,
)
from storm_py.api.tuple import DEFAULT_STREAM, Fields
from storm_py.config import validate as validate_conf
from storm_py.errors import ConfigError, InvalidTopologyException

SHUFFLE = "shuffle"
FIELDS = "fields"
ALL = "all"
GLOBAL = "global"
NONE = "none"
DIRECT = "direct"
LOCAL_OR_SHUFFLE = "local_or_shuffle"
PARTIAL_KEY = "partial_key"
CUSTOM = "custom"


@dataclass
class Grouping:
    """How a stream's tuples are spread over a subscribing component's tasks."""

    kind: str
    fields: Fields | None = None
    custom: CustomStreamGrouping | None = None


@dataclass
class ComponentSpec:
    """One spout or bolt of a topology: the user object and how it runs."""

    id: str
    obj: Any
    parallelism: int
    is_spout: bool
    inputs: dict[tuple[str, str], Grouping] = field(default_factory=dict)
    conf: dict[str, Any] = field(default_factory=dict)
    streams: dict[str, tuple[Fields, bool]] = field(default_factory=dict)
    #: the columnar streams among ``streams``: stream id -> declared ``pyarrow.Schema`` (``None``: names only)
    columnar: dict[str, Any] = field(default_factory=dict)

    def num_tasks(self) -> int:
        """Tasks of this component: ``topology.tasks`` if set, else the parallelism hint; capped by max parallelism."""
        n = self.conf.get("topology.tasks")
        tasks = int(n) if n is not None else self.parallelism
        cap = self.conf.get("topology.max.task.parallelism")
        if cap is not None:
            tasks = min(tasks, int(cap))
        return tasks

    def num_executors(self) -> int:
        """Executors of this component: the parallelism hint, never more than its tasks."""
        par = self.parallelism
        cap = self.conf.get("topology.max.task.parallelism")
        if cap is not None:
            par = min(par, int(cap))
        return min(par, self.num_tasks())


@dataclass
class StormTopology:
    """The topology a builder creates: spouts and bolts by id."""

    spouts: dict[str, ComponentSpec]
    bolts: dict[str, ComponentSpec]
    #: worker hooks (:class:`~storm_py.api.hooks.WorkerHook`) every worker starts before its tasks
    worker_hooks: list[Any] = field(default_factory=list)

    def components(self) -> dict[str, ComponentSpec]:
        """Every component by id."""
        return {**self.spouts, **self.bolts}

    def copy(self) -> StormTopology:
        """A deep copy (each run gets its own component objects)."""
        return copy.deepcopy(self)


class _Declarer:
    def __init__(self, spec: ComponentSpec) -> None:
        self._spec = spec

    def add_configuration(self, key: str, value: Any) -> _Declarer:
        """Set one component configuration key."""
        self._spec.conf[key] = value
        return self

    def add_configurations(self, conf: Mapping[str, Any]) -> _Declarer:
        """Set several component configuration keys."""
        self._spec.conf.update(conf)
        return self

    def set_num_tasks(self, n: int) -> _Declarer:
        """Number of tasks (fixed for the topology's life; executors may later be rebalanced up to it)."""
        if not isinstance(n, int) or n < 0:
            raise InvalidTopologyException(f"number of tasks of {self._spec.id!r} must be >= 0, got {n!r}")
        self._spec.conf["topology.tasks"] = n
        return self

    def set_max_task_parallelism(self, n: int) -> _Declarer:
        """Cap on this component's executors and tasks."""
        self._spec.conf["topology.max.task.parallelism"] = n
        return self

    def set_max_spout_pending(self, n: int) -> _Declarer:
        """Max un-acked tuples per spout task."""
        self._spec.conf["topology.max.spout.pending"] = n
        return self

    def set_debug(self, flag: bool) -> _Declarer:
        """Log every emit, ack and fail of this component."""
        self._spec.conf["topology.debug"] = bool(flag)
        return self


    def set_memory_load(self, on_heap_mb: float, off_heap_mb: float = 0.0) -> Self:
        """Memory (MB) each executor of this component needs, on and off heap (Storm's ``setMemoryLoad``; the
        resource aware scheduler places by it)."""
        self._spec.conf["topology.component.resources.onheap.memory.mb"] = _amount(
            self._spec.id, "topology.component.resources.onheap.memory.mb", on_heap_mb)
        self._spec.conf["topology.component.resources.offheap.memory.mb"] = _amount(
            self._spec.id, "topology.component.resources.offheap.memory.mb", off_heap_mb)
        return self

    def set_cpu_load(self, percent: float) -> Self:
        """CPU each executor of this component needs, in percent of a core (Storm's ``setCPULoad``)."""
        self._spec.conf["topology.component.cpu.pcore.percent"] = _amount(
            self._spec.id, "topology.component.cpu.pcore.percent", percent)
        return self

    def add_resource(self, name: str, amount: float) -> Self:
        """A generic resource each executor of this component needs, e.g. ``add_resource("gpu.count", 1)``
        (Storm's ``addResource``); only supervisors whose ``supervisor.resources.map`` offers it run it."""
        if not isinstance(name, str) or not name:
            raise InvalidTopologyException(f"resource name of {self._spec.id!r} must be a non-empty string, got "
                                           f"{name!r}", component=self._spec.id)
        resources = dict(self._spec.conf.get("topology.component.resources.map") or {})
        resources[name] = _amount(self._spec.id, f"topology.component.resources.map[{name!r}]", amount)
        self._spec.conf["topology.component.resources.map"] = resources
        return self


def _amount(component: str, key: str, value: Any) -> float:
    """``value`` as a resource amount: a finite number >= 0, else an error naming the component and the key."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InvalidTopologyException(f"{key} of {component!r} must be a number >= 0, got {value!r}",
                                       component=component, key=key)
    return float(value)


class SpoutDeclarer(_Declarer):
    """Returned by ``set_spout``: component configuration, chainable."""


class BoltDeclarer(_Declarer):
    """Returned by ``set_bolt``: subscriptions (groupings) and component configuration, chainable."""

    def _subscribe(self, cid: str, stream: str, grouping: Grouping) -> BoltDeclarer:
        key = (cid, stream)
        if key in self._spec.inputs:
            raise InvalidTopologyException(
                f"bolt {self._spec.id!r} subscribes twice to stream {stream!r} of {cid!r}",
                component=self._spec.id,
            )
        self._spec.inputs[key] = grouping
        return self

    def shuffle_grouping(self, cid: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Tuples spread evenly over the tasks."""
        return self._subscribe(cid, stream, Grouping(SHUFFLE))

    def fields_grouping(self, cid: str, fields: Fields | Sequence[str], stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Tuples with equal values of ``fields`` go to the same task."""
        return self._subscribe(cid, stream, Grouping(FIELDS, _as_fields(fields)))

    def all_grouping(self, cid: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Every task gets a copy of every tuple."""
        return self._subscribe(cid, stream, Grouping(ALL))

    def global_grouping(self, cid: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Every tuple goes to the task with the lowest id."""
        return self._subscribe(cid, stream, Grouping(GLOBAL, Fields()))

    def none_grouping(self, cid: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """No preference (a random task)."""
        return self._subscribe(cid, stream, Grouping(NONE))

    def direct_grouping(self, cid: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """The producer picks the task with ``emit_direct``; the stream must be declared direct."""
        return self._subscribe(cid, stream, Grouping(DIRECT))

    def local_or_shuffle_grouping(self, cid: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Prefer tasks in the producer's worker, else shuffle."""
        return self._subscribe(cid, stream, Grouping(LOCAL_OR_SHUFFLE))

    def partial_key_grouping(
        self, cid: str, fields: Fields | Sequence[str], stream: str = DEFAULT_STREAM
    ) -> BoltDeclarer:
        """Each key goes to the less loaded of two candidate tasks."""
        return self._subscribe(cid, stream, Grouping(PARTIAL_KEY, _as_fields(fields)))

    def custom_grouping(self, cid: str, grouping: CustomStreamGrouping, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """A :class:`CustomStreamGrouping` picks the tasks."""
        if not hasattr(grouping, "choose_tasks"):
            raise InvalidTopologyException(
                f"custom grouping of {self._spec.id!r} on {cid!r} has no choose_tasks method", component=self._spec.id
            )
        return self._subscribe(cid, stream, Grouping(CUSTOM, custom=grouping))


def _as_fields(fields: Fields | Sequence[str] | str) -> Fields:
    if isinstance(fields, Fields):
        return fields
    if isinstance(fields, str):
        return Fields(fields)
    return Fields(list(fields))


#: Rewrites ``create_topology`` applies to what it built, in order; a package above ``api`` registers its own
#: with :func:`register_topology_rewrite` (managed state wires its checkpoint spout and stream this way).
_REWRITES: list[Callable[[StormTopology], StormTopology]] = []


def register_topology_rewrite(rewrite: Callable[[StormTopology], StormTopology]) -> None:
    """Have every builder apply ``rewrite`` to the topologies it creates (once, however often registered)."""
    if rewrite not in _REWRITES:
        _REWRITES.append(rewrite)


class TopologyBuilder:
    """Builds a :class:`StormTopology` from spouts and bolts."""

    def __init__(self) -> None:
        self._spouts: dict[str, ComponentSpec] = {}
        self._bolts: dict[str, ComponentSpec] = {}
        self._worker_hooks: list[Any] = []

    def _check_new(self, cid: str, parallelism: int) -> None:
        if not isinstance(cid, str) or not cid:
            raise InvalidTopologyException(f"component id must be a non-empty string, got {cid!r}")
        if cid in self._spouts or cid in self._bolts:
            raise InvalidTopologyException(f"topology already has a component with id {cid!r}", component=cid)
        if not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1:
            raise InvalidTopologyException(
                f"parallelism of {cid!r} must be a positive integer, got {parallelism!r}", component=cid
            )

    def set_spout(self, id: str, spout: Spout, parallelism: int = 1) -> SpoutDeclarer:
        """Add a spout with ``parallelism`` executors."""
        self._check_new(id, parallelism)
        if not hasattr(spout, "next_tuple"):
            raise InvalidTopologyException(f"component {id!r} is not a spout (no next_tuple): {spout!r}", component=id)
        spec = ComponentSpec(id, spout, parallelism, True)
        self._spouts[id] = spec
        return SpoutDeclarer(spec)

    def set_bolt(self, id: str, bolt: Bolt | BasicBolt | Component, parallelism: int = 1) -> BoltDeclarer:
        """Add a bolt (rich or basic) with ``parallelism`` executors."""
        self._check_new(id, parallelism)
        if isinstance(bolt, RunsInWrapper):  # runs inside a bolt of the system (a windowed bolt: its window executor)
            bolt = bolt.topology_bolt()
        if not hasattr(bolt, "execute"):
            raise InvalidTopologyException(f"component {id!r} is not a bolt (no execute): {bolt!r}", component=id)
        check_async_bolt(id, bolt)
        spec = ComponentSpec(id, bolt, parallelism, False)
        self._bolts[id] = spec
        return BoltDeclarer(spec)

    def add_worker_hook(self, hook: Any) -> None:
        """Add a worker hook (a :class:`~storm_py.api.hooks.WorkerHook`): every worker calls its ``start`` before
        its tasks start and its ``shutdown`` after they stopped."""
        if not callable(getattr(hook, "start", None)) or not callable(getattr(hook, "shutdown", None)):
            raise InvalidTopologyException(f"worker hook {hook!r} has no start(conf, context) and shutdown()")
        self._worker_hooks.append(hook)

    def create_topology(self) -> StormTopology:
        """The topology built so far (component output streams are declared now)."""
        topo = StormTopology(dict(self._spouts), dict(self._bolts), list(self._worker_hooks))
        for spec in topo.components().values():
            fill_component(spec)
        for rewrite in _REWRITES:
            topo = rewrite(topo)
        return topo


def fill_component(spec: ComponentSpec) -> None:
    """Ask the component for its output streams and configuration (component conf < declarer conf)."""
    declarer = OutputFieldsDeclarer()
    try:
        spec.obj.declare_output_fields(declarer)
    except (ValueError, TypeError) as err:
        raise InvalidTopologyException(
            f"component {spec.id!r} declares invalid outputs: {err}", component=spec.id
        ) from err
    spec.streams = declarer.streams
    spec.columnar = declarer.columnar
    own = own_configuration(spec.obj)
    if own:
        if not isinstance(own, Mapping):
            raise InvalidTopologyException(
                f"get_component_configuration of {spec.id!r} must return a dict or None", component=spec.id
            )
        spec.conf = {**own, **spec.conf}


#: component configuration keys checked against the config table when a topology is validated
CHECKED_COMPONENT_KEYS: Final = ("topology.vector.batch.size", "topology.vector.batch.linger.ms")


def _check_component_keys(cid: str, conf: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidTopologyException` naming the key and the component when a checked key of the
    component's own configuration has an invalid value."""
    for key in CHECKED_COMPONENT_KEYS:
        if key in conf:
            try:
                validate_conf({key: conf[key]}, f"component {cid!r}:")
            except ConfigError as err:
                raise InvalidTopologyException(str(err), component=cid, key=key) from err


def validate_topology(topology: StormTopology, system: bool = False) -> None:
    """Storm's structural checks; raise :class:`InvalidTopologyException` naming what is wrong.

    A user topology is checked for reserved ids only; ``system=True`` checks the rewritten topology (where
    ``__`` ids are the system's own, and streams like ``__system`` exist) for every reference.
    """
    if not isinstance(topology, StormTopology):
        raise InvalidTopologyException(f"expected a StormTopology, got {type(topology).__name__}")
    comps = topology.components()
    if not topology.spouts:
        raise InvalidTopologyException("topology has no spouts")
    for cid, spec in comps.items():
        if not spec.is_spout:
            check_async_bolt(cid, spec.obj)
        _check_component_keys(cid, spec.conf)
        if cid.startswith("__") and not system:
            raise InvalidTopologyException(f"component id {cid!r} is reserved (ids starting '__' are system ids)",
                                           component=cid)
        for stream in spec.streams:
            if stream.startswith("__") and not system:
                raise InvalidTopologyException(
                    f"stream id {stream!r} of {cid!r} is reserved (ids starting '__' are system ids)", component=cid
                )
        if not system:
            continue
        if spec.num_tasks() < 0:
            raise InvalidTopologyException(f"component {cid!r} has a negative number of tasks", component=cid)
        for (src, stream), grouping in spec.inputs.items():
            if src not in comps:
                raise InvalidTopologyException(
                    f"component {cid!r} subscribes to non-existent component {src!r}", component=cid
                )
            src_streams = comps[src].streams
            if stream not in src_streams:
                raise InvalidTopologyException(
                    f"component {cid!r} subscribes to non-existent stream {stream!r} of {src!r}", component=cid
                )
            out_fields, direct = src_streams[stream]
            if grouping.kind in (FIELDS, PARTIAL_KEY) and grouping.fields is not None:
                for f in grouping.fields:
                    if f not in out_fields:
                        raise InvalidTopologyException(
                            f"component {cid!r} groups on non-existent field {f!r} of stream {stream!r} of {src!r}"
                            f" (fields: {out_fields.to_list()})",
                            component=cid,
                        )
            if grouping.kind == DIRECT and not direct:
                raise InvalidTopologyException(
                    f"component {cid!r} uses direct grouping on stream {stream!r} of {src!r}, which is not direct",
                    component=cid,
                )
