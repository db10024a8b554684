"""This module owns turning a streamparse ``Topology`` class into a storm_py topology, as Storm reads the Thrift
``StormTopology`` streamparse would submit.

Each component spec becomes a multilang :class:`ShellBolt`/:class:`ShellSpout` whose process is the spec's shell
command and script split on whitespace (Storm's ``ShellComponent``; for Python components ``streamparse_run
[-s SERIALIZER] module.Class``), run in the project's ``src/`` folder, with the spec's output streams (direct ones
included), parallelism, component config and inputs.  Groupings map one to one; a custom grouping is honoured when
it is Python: ``Grouping.custom_object("module.Class", args)`` naming a :class:`CustomStreamGrouping` subclass, or
``Grouping.custom_serialized(pickle.dumps(grouping))``.  Java components and Java groupings are refused, naming
the component and the Java class, before anything runs.  :func:`write_quickstart` writes streamparse's quickstart
project with the installed streamparse's own templates (what ``sparse quickstart`` writes, without its Leiningen
check).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import pickle
import sys
from pathlib import Path
from typing import Any

from storm_py.api.components import CustomStreamGrouping, OutputFieldsDeclarer
from storm_py.api.topology import BoltDeclarer, StormTopology, TopologyBuilder
from storm_py.errors import TopologyLoadError
from storm_py.multilang import ShellBolt, ShellSpout

#: streamparse's serializer names as the multilang serializer key's values
SERIALIZER_KEY = "topology.multilang.serializer"


class _Outputs:
    """The declared output streams of a translated component: ``{stream: (fields, direct)}``."""

    outputs: dict[str, tuple[list[str], bool]]

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        for stream, (fields, direct) in self.outputs.items():
            declarer.declare_stream(stream, fields, direct=direct)


class SparseShellBolt(_Outputs, ShellBolt):
    """A streamparse bolt spec run as on Storm: its shell command in the project's ``src/``."""

    def __init__(self, argv: list[str], outputs: dict[str, tuple[list[str], bool]], working_dir: str) -> None:
        super().__init__(argv[0], *argv[1:])
        self.outputs = outputs
        self.working_dir = working_dir


class SparseShellSpout(_Outputs, ShellSpout):
    """A streamparse spout spec run as on Storm: its shell command in the project's ``src/``."""

    def __init__(self, argv: list[str], outputs: dict[str, tuple[list[str], bool]], working_dir: str) -> None:
        super().__init__(argv[0], *argv[1:])
        self.outputs = outputs
        self.working_dir = working_dir


def load_topology_class(topology_file: Path, src: Path) -> Any:
    """Import ``topologies/NAME.py`` (with ``src/`` importable, as streamparse does) and return its Topology."""
    try:
        from streamparse.dsl.topology import Topology, TopologyType
    except ImportError as err:
        raise TopologyLoadError("streamparse is not installed (pip install streamparse)", path=str(topology_file)) \
            from err
    for folder in (str(src), str(topology_file.parent)):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    module_name = f"_streamparse_topology_{topology_file.stem}"
    spec = importlib.util.spec_from_file_location(module_name, topology_file)
    if spec is None or spec.loader is None:
        raise TopologyLoadError(f"{topology_file}: cannot be imported", path=str(topology_file))
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        raise TopologyLoadError(f"{topology_file}: {type(err).__name__}: {err}", path=str(topology_file)) from err
    for value in vars(module).values():
        if isinstance(value, TopologyType) and value is not Topology:
            return value
    raise TopologyLoadError(f"{topology_file}: defines no streamparse Topology subclass", path=str(topology_file))


def refuse_java(topology_class: Any) -> None:
    """Raise naming the first Java component or Java grouping: storm_py runs no JVM code."""
    for spec in topology_class.specs:
        obj = spec.component_object
        if obj.shell is None:
            java = obj.java_object.full_class_name if obj.java_object is not None else "a serialized Java object"
            raise TopologyLoadError(
                f"component {spec.name!r} is a Java component ({java}): storm_py runs no Java code",
                component=spec.name, java_class=java,
            )


def _argv(spec: Any, serializer: str | None) -> list[str]:
    shell = spec.component_object.shell
    script = str(shell.script or "")
    if serializer is not None:  # as streamparse's set_topology_serializer
        script = f"-s {serializer} {script}"
    argv = f"{shell.execution_command} {script}".split()
    if not argv:
        raise TopologyLoadError(f"component {spec.name!r} has an empty command", component=spec.name)
    return argv


def _outputs(spec: Any) -> dict[str, tuple[list[str], bool]]:
    return {name: (list(info.output_fields or []), bool(info.direct)) for name, info in spec.outputs.items()}


def _par(spec: Any) -> int:
    if not isinstance(spec.par, int):
        raise TopologyLoadError(
            f"component {spec.name!r}: a parallelism per environment ({spec.par!r}) needs streamparse's envs, "
            "which storm_py ignores; give an int", component=spec.name)
    return spec.par


