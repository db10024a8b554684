"""This module owns Flux's YAML model: the definition classes (Storm's ``TopologyDef``, ``BeanDef``, ``SpoutDef``,
``BoltDef``, ``StreamDef``, ``GroupingDef``, ``IncludeDef``, ``TopologySourceDef``), reading them from parsed YAML
with every unknown key refused, and :class:`FluxError`.

Each definition remembers the file it came from (``source``), so an error found later, while the topology is built,
still names the included file the faulty part was written in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from storm_py.errors import InvalidTopologyException

#: Storm's grouping types
GROUPING_TYPES: Final = ("SHUFFLE", "FIELDS", "ALL", "GLOBAL", "NONE", "DIRECT", "LOCAL_OR_SHUFFLE", "CUSTOM")

_OBJECT_KEYS: Final = frozenset({"className", "constructorArgs", "properties", "configMethods", "factory",
                                 "factoryArgs"})
_BEAN_KEYS: Final = _OBJECT_KEYS | {"id"}
_VERTEX_KEYS: Final = _BEAN_KEYS | {"parallelism", "numTasks", "config", "onHeapMemoryLoad", "offHeapMemoryLoad",
                                    "cpuLoad"}
_SOURCE_KEYS: Final = _OBJECT_KEYS | {"methodName"}
_STREAM_KEYS: Final = frozenset({"name", "from", "to", "grouping"})
_GROUPING_KEYS: Final = frozenset({"type", "args", "streamId", "customClass"})
_INCLUDE_KEYS: Final = frozenset({"file", "resource", "override"})
_PROPERTY_KEYS: Final = frozenset({"name", "value", "ref"})
_METHOD_KEYS: Final = frozenset({"name", "args"})
TOP_KEYS: Final = frozenset({"name", "config", "components", "spouts", "bolts", "streams", "includes", "workerHooks",
                             "topologySource"})


class FluxError(InvalidTopologyException):
    """A problem with a Flux definition: the message names the file and, where one is at fault, the component."""

    code = "flux_error"


def flux_error(source: str, what: str, component: str | None = None) -> FluxError:
    """``FILE: component 'ID': WHAT`` (the component part only when one is at fault)."""
    where = f"{source}: component {component!r}: " if component is not None else f"{source}: "
    fields: dict[str, Any] = {"file": source}
    if component is not None:
        fields["component"] = component
    return FluxError(where + what, **fields)


@dataclass
class PropertyDef:
    """One entry of ``properties``: a value, or a reference to a component."""

    name: str
    value: Any = None
    ref: str | None = None


@dataclass
class ConfigMethodDef:
    """One entry of ``configMethods``: a method name and its arguments."""

    name: str
    args: list[Any] | None = None


@dataclass(kw_only=True)
class ObjectDef:
    """An object Flux constructs: by constructor, by factory or with no arguments, then properties and methods."""

    class_name: str
    constructor_args: list[Any] | None = None
    properties: list[PropertyDef] = field(default_factory=list)
    config_methods: list[ConfigMethodDef] = field(default_factory=list)
    factory: str | None = None
    factory_args: list[Any] | None = None
    source: str = ""
    #: how errors name it: its id, ``topologySource``, or the target bolt of a custom grouping
    label: str = ""


@dataclass(kw_only=True)
class BeanDef(ObjectDef):
    """A component (Storm's bean): an object with an id."""

    id: str


@dataclass(kw_only=True)
class VertexDef(BeanDef):
    """A spout or a bolt."""

    parallelism: int = 1
    num_tasks: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    on_heap_memory_load: float | None = None
    off_heap_memory_load: float | None = None
    cpu_load: float | None = None


@dataclass(kw_only=True)
class SpoutDef(VertexDef):
    """A spout definition."""


@dataclass(kw_only=True)
class BoltDef(VertexDef):
    """A bolt definition."""


@dataclass(kw_only=True)
class TopologySourceDef(ObjectDef):
    """A ``topologySource``: an object whose method builds the topology in code."""

    method_name: str = "getTopology"


@dataclass
class GroupingDef:
    """How a stream's tuples reach the bolt: Storm's type, its field names, the source stream, a custom class."""

    type: str
    args: list[str] | None = None
    stream_id: str | None = None
    custom_class: ObjectDef | None = None


@dataclass
class StreamDef:
    """A stream from a spout or bolt into a bolt."""

    from_: str
    to: str
    grouping: GroupingDef
    name: str | None = None
    source: str = ""


@dataclass
class IncludeDef:
    """An included file: read from the file system, or as a resource; its parts win only with ``override``."""

    file: str
    resource: bool = False
    override: bool = False


@dataclass
class TopologyDef:
    """A parsed Flux definition (Storm's model, in snake_case)."""

    name: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    components: list[BeanDef] = field(default_factory=list)
    spouts: list[SpoutDef] = field(default_factory=list)
    bolts: list[BoltDef] = field(default_factory=list)
    streams: list[StreamDef] = field(default_factory=list)
    includes: list[IncludeDef] = field(default_factory=list)
    worker_hooks: list[BeanDef] = field(default_factory=list)
    topology_source: TopologySourceDef | None = None
    #: the file (or resource) this definition was read from
    source: str = ""
    #: the file each ``config`` key came from
    config_sources: dict[str, str] = field(default_factory=dict)

    def get_spout_def(self, id: str) -> SpoutDef | None:
        """The spout with this id, or None."""
        return next((s for s in self.spouts if s.id == id), None)

    def get_bolt_def(self, id: str) -> BoltDef | None:
        """The bolt with this id, or None."""
        return next((b for b in self.bolts if b.id == id), None)

    def get_component(self, id: str) -> BeanDef | None:
        """The component with this id, or None."""
        return next((c for c in self.components if c.id == id), None)

    def is_dsl_topology(self) -> bool:
        """Whether spouts, bolts and streams define the topology (not a ``topologySource``)."""
        return self.topology_source is None


# ------------------------------------------------------------------------------------------------ reading YAML

_V = TypeVar("_V", SpoutDef, BoltDef)


class _Reader:
    """Turns one file's parsed YAML into definitions, naming the file in every error."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, what: str, component: str | None = None) -> FluxError:
        return flux_error(self.source, what, component)

    def mapping(self, raw: Any, what: str, allowed: frozenset[str], component: str | None = None) -> dict[str, Any]:
        if not isinstance(raw, Mapping):
            raise self.fail(f"{what} must be a mapping, got {raw!r}", component)
        unknown = sorted(str(k) for k in raw if k not in allowed)
        if unknown:
            raise self.fail(f"unknown key {unknown[0]!r} in {what} (allowed: {', '.join(sorted(allowed))})",
                            component)
        return {str(k): v for k, v in raw.items()}

    def items(self, raw: Any, what: str) -> list[Any]:
        if raw is None:
            return []
        if not isinstance(raw, list):
            raise self.fail(f"{what} must be a list, got {raw!r}")
        return raw

    def text(self, raw: Mapping[str, Any], key: str, what: str, component: str | None = None,
             required: bool = True) -> str | None:
        value = raw.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value:
            raise self.fail(f"{what} needs {key!r} as a non-empty string, got {value!r}", component)
        return value

    def args(self, raw: Mapping[str, Any], key: str, label: str) -> list[Any] | None:
        value = raw.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.fail(f"{key!r} must be a list, got {value!r}", label)
        return value

    def object_fields(self, raw: Mapping[str, Any], label: str) -> dict[str, Any]:
        class_name = self.text(raw, "className", "an object", label)
        props = []
        for p in self.items(raw.get("properties"), f"properties of {label!r}"):
            p = self.mapping(p, "a property", _PROPERTY_KEYS, label)
            name = self.text(p, "name", "a property", label)
            if "ref" in p and "value" in p:
                raise self.fail(f"property {name!r} has both 'value' and 'ref'", label)
            ref = p.get("ref")
            if ref is not None and not isinstance(ref, str):
                raise self.fail(f"property {name!r}: 'ref' must be a component id, got {ref!r}", label)
            props.append(PropertyDef(str(name), p.get("value"), ref))
        methods = []
        for m in self.items(raw.get("configMethods"), f"configMethods of {label!r}"):
            m = self.mapping(m, "a config method", _METHOD_KEYS, label)
            name = self.text(m, "name", "a config method", label)
            methods.append(ConfigMethodDef(str(name), self.args(m, "args", label)))
        return {
            "class_name": class_name,
            "constructor_args": self.args(raw, "constructorArgs", label),
            "properties": props,
            "config_methods": methods,
            "factory": self.text(raw, "factory", "an object", label, required=False),
            "factory_args": self.args(raw, "factoryArgs", label),
            "source": self.source,
            "label": label,
        }

    def bean(self, raw: Any, what: str) -> BeanDef:
        raw = self.mapping(raw, what, _BEAN_KEYS, _id_of(raw))
        cid = str(self.text(raw, "id", what))
        return BeanDef(id=cid, **self.object_fields(raw, cid))

    def vertex(self, raw: Any, what: str, cls: type[_V]) -> _V:
        raw = self.mapping(raw, what, _VERTEX_KEYS, _id_of(raw))
        cid = str(self.text(raw, "id", what))
        parallelism = raw.get("parallelism", 1)
        if not _is_int(parallelism) or parallelism < 1:
            raise self.fail(f"'parallelism' must be a positive integer, got {parallelism!r}", cid)
        num_tasks = raw.get("numTasks")
        if num_tasks is not None and (not _is_int(num_tasks) or num_tasks < 0):
            raise self.fail(f"'numTasks' must be a non-negative integer, got {num_tasks!r}", cid)
        conf = raw.get("config") or {}
        if not isinstance(conf, Mapping):
            raise self.fail(f"'config' must be a mapping, got {conf!r}", cid)
        loads: dict[str, Any] = {}
        for key, attr in (("onHeapMemoryLoad", "on_heap_memory_load"), ("offHeapMemoryLoad", "off_heap_memory_load"),
                          ("cpuLoad", "cpu_load")):
            value = raw.get(key)
            if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0):
                raise self.fail(f"{key!r} must be a non-negative number, got {value!r}", cid)
            loads[attr] = value
        return cls(id=cid, parallelism=parallelism, num_tasks=num_tasks, config={str(k): v for k, v in conf.items()},
                   **loads, **self.object_fields(raw, cid))

    def stream(self, raw: Any) -> StreamDef:
        raw = self.mapping(raw, "a stream", _STREAM_KEYS)
        src = str(self.text(raw, "from", "a stream"))
        dst = str(self.text(raw, "to", "a stream"))
        name = raw.get("name")
        g = self.mapping(raw.get("grouping"), f"the grouping of stream {src} --> {dst}", _GROUPING_KEYS, dst)
        kind = g.get("type")
        if not isinstance(kind, str) or kind.upper() not in GROUPING_TYPES:
            raise self.fail(f"stream {src} --> {dst}: unknown grouping type {kind!r} (valid: "
                            f"{', '.join(GROUPING_TYPES)})", dst)
        kind = kind.upper()
        args = g.get("args")
        if args is not None and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
            raise self.fail(f"stream {src} --> {dst}: grouping 'args' must be a list of field names, got {args!r}",
                            dst)
        if kind == "FIELDS" and not args:
            raise self.fail(f"stream {src} --> {dst}: a FIELDS grouping needs 'args' (the field names)", dst)
        stream_id = g.get("streamId")
        if stream_id is not None and not isinstance(stream_id, str):
            raise self.fail(f"stream {src} --> {dst}: 'streamId' must be a string, got {stream_id!r}", dst)
        custom = None
        if g.get("customClass") is not None:
            c = self.mapping(g["customClass"], f"the customClass of stream {src} --> {dst}", _OBJECT_KEYS, dst)
            custom = ObjectDef(**self.object_fields(c, dst))
        if kind == "CUSTOM" and custom is None:
            raise self.fail(f"stream {src} --> {dst}: a CUSTOM grouping needs 'customClass'", dst)
        return StreamDef(src, dst, GroupingDef(kind, args, stream_id, custom),
                         None if name is None else str(name), self.source)

    def include(self, raw: Any) -> IncludeDef:
        raw = self.mapping(raw, "an include", _INCLUDE_KEYS)
        file = str(self.text(raw, "file", "an include"))
        flags = {}
        for key in ("resource", "override"):
            value = raw.get(key, False)
            if not isinstance(value, bool):
                raise self.fail(f"include {file!r}: {key!r} must be true or false, got {value!r}")
            flags[key] = value
        return IncludeDef(file, flags["resource"], flags["override"])

    def topology_source(self, raw: Any) -> TopologySourceDef:
        raw = self.mapping(raw, "topologySource", _SOURCE_KEYS, "topologySource")
        method = self.text(raw, "methodName", "topologySource", "topologySource", required=False)
        return TopologySourceDef(method_name=method or "getTopology", **self.object_fields(raw, "topologySource"))


def _id_of(raw: Any) -> str | None:
    cid = raw.get("id") if isinstance(raw, Mapping) else None
    return cid if isinstance(cid, str) else None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_definition(raw: Any, source: str) -> TopologyDef:
    """One file's definition from its parsed YAML (its includes not yet processed)."""
    r = _Reader(source)
    if raw is None:
        raw = {}
    top = r.mapping(raw, "the topology definition", TOP_KEYS)
    name = top.get("name")
    if name is not None and (not isinstance(name, (str, int, float)) or isinstance(name, bool) or name == ""):
        raise r.fail(f"'name' must be a non-empty string, got {name!r}")
    config = top.get("config") or {}
    if not isinstance(config, Mapping):
        raise r.fail(f"'config' must be a mapping, got {config!r}")
    source_def = top.get("topologySource")
    return TopologyDef(
        name=None if name is None else str(name),
        config={str(k): v for k, v in config.items()},
        components=[r.bean(c, "a component") for c in r.items(top.get("components"), "'components'")],
        spouts=[r.vertex(s, "a spout", SpoutDef) for s in r.items(top.get("spouts"), "'spouts'")],
        bolts=[r.vertex(b, "a bolt", BoltDef) for b in r.items(top.get("bolts"), "'bolts'")],
        streams=[r.stream(s) for s in r.items(top.get("streams"), "'streams'")],
        includes=[r.include(i) for i in r.items(top.get("includes"), "'includes'")],
        worker_hooks=[r.bean(h, "a worker hook") for h in r.items(top.get("workerHooks"), "'workerHooks'")],
        topology_source=None if source_def is None else r.topology_source(source_def),
        source=source,
        config_sources={str(k): source for k in config},
    )
