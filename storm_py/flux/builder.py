"""This module owns turning a Flux definition into a topology (Storm's ``FluxBuilder``): the topology config, the
components, spouts and bolts constructed in that order, the streams wired with their groupings, the worker hooks,
or the ``topologySource`` called instead; then the checks ``submit_topology`` would make, each error naming the
file and the component.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol, cast, runtime_checkable

from storm_py.api.components import BasicBolt, Bolt, CustomStreamGrouping, Spout
from storm_py.api.config import Config
from storm_py.api.topology import BoltDeclarer, StormTopology, TopologyBuilder, validate_topology
from storm_py.config import validate
from storm_py.errors import ConfigError, InvalidTopologyException, StormPyError
from storm_py.flux.model import BoltDef, FluxError, StreamDef, TopologyDef, VertexDef, flux_error
from storm_py.flux.objects import ObjectFactory
from storm_py.flux.registry import find_method
from storm_py.multilang.shell import ShellComponent
from storm_py.stateful import BaseStatefulBolt
from storm_py.windowing import BaseWindowedBolt

#: Storm's resource keys the ``onHeapMemoryLoad``, ``offHeapMemoryLoad`` and ``cpuLoad`` of a spout or bolt set
RESOURCE_KEYS: Final = (
    ("on_heap_memory_load", "topology.component.resources.onheap.memory.mb"),
    ("off_heap_memory_load", "topology.component.resources.offheap.memory.mb"),
    ("cpu_load", "topology.component.cpu.pcore.percent"),
)
RESOURCES: Final = "resources"


@runtime_checkable
class Completable(Protocol):
    """A component configured after its construction (Storm's builder-style bolts, e.g. the Kafka bolt): the
    builder calls ``check_configured`` once its properties and config methods ran; it raises naming what is
    missing."""

    def check_configured(self) -> None: ...


@runtime_checkable
class WorkerHookLike(Protocol):
    """What a worker hook object has (``TopologyBuilder.add_worker_hook``)."""

    def start(self, conf: dict[str, Any], context: Any) -> None: ...

    def shutdown(self) -> None: ...


@runtime_checkable
class GroupingLike(Protocol):
    """What a custom grouping object has (Storm's ``CustomStreamGrouping``)."""

    def prepare(self, context: Any, stream: Any, target_tasks: list[int]) -> None: ...

    def choose_tasks(self, task_id: int, values: list[Any]) -> list[int]: ...


def _checked(conf: Mapping[str, Any], source: str, component: str | None) -> None:
    try:
        validate(conf)
    except ConfigError as err:
        raise flux_error(source, err.message, component) from err


def build_config(topology_def: TopologyDef) -> Config:
    """Storm's ``FluxBuilder.buildConfig``: a :class:`Config` holding the definition's ``config``, known keys
    checked against storm_py's config table (unknown keys pass through)."""
    for key, value in topology_def.config.items():
        _checked({key: value}, topology_def.config_sources.get(key, topology_def.source), None)
    conf = Config()
    conf.update(topology_def.config)
    return conf


def working_dir_for(root_file: str | Path) -> Path:
    """Where shell components built from ``root_file`` run: ``resources/`` beside it, else its folder."""
    folder = Path(root_file).resolve().parent
    return folder / RESOURCES if (folder / RESOURCES).is_dir() else folder


class ExecutionContext:
    """Storm's ``ExecutionContext``: the definition, the config, and the objects Flux constructed."""

    def __init__(self, topology_def: TopologyDef, conf: Config, working_dir: str | Path | None = None) -> None:
        self.topology_def = topology_def
        self.config = conf
        #: the working directory of shell components (None: beside the root file when it is a file)
        self.working_dir = Path(working_dir) if working_dir is not None else None
        self._components: dict[str, Any] = {}
        self._spouts: dict[str, Any] = {}
        self._bolts: dict[str, Any] = {}

    def get_component(self, id: str) -> Any:
        """The object of component ``id`` (None when there is none)."""
        return self._components.get(id)

    def get_spout(self, id: str) -> Any:
        """The spout object ``id`` (None when there is none)."""
        return self._spouts.get(id)

    def get_bolt(self, id: str) -> Any:
        """The bolt object ``id`` (None when there is none)."""
        return self._bolts.get(id)

    def _shell_dir(self) -> Path | None:
        if self.working_dir is not None:
            return self.working_dir
        source = Path(self.topology_def.source)
        return working_dir_for(source) if source.is_file() else None


@dataclass
class FluxTopology:
    """A built definition: ``cluster.submit_topology(t.name, t.conf, t.topology)`` runs it."""

    name: str
    conf: Config
    topology: StormTopology
    context: ExecutionContext


def _vertex(factory: ObjectFactory, vdef: VertexDef, context: ExecutionContext, spout: bool) -> Any:
    obj = factory.build(vdef)
    if spout and not isinstance(obj, Spout):
        raise flux_error(vdef.source, f"class {vdef.class_name} is not a spout ({type(obj).__name__})", vdef.id)
    if not spout and not isinstance(obj, (Bolt, BasicBolt, BaseWindowedBolt, BaseStatefulBolt)):
        raise flux_error(vdef.source, f"class {vdef.class_name} is not a bolt ({type(obj).__name__})", vdef.id)
    if isinstance(obj, Completable):
        try:
            obj.check_configured()
        except (ValueError, StormPyError) as err:
            message = err.message if isinstance(err, StormPyError) else str(err)
            raise flux_error(vdef.source, f"class {vdef.class_name}: {message}", vdef.id) from err
    if isinstance(obj, ShellComponent) and obj.working_dir is None:
        shell_dir = context._shell_dir()
        if shell_dir is not None:
            obj.working_dir = str(shell_dir)
    _checked(vdef.config, vdef.source, vdef.id)
    return obj


def _declare(declarer: Any, vdef: VertexDef) -> None:
    if vdef.num_tasks is not None:
        declarer.set_num_tasks(vdef.num_tasks)
    conf = dict(vdef.config)
    for attr, key in RESOURCE_KEYS:
        value = getattr(vdef, attr)
        if value is not None:
            conf[key] = value
    if conf:
        declarer.add_configurations(conf)


def _wire(declarer: BoltDeclarer, stream: StreamDef, factory: ObjectFactory) -> None:
    g = stream.grouping
    sid = g.stream_id or "default"
    src = stream.from_
    if g.type == "SHUFFLE":
        declarer.shuffle_grouping(src, sid)
    elif g.type == "FIELDS":
        declarer.fields_grouping(src, list(g.args or []), sid)
    elif g.type == "ALL":
        declarer.all_grouping(src, sid)
    elif g.type == "GLOBAL":
        declarer.global_grouping(src, sid)
    elif g.type == "NONE":
        declarer.none_grouping(src, sid)
    elif g.type == "DIRECT":
        declarer.direct_grouping(src, sid)
    elif g.type == "LOCAL_OR_SHUFFLE":
        declarer.local_or_shuffle_grouping(src, sid)
    else:
        assert g.custom_class is not None  # the model requires it for CUSTOM
        grouping = factory.build(g.custom_class)
        if not isinstance(grouping, GroupingLike):
            raise flux_error(stream.source, f"stream {src} --> {stream.to}: class {g.custom_class.class_name} is "
                             "not a custom grouping (it needs prepare and choose_tasks)", stream.to)
        declarer.custom_grouping(src, cast(CustomStreamGrouping, grouping), sid)


def _check_streams(td: TopologyDef, topology: StormTopology) -> None:
    comps = topology.components()
    for s in td.streams:
        sid = s.grouping.stream_id or "default"
        declared = comps[s.from_].streams
        where = f"stream {s.from_} --> {s.to}"
        if sid not in declared:
            names = ", ".join(sorted(declared)) or "none"
            raise flux_error(s.source, f"{where}: {s.from_!r} declares no stream {sid!r} (its streams: {names})",
                             s.to)
        fields, direct = declared[sid]
        for f in s.grouping.args or []:
            if f not in fields:
                raise flux_error(s.source, f"{where}: stream {sid!r} of {s.from_!r} has no field {f!r} (its fields: "
                                 f"{', '.join(fields)})", s.to)
        if s.grouping.type == "DIRECT" and not direct:
            raise flux_error(s.source, f"{where}: stream {sid!r} of {s.from_!r} is not a direct stream", s.to)


def _from_source(context: ExecutionContext, factory: ObjectFactory) -> StormTopology:
    src = context.topology_def.topology_source
    assert src is not None
    obj = factory.build(src)
    method = find_method(obj, src.method_name)
    if method is None:
        raise flux_error(src.source, f"class {src.class_name} has no method {src.method_name!r}", "topologySource")
    try:
        topology = method(context.config)
    except Exception as err:
        raise flux_error(src.source, f"{src.class_name}.{src.method_name} raised {type(err).__name__}: {err}",
                         "topologySource") from err
    if not isinstance(topology, StormTopology):
        raise flux_error(src.source, f"{src.class_name}.{src.method_name} returned {type(topology).__name__}, not a "
                         "StormTopology", "topologySource")
    return topology


def build_topology(context: ExecutionContext) -> StormTopology:
    """Storm's ``FluxBuilder.buildTopology`` (see the module's docstring)."""
    td = context.topology_def
    factory = ObjectFactory(td.components)
    factory.build_all()
    context._components = factory.built
    if td.topology_source is not None:
        return _from_source(context, factory)
    builder = TopologyBuilder()
    declarers: dict[str, BoltDeclarer] = {}
    try:
        for sdef in td.spouts:
            obj = _vertex(factory, sdef, context, True)
            context._spouts[sdef.id] = obj
            _declare(builder.set_spout(sdef.id, obj, sdef.parallelism), sdef)
        for bdef in td.bolts:
            obj = _vertex(factory, bdef, context, False)
            context._bolts[bdef.id] = obj
            declarers[bdef.id] = builder.set_bolt(bdef.id, obj, bdef.parallelism)
            _declare(declarers[bdef.id], bdef)
        for stream in td.streams:
            _wire(declarers[stream.to], stream, factory)
        for hook_def in td.worker_hooks:
            hook = factory.build(hook_def)
            if not isinstance(hook, WorkerHookLike):
                raise flux_error(hook_def.source, f"class {hook_def.class_name} is not a worker hook (it needs "
                                 "start(conf, context) and shutdown())", hook_def.id)
            builder.add_worker_hook(hook)
        topology = builder.create_topology()
    except FluxError:
        raise
    except InvalidTopologyException as err:
        component = err.fields.get("component")
        owner: BoltDef | None = td.get_bolt_def(component) if isinstance(component, str) else None
        raise flux_error(owner.source if owner else td.source, err.message, component) from err
    _check_streams(td, topology)
    try:
        validate_topology(topology)
    except InvalidTopologyException as err:
        raise flux_error(td.source, err.message, err.fields.get("component")) from err
    return topology


def build(topology_def: TopologyDef, working_dir: str | Path | None = None) -> FluxTopology:
    """:func:`build_config`, an :class:`ExecutionContext` and :func:`build_topology` in one call."""
    conf = build_config(topology_def)
    context = ExecutionContext(topology_def, conf, working_dir)
    topology = build_topology(context)
    assert topology_def.name is not None  # the parser requires it
    return FluxTopology(topology_def.name, conf, topology, context)


def describe(td: TopologyDef) -> list[str]:
    """Storm's topology details, class names as the file writes them."""
    if td.topology_source is not None:
        return [f"Topology Name: {td.name}", f"Topology Source: {td.topology_source.class_name}"]
    lines = ["---------- TOPOLOGY DETAILS ----------", f"Topology Name: {td.name}"]
    lines.append("--------------- SPOUTS ---------------")
    lines += [f"{s.id} [{s.parallelism}] ({s.class_name})" for s in td.spouts]
    lines.append("---------------- BOLTS ---------------")
    lines += [f"{b.id} [{b.parallelism}] ({b.class_name})" for b in td.bolts]
    lines.append("--------------- STREAMS ---------------")
    lines += [f"{s.from_} --{s.grouping.type}--> {s.to}" for s in td.streams]
    lines.append("--------------- WORKER HOOKS ---------------")
    lines += [f"{h.id} ({h.class_name})" for h in td.worker_hooks]
    lines.append("--------------------------------------")
    return lines