def _python_grouping(spec: Any, grouping: Any) -> CustomStreamGrouping:
    if grouping.custom_serialized is not None:
        try:
            obj = pickle.loads(grouping.custom_serialized)
        except Exception as err:
            raise TopologyLoadError(
                f"component {spec.name!r}: its custom_serialized grouping is not a pickled Python grouping "
                "(a Java grouping cannot run)", component=spec.name) from err
        name = type(obj).__name__
    else:
        from streamparse.dsl.util import to_python_arg_list

        name = grouping.custom_object.full_class_name
        module, _, cls_name = name.rpartition(".")
        try:
            cls = getattr(importlib.import_module(module), cls_name)
        except (ImportError, AttributeError, ValueError) as err:
            raise TopologyLoadError(
                f"component {spec.name!r}: custom grouping {name} is not a Python class (a Java grouping "
                "cannot run)", component=spec.name, java_class=name) from err
        obj = cls(*to_python_arg_list(grouping.custom_object.args_list))
    if not isinstance(obj, CustomStreamGrouping):
        raise TopologyLoadError(f"component {spec.name!r}: custom grouping {name} is not a CustomStreamGrouping",
                                component=spec.name)
    return obj


def _subscribe(declarer: BoltDeclarer, spec: Any) -> None:
    for stream_id, grouping in spec.inputs.items():
        source, stream = str(stream_id.componentId), str(stream_id.streamId)
        if grouping.fields is not None:
            if grouping.fields:
                declarer.fields_grouping(source, list(grouping.fields), stream)
            else:
                declarer.global_grouping(source, stream)
        elif grouping.shuffle is not None:
            declarer.shuffle_grouping(source, stream)
        elif grouping.all is not None:
            declarer.all_grouping(source, stream)
        elif grouping.none is not None:
            declarer.none_grouping(source, stream)
        elif grouping.direct is not None:
            declarer.direct_grouping(source, stream)
        elif grouping.local_or_shuffle is not None:
            declarer.local_or_shuffle_grouping(source, stream)
        elif grouping.custom_object is not None or grouping.custom_serialized is not None:
            declarer.custom_grouping(source, _python_grouping(spec, grouping), stream)
        else:
            raise TopologyLoadError(f"component {spec.name!r}: unsupported grouping {grouping!r} on {source}",
                                    component=spec.name)


def _in_process_target(argv: list[str], src: Path) -> str | None:
    """``module.Class`` when ``argv`` is ``streamparse_run [-s X] module.Class`` of a class that can run
    in-process; None otherwise (the component keeps its process)."""
    from storm_py.streamparse.inprocess import runs_in_process

    if not argv or Path(argv[0]).name != "streamparse_run" or argv[-1].startswith("-"):
        return None
    return argv[-1] if runs_in_process(argv[-1], str(src)) else None


def build_topology(topology_class: Any, src: Path, serializer: str | None, in_process: bool = False) -> StormTopology:
    """The storm_py topology of a streamparse ``Topology`` class; ``serializer`` is config.json's (or None).

    ``in_process`` runs pystorm bolts and spouts inside the executors (:mod:`storm_py.streamparse.inprocess`)."""
    from streamparse.dsl.bolt import ShellBoltSpec

    from storm_py.streamparse.inprocess import InProcessPystormBolt, InProcessPystormSpout

    refuse_java(topology_class)
    builder = TopologyBuilder()
    for spec in topology_class.specs:
        argv, outputs, conf = _argv(spec, serializer), _outputs(spec), json.loads(spec.config or "{}")
        target = _in_process_target(argv, src) if in_process else None
        if isinstance(spec, ShellBoltSpec):
            obj: Any = (SparseShellBolt(argv, outputs, str(src)) if target is None
                        else InProcessPystormBolt(target, str(src), outputs))
            bolt = builder.set_bolt(spec.name, obj, _par(spec))
            _subscribe(bolt, spec)
            if conf:
                bolt.add_configurations(conf)
        else:
            obj = (SparseShellSpout(argv, outputs, str(src)) if target is None
                   else InProcessPystormSpout(target, str(src), outputs))
            spout = builder.set_spout(spec.name, obj, _par(spec))
            if conf:
                spout.add_configurations(conf)
    return builder.create_topology()


def topology_conf(topology_class: Any, options: dict[str, Any], serializer: str | None,
                  overrides: dict[str, Any]) -> dict[str, Any]:
    """Storm options as streamparse resolves them: config.json's ``options`` < the Topology's ``config`` <
    ``-o``; config.json's ``serializer`` sets the multilang serializer unless an option does."""
    conf: dict[str, Any] = {}
    if serializer is not None:
        conf[SERIALIZER_KEY] = serializer
    conf.update(options)
    conf.update(topology_class.config or {})
    conf.update(overrides)
    return conf


def write_quickstart(name: str, directory: Path) -> Path:
    """streamparse's quickstart project ``name`` written in ``directory`` by the installed streamparse (its own
    templates and layout); the project's folder.  A name that is not a folder name, or a folder already there, is
    refused."""
    try:
        from streamparse.bootstrap import quickstart
    except ImportError as exc:
        raise TopologyLoadError(f"streamparse is not installed here ({exc}): pip install streamparse") from exc
    if not name or name in (".", "..") or os.sep in name or "/" in name:
        raise TopologyLoadError(f"a project name must be a folder name, got {name!r}")
    root = directory / name
    if os.path.lexists(root):
        raise TopologyLoadError(f"{str(root)!r} already exists")
    with contextlib.chdir(directory):  # streamparse writes the project in the working directory
        quickstart(name)
    return root
