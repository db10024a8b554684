"""This module owns what a shell component tells its process at the start: the handshake and the working directory.

The handshake is Storm 2.x's: ``{"conf": ..., "pidDir": ..., "context": ...}`` where the context carries the keys
of Storm's ``TopologyContext.toJSONString`` (``taskid``, ``task->component``, ``componentid``, ``streams``,
``stream->outputfields``, ``stream->target->grouping``, ``source->stream->grouping``, ``source->stream->fields``),
groupings written as Storm's Thrift names (``{"type": "fields", "fields": [...]}``, ``shuffle``, ``all``, ...).
System components and streams (the acker's) are left out, as from Storm's raw topology; ``task->component`` has
every task.  The process answers ``{"pid": N}`` and writes a file named ``N`` into ``pidDir``.

The working directory is the topology package's ``resources/`` folder: the ``resources/`` beside the module that
built the component, or beside a package above it (the unpacked topology package on a cluster; the project
folder under ``LocalCluster`` and ``storm-py local``); the current directory when there is none.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

from storm_py.api.context import GroupingView, TopologyContext
from storm_py.api.topology import ALL, CUSTOM, DIRECT, FIELDS, GLOBAL, LOCAL_OR_SHUFFLE, NONE, PARTIAL_KEY

RESOURCES = "resources"

#: storm_py's grouping kinds as Storm's Thrift ``Grouping`` field names (global is fields on no field, and
#: partial-key and custom groupings are serialized objects in Storm)
_THRIFT_NAMES = {
    FIELDS: "fields", GLOBAL: "fields", ALL: "all", NONE: "none", DIRECT: "direct",
    LOCAL_OR_SHUFFLE: "local_or_shuffle", PARTIAL_KEY: "custom_serialized", CUSTOM: "custom_serialized",
}


def grouping_json(grouping: GroupingView) -> dict[str, Any]:
    """A grouping as Storm writes it into a shell component's context."""
    out: dict[str, Any] = {"type": _THRIFT_NAMES.get(grouping.kind, grouping.kind)}
    if grouping.kind == FIELDS:
        out["fields"] = list(grouping.fields or [])
    elif grouping.kind == GLOBAL:
        out["fields"] = []
    return out


def context_json(context: TopologyContext) -> dict[str, Any]:
    """The ``context`` of the handshake, with Storm 2.x's keys."""
    me = context.this_component_id
    streams = _user_streams(context, me)
    out: dict[str, Any] = {
        "taskid": context.this_task_id,
        "componentid": me,
        "task->component": {str(t): c for t, c in sorted(context.get_task_to_component().items())},
        "streams": streams,
        "stream->outputfields": {s: list(context.get_component_output_fields(me, s)) for s in streams},
    }
    targets: dict[str, dict[str, Any]] = {}
    sources: dict[str, dict[str, Any]] = {}
    source_fields: dict[str, dict[str, list[str]]] = {}
    topology = context.topology
    if topology is not None:
        for cid, spec in sorted(topology.components().items()):
            for (source, stream), grouping in spec.inputs.items():
                if _system(cid) or _system(source) or _system(stream):
                    continue
                if source == me:
                    targets.setdefault(stream, {})[cid] = grouping_json(grouping)
                if cid == me:
                    sources.setdefault(source, {})[stream] = grouping_json(grouping)
        for source in sources:
            source_fields[source] = {
                s: list(context.get_component_output_fields(source, s)) for s in _user_streams(context, source)
            }
    out["stream->target->grouping"] = targets
    out["source->stream->grouping"] = sources
    out["source->stream->fields"] = source_fields
    return out


def _system(name: str) -> bool:
    """Whether a component or stream id is the system's (``__acker``, ``__ack_ack``, ...): Storm's raw topology,
    which these keys describe, has none."""
    return name.startswith("__")


def _user_streams(context: TopologyContext, component_id: str) -> list[str]:
    return [s for s in context.get_component_streams(component_id) if not _system(s)]


def handshake(conf: dict[str, Any], context: TopologyContext, pid_dir: str) -> dict[str, Any]:
    """The first message to the process."""
    return {"conf": conf, "pidDir": pid_dir, "context": context_json(context)}


def caller_file(skip: object) -> str | None:
    """The source file of the code that constructs ``skip`` (the first frame outside its own ``__init__`` chain)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_locals.get("self") is skip:
        frame = frame.f_back
    if frame is None:
        return None
    name = frame.f_globals.get("__file__")
    return str(name) if isinstance(name, str) else None


def resources_dir(origin: str | None) -> Path:
    """The working directory of a shell component built in the module ``origin`` (see the module's docstring)."""
    if origin:
        folder = Path(origin).resolve().parent
        while True:
            candidate = folder / RESOURCES
            if candidate.is_dir():
                return candidate
            if not (folder / "__init__.py").is_file() or folder.parent == folder:
                break
            folder = folder.parent
    return Path.cwd()
