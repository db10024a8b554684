"""This module owns reading Flux files (Storm's ``FluxParser``): ``${...}`` substitution, Java properties files,
resources found on ``sys.path``, includes with Storm's merge rules, and the structural checks of a definition.

Substitution is textual, line by line, before YAML parsing: ``${key}`` and ``${key[i]}`` from the properties,
``${ENV-NAME}`` from the environment when the env filter is on; a placeholder with no value is left as written and
named in a warning on the logger ``storm_py.flux``.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from storm_py.flux.model import BeanDef, FluxError, ObjectDef, TopologyDef, flux_error, read_definition

log = logging.getLogger("storm_py.flux")

_PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")
_INDEXED = re.compile(r"^(.+)\[(\d+)\]$")
ENV_PREFIX = "ENV-"


# ------------------------------------------------------------------------------------------------ substitution


def substitute(text: str, properties: Mapping[str, str] | None, env_filter: bool,
               environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every placeholder that has a value replaced (see the module's docstring)."""
    props = properties or {}
    env = os.environ if environ is None else environ

    def value_of(match: re.Match[str]) -> str:
        key = match.group(1)
        if key.startswith(ENV_PREFIX) and env_filter:
            found = env.get(key[len(ENV_PREFIX):])
            if found is not None:
                return found
        elif key in props:
            return str(props[key])
        else:
            indexed = _INDEXED.match(key)
            if indexed and indexed.group(1) in props:
                element = _list_element(props[indexed.group(1)], int(indexed.group(2)))
                if element is not None:
                    return element
        log.warning("no value for the placeholder %s: it is left as written", match.group(0))
        return match.group(0)

    return "".join(_PLACEHOLDER.sub(value_of, line) for line in text.splitlines(keepends=True))


def _list_element(text: str, index: int) -> str | None:
    try:
        values = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if isinstance(values, list) and 0 <= index < len(values):
        return str(values[index])
    return None


def parse_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """A Java ``.properties`` file: ``key=value``, ``key: value`` or ``key value``; ``#``/``!`` comments; a ``\\``
    at the end of a line continues it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise FluxError(f"cannot read the properties file {os.fspath(path)}: {err.strerror or err}",
                        file=os.fspath(path)) from err
    out: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        line = line.lstrip()
        if not line or line[0] in "#!":
            continue
        while line.endswith("\\") and not line.endswith("\\\\"):
            line = line[:-1] + next(lines, "").lstrip()
        match = re.match(r"((?:\\.|[^=:\s\\])*)\s*[=:\s]?\s*(.*)$", line)
        if match is None:  # pragma: no cover - the pattern matches every line
            continue
        key = re.sub(r"\\(.)", r"\1", match.group(1))
        out[key] = match.group(2).rstrip()
    return out


# ------------------------------------------------------------------------------------------------ files, resources


@dataclass(frozen=True)
class _Text:
    """A definition's text and how errors name it (a path, or ``resource NAME``)."""

    text: str
    label: str
    folder: Path | None


def _read_file(path: Path, label: str) -> _Text:
    try:
        return _Text(path.read_text(encoding="utf-8"), label, path.resolve().parent)
    except OSError as err:
        raise FluxError(f"{label}: cannot read it: {err.strerror or err}", file=label) from err


def read_resource(name: str, search: list[str] | None = None) -> tuple[str, str] | None:
    """The text of resource ``name`` from the first ``sys.path`` entry (folder, zip or wheel) holding it, with
    where it was found; None when none holds it."""
    rel = name.lstrip("/")
    for entry in search if search is not None else sys.path:
        base = Path(entry or ".")
        if base.is_dir():
            candidate = base / rel
            if candidate.is_file():
                return candidate.read_text(encoding="utf-8"), str(candidate)
        elif base.is_file() and zipfile.is_zipfile(base):
            with zipfile.ZipFile(base) as z:
                if rel in z.namelist():
                    return z.read(rel).decode("utf-8"), f"{base}!/{rel}"
    return None


