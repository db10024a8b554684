"""This module owns the resolved definition a remote Flux submission carries: the definition written back as Storm's
model (includes merged, ``${...}`` substituted, ``-c`` applied) into the package, and the entry point a worker calls
to build the topology from it, so workers never read the original file, the filter file or the client's
environment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from storm_py.api.topology import StormTopology
from storm_py.flux.builder import RESOURCES, build
from storm_py.flux.model import BeanDef, ObjectDef, StreamDef, TopologyDef, VertexDef, read_definition

#: in a staged package: the resolved definition and the module whose ``topology()`` a worker calls
RESOLVED_FILE: Final = "storm_py_flux_topology.json"
ENTRY_MODULE: Final = "storm_py_flux_entry"
ENTRY_SOURCE: Final = '''"""Builds this package's Flux topology from its resolved definition."""

from pathlib import Path

from storm_py.flux.resolved import topology_from_folder


def topology():
    return topology_from_folder(Path(__file__).resolve().parent)
'''


def _object(obj: ObjectDef) -> dict[str, Any]:
    out: dict[str, Any] = {"className": obj.class_name}
    if obj.constructor_args is not None:
        out["constructorArgs"] = obj.constructor_args
    if obj.factory is not None:
        out["factory"] = obj.factory
    if obj.factory_args is not None:
        out["factoryArgs"] = obj.factory_args
    if obj.properties:
        out["properties"] = [{"name": p.name, "ref": p.ref} if p.ref is not None else {"name": p.name, "value": p.value}
                             for p in obj.properties]
    if obj.config_methods:
        out["configMethods"] = [{"name": m.name, **({"args": m.args} if m.args is not None else {})}
                                for m in obj.config_methods]
    return out


def _bean(bean: BeanDef) -> dict[str, Any]:
    return {"id": bean.id, **_object(bean)}


def _vertex(v: VertexDef) -> dict[str, Any]:
    out = {**_bean(v), "parallelism": v.parallelism}
    if v.num_tasks is not None:
        out["numTasks"] = v.num_tasks
    if v.config:
        out["config"] = v.config
    for attr, key in (("on_heap_memory_load", "onHeapMemoryLoad"), ("off_heap_memory_load", "offHeapMemoryLoad"),
                      ("cpu_load", "cpuLoad")):
        if getattr(v, attr) is not None:
            out[key] = getattr(v, attr)
    return out


def _stream(s: StreamDef) -> dict[str, Any]:
    g: dict[str, Any] = {"type": s.grouping.type}
    if s.grouping.args is not None:
        g["args"] = s.grouping.args
    if s.grouping.stream_id is not None:
        g["streamId"] = s.grouping.stream_id
    if s.grouping.custom_class is not None:
        g["customClass"] = _object(s.grouping.custom_class)
    return {"from": s.from_, "to": s.to, "grouping": g, **({"name": s.name} if s.name is not None else {})}


def to_model(td: TopologyDef) -> dict[str, Any]:
    """``td`` as Storm's YAML model (no includes: they are merged already)."""
    out: dict[str, Any] = {"name": td.name, "config": td.config}
    if td.components:
        out["components"] = [_bean(c) for c in td.components]
    if td.spouts:
        out["spouts"] = [_vertex(s) for s in td.spouts]
    if td.bolts:
        out["bolts"] = [_vertex(b) for b in td.bolts]
    if td.streams:
        out["streams"] = [_stream(s) for s in td.streams]
    if td.worker_hooks:
        out["workerHooks"] = [_bean(h) for h in td.worker_hooks]
    if td.topology_source is not None:
        out["topologySource"] = {**_object(td.topology_source), "methodName": td.topology_source.method_name}
    return out


def stage(td: TopologyDef, folder: Path) -> str:
    """Write the resolved definition and the entry module into the package folder ``folder``; the entry point."""
    (folder / RESOLVED_FILE).write_text(json.dumps(to_model(td), indent=1), encoding="utf-8")
    (folder / f"{ENTRY_MODULE}.py").write_text(ENTRY_SOURCE, encoding="utf-8")
    return f"{ENTRY_MODULE}:topology"


def topology_from_folder(folder: Path) -> StormTopology:
    """The topology of the resolved definition in the unpacked package ``folder`` (shell components run in its
    ``resources/``, or in the folder itself when it has none)."""
    path = folder / RESOLVED_FILE
    td = read_definition(json.loads(path.read_text(encoding="utf-8")), str(path))
    shell_dir = folder / RESOURCES if (folder / RESOURCES).is_dir() else folder
    return build(td, working_dir=shell_dir).topology