def _resource(name: str) -> _Text:
    found = read_resource(name)
    if found is None:
        raise FluxError(f"resource {name}: not found on the import path", file=f"resource {name}")
    text, where = found
    folder = Path(where).parent if "!/" not in where else None
    return _Text(text, f"resource {name}", folder)


def _load_yaml(doc: _Text, properties: Mapping[str, str] | None, env_filter: bool) -> TopologyDef:
    text = substitute(doc.text, properties, env_filter)
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.MarkedYAMLError as err:
        line = f" at line {err.problem_mark.line + 1}" if err.problem_mark is not None else ""
        problem = err.problem or str(err).splitlines()[0]
        raise FluxError(f"{doc.label}: invalid YAML{line}: {problem}", file=doc.label) from err
    except yaml.YAMLError as err:
        raise FluxError(f"{doc.label}: invalid YAML: {str(err).splitlines()[0]}", file=doc.label) from err
    if len(docs) > 1:
        raise FluxError(f"{doc.label}: holds {len(docs)} YAML documents, a definition is one", file=doc.label)
    return read_definition(docs[0] if docs else None, doc.label)


# ------------------------------------------------------------------------------------------------ includes


def _include_target(including: _Text, file: str, resource: bool) -> tuple[_Text, str]:
    """The included text and a key naming it for cycle detection."""
    if resource:
        doc = _resource(file)
        return doc, doc.label
    path = Path(file)
    candidates = [path] if path.is_absolute() else (
        ([including.folder / path] if including.folder is not None else []) + [Path.cwd() / path])
    for candidate in candidates:
        if candidate.is_file():
            return _read_file(candidate, str(candidate)), str(candidate.resolve())
    raise FluxError(f"{including.label}: the included file {file} does not exist", file=including.label)


def _process_includes(td: TopologyDef, doc: _Text, properties: Mapping[str, str] | None, env_filter: bool,
                      chain: list[str]) -> None:
    for inc in td.includes:
        inc_doc, key = _include_target(doc, inc.file, inc.resource)
        if key in chain:
            cycle = " -> ".join([*chain[chain.index(key):], key])
            raise FluxError(f"{doc.label}: includes form a cycle: {cycle}", file=doc.label)
        included = _load_yaml(inc_doc, properties, env_filter)
        _process_includes(included, inc_doc, properties, env_filter, [*chain, key])
        _merge(td, included, inc.override)


def _merge_by_id(mine: list[Any], theirs: list[Any], override: bool) -> None:
    for item in theirs:
        at = next((i for i, m in enumerate(mine) if m.id == item.id), None)
        if at is None:
            mine.append(item)
        elif override:
            mine[at] = item


def _merge(td: TopologyDef, inc: TopologyDef, override: bool) -> None:
    """Storm's include rules: the including file's parts win unless ``override``; streams are appended."""
    if inc.name is not None and (td.name is None or override):
        td.name = inc.name
    for key, value in inc.config.items():
        if key not in td.config or override:
            td.config[key] = value
            td.config_sources[key] = inc.config_sources.get(key, inc.source)
    _merge_by_id(td.components, inc.components, override)
    _merge_by_id(td.spouts, inc.spouts, override)
    _merge_by_id(td.bolts, inc.bolts, override)
    _merge_by_id(td.worker_hooks, inc.worker_hooks, override)
    td.streams.extend(inc.streams)
    if inc.topology_source is not None and (td.topology_source is None or override):
        td.topology_source = inc.topology_source


# ------------------------------------------------------------------------------------------------ checks


def references_of(obj: ObjectDef) -> list[str]:
    """The component ids an object's arguments and properties refer to, in order."""
    refs: list[str] = []
    arg_lists = [obj.constructor_args, obj.factory_args, *(m.args for m in obj.config_methods)]
    for args in arg_lists:
        for arg in args or []:
            if isinstance(arg, Mapping) and len(arg) == 1 and "ref" in arg:
                refs.append(str(arg["ref"]))
            elif isinstance(arg, Mapping) and len(arg) == 1 and "reflist" in arg:
                items = arg["reflist"]
                refs.extend(str(i) for i in (items if isinstance(items, list) else [items]))
    refs.extend(p.ref for p in obj.properties if p.ref is not None)
    return refs


def _unique(items: list[BeanDef], what: str) -> None:
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise flux_error(item.source, f"{what} id {item.id!r} is used twice", item.id)
        seen.add(item.id)


def check_definition(td: TopologyDef) -> None:
    """Storm's structural rules (see the package's docstring); raise :class:`FluxError` naming what is wrong."""
    if td.name is None:
        raise flux_error(td.source, "the topology has no 'name'")
    _unique(td.components, "component")
    _unique([*td.spouts, *td.bolts], "spout and bolt")
    _unique(td.worker_hooks, "worker hook")
    if td.topology_source is not None:
        if td.spouts or td.bolts or td.streams:
            raise flux_error(td.source, "a definition has either a 'topologySource' or spouts, bolts and streams, "
                             "not both", "topologySource")
    elif not td.spouts:
        raise flux_error(td.source, "the topology has no spouts (and no 'topologySource')")
    known = {c.id for c in td.components}
    objects: list[ObjectDef] = [*td.components, *td.spouts, *td.bolts, *td.worker_hooks]
    objects += [s.grouping.custom_class for s in td.streams if s.grouping.custom_class is not None]
    if td.topology_source is not None:
        objects.append(td.topology_source)
    for obj in objects:
        for ref in references_of(obj):
            if ref not in known:
                raise flux_error(obj.source, f"refers to component {ref!r}, which is not defined", obj.label)
    vertices = {v.id for v in [*td.spouts, *td.bolts]}
    bolts = {b.id for b in td.bolts}
    fed: set[str] = set()
    for s in td.streams:
        if s.from_ not in vertices:
            raise flux_error(s.source, f"stream {s.from_} --> {s.to}: {s.from_!r} is no spout or bolt", s.to)
        if s.to not in bolts:
            raise flux_error(s.source, f"stream {s.from_} --> {s.to}: {s.to!r} is no bolt", s.to)
        fed.add(s.to)
    for b in td.bolts:
        if b.id not in fed:
            raise flux_error(b.source, "no stream goes into this bolt", b.id)


# ------------------------------------------------------------------------------------------------ entry points


def _parse(doc: _Text, key: str, properties: Mapping[str, str] | None, env_filter: bool,
           process_includes: bool) -> TopologyDef:
    td = _load_yaml(doc, properties, env_filter)
    if process_includes:
        _process_includes(td, doc, properties, env_filter, [key])
        td.includes = []
    if process_includes or not td.includes:
        check_definition(td)
    return td


def parse_file(path: str | os.PathLike[str], properties: Mapping[str, str] | None = None, env_filter: bool = False,
               process_includes: bool = True) -> TopologyDef:
    """Storm's ``FluxParser.parseFile``: read, substitute, process includes, check; no class is imported."""
    p = Path(path)
    if not p.is_file():
        raise FluxError(f"{os.fspath(path)}: no such file", file=os.fspath(path))
    return _parse(_read_file(p, os.fspath(path)), str(p.resolve()), properties, env_filter, process_includes)


def parse_resource(name: str, properties: Mapping[str, str] | None = None, env_filter: bool = False,
                   process_includes: bool = True) -> TopologyDef:
    """Storm's ``FluxParser.parseResource``: ``name`` read from the first ``sys.path`` entry holding it."""
    doc = _resource(name)
    return _parse(doc, doc.label, properties, env_filter, process_includes)


def load(path: str | os.PathLike[str], properties_file: str | os.PathLike[str] | None = None, env_filter: bool = False,
         resource: bool = False) -> TopologyDef:
    """``parse_properties`` and ``parse_file`` (or ``parse_resource``) in one call."""
    properties = parse_properties(properties_file) if properties_file is not None else None
    if resource:
        return parse_resource(os.fspath(path), properties, env_filter)
    return parse_file(path, properties, env_filter)
