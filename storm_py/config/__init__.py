"""Configuration: the declared defaults (:mod:`storm_py.config.keys`), config files, ``-c key=value`` overrides,
their validation against the key table, and the merges of topology and component confs.

Storm's order holds: defaults < ``conf/storm.yaml`` (or ``--config FILE``) < command line < topology conf <
component conf.  Only Storm's whitelisted keys (plus any non-Storm key) may be overridden per component.
"""

from __future__ import annotations

import copy
import difflib
import functools
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from storm_py.config.keys import (
    BOOL,
    INT,
    INT_OR_MAP,
    KEYS,
    LIST,
    MAP,
    MAP_OR_JSON,
    NUMBER,
    PASS_THROUGH_COMPONENT_KEYS,
    PORTS,
    STR,
    STRS,
    Key,
    all_keys,
)
from storm_py.errors import ConfigError

log = logging.getLogger(__name__)

#: Storm keys a component's configuration may override (``Executor.normalizedComponentConf`` in Storm).
COMPONENT_WHITELIST = frozenset({k.name for k in all_keys() if k.per_component} | PASS_THROUGH_COMPONENT_KEYS)

#: Key prefixes that belong to Storm itself (a key with one of them must be whitelisted to vary per component).
_STORM_PREFIXES = (
    "topology.", "storm.", "nimbus.", "supervisor.", "worker.", "ui.", "logviewer.", "transactional.", "drpc.",
)


@functools.cache
def _defaults() -> dict[str, Any]:
    return {k.name: k.default for k in all_keys()}


def defaults() -> dict[str, Any]:
    """A fresh copy of the declared defaults (``keys.py``; ``defaults.yaml`` is rendered from it)."""
    return copy.deepcopy(_defaults())


def defaults_of(names: Iterable[str]) -> dict[str, Any]:
    """The declared defaults of the keys ``names`` (a ``KeyError`` names an undeclared one)."""
    every = _defaults()
    return {name: copy.deepcopy(every[name]) for name in names}


def read_yaml_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a YAML config file; an empty file is an empty config."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read config file {p}: {err.strerror}", path=str(p)) from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"config file {p} is not valid YAML: {err}", path=str(p)) from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {p} must hold a mapping of keys to values", path=str(p))
    return {str(k): v for k, v in data.items()}


def parse_override(text: str) -> tuple[str, Any]:
    """Parse one ``key=value`` command-line override; the value is read as YAML (``-c topology.workers=2``)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"config override {text!r} is not of the form key=value", override=text)
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as err:
        raise ConfigError(f"value of config override {key!r} is not valid YAML: {raw!r}", key=key) from err
    return key, value


def read_storm_config(
    config_file: str | os.PathLike[str] | None = None,
    overrides: Iterable[str] | Mapping[str, Any] = (),
    search_dirs: Iterable[str | os.PathLike[str]] = ("conf",),
) -> dict[str, Any]:
    """Defaults < ``config_file`` (else the first ``storm.yaml`` in ``search_dirs``) < overrides."""
    conf = defaults()
    path = config_file
    if path is None:
        path = next((c for c in (Path(d) / "storm.yaml" for d in search_dirs) if c.is_file()), None)
    if path is not None:
        from_file = read_yaml_file(path)
        warn_unknown_topology_keys(from_file, source=f"in config file {path}")
        conf.update(from_file)
    items = list(overrides.items()) if isinstance(overrides, Mapping) else (parse_override(o) for o in overrides)
    given = dict(items)
    if not isinstance(overrides, Mapping):
        warn_unknown_topology_keys(given)
    conf.update(given)
    validate(conf)
    return conf


def validate(conf: Mapping[str, Any], what: str = "config") -> None:
    """Check every declared key present in ``conf`` against the table; raise :class:`ConfigError` naming the
    first bad key.  Keys the table does not know are left alone (users' own keys)."""
    for name, value in conf.items():
        key = KEYS.get(name)
        if key is not None:
            problem = _problem(key, value)
            if problem is not None:
                raise ConfigError(f"{what} key {name!r} {problem}, got {value!r}", key=name, value=repr(value))


def _problem(key: Key, value: Any) -> str | None:
    """Why ``value`` is not allowed for ``key`` (None when it is)."""
    if value is None:
        return None if key.nullable else "must not be null"
    kind = key.kind
    if kind in (INT, NUMBER):
        noun = "an integer" if kind == INT else "a number"
        if not isinstance(value, (int, float)) or isinstance(value, bool) or (kind == INT and isinstance(value, float)):
            return f"must be {noun}"
        if key.min is not None and value < key.min:
            return f"must be {noun} >= {_num(key.min)}"
        if key.max is not None and value > key.max:
            return f"must be {noun} <= {_num(key.max)}"
    elif kind == STR and not isinstance(value, str):
        return "must be a string"
    elif kind == STRS and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return "must be a list of strings"
    elif kind == PORTS and not (
        isinstance(value, list)
        and all(isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 for p in value)
    ):
        return "must be a list of ports (1..65535)"
    elif kind == BOOL and not isinstance(value, bool):
        return "must be true or false"
    elif kind == LIST and not isinstance(value, list):
        return "must be a list"
    elif kind == MAP and not isinstance(value, dict):
        return "must be a mapping"
    elif kind == MAP_OR_JSON and not isinstance(value, (dict, str)):
        return "must be a mapping or a JSON object in a string"
    elif kind == INT_OR_MAP:
        return _int_or_map_problem(key, value)
    if key.choices is not None and value not in key.choices:
        return f"must be one of {', '.join(map(repr, key.choices))}"
    return None


def _int_or_map_problem(key: Key, value: Any) -> str | None:
    """Why ``value`` is not an integer (at least ``key.min``) or a mapping of names to such integers."""
    low = int(key.min) if key.min is not None else None

    def bad(n: Any) -> bool:
        return not isinstance(n, int) or isinstance(n, bool) or (low is not None and n < low)

    if isinstance(value, dict):
        wrong = next((k for k, n in value.items() if not isinstance(k, str) or bad(n)), None)
        return None if wrong is None else f"must map names to integers >= {low}, and {wrong!r} does not"
    return f"must be an integer >= {low} or a mapping {{name: integer}}" if bad(value) else None


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def closest_key(name: str) -> str | None:
    """The declared key closest to ``name`` (for "did you mean" hints), or None when nothing is close."""
    found = difflib.get_close_matches(name, list(KEYS), n=1, cutoff=0.6)
    return found[0] if found else None


def warn_unknown_topology_keys(names: Iterable[str], source: str = "given with -c") -> list[str]:
    """Log a warning for each ``topology.*`` key storm_py does not know, with the closest known key; return
    the warnings (a misspelt key would otherwise be silently ignored).  ``source`` says where it was given
    (``-c`` or a config file)."""
    out = []
    for name in names:
        if name.startswith("topology.") and name not in KEYS and name not in PASS_THROUGH_COMPONENT_KEYS:
            hint = closest_key(name)
            msg = f"unknown config key {name!r} {source}" + (f"; did you mean {hint!r}?" if hint else "")
            log.warning("%s", msg)
            out.append(msg)
    return out


def merge_registrations(topology_conf: Mapping[str, Any], component_confs: Iterable[Mapping[str, Any] | None]
                        ) -> dict[str, Any]:
    """Storm's submit-time merge of ``topology.kryo.register`` and ``topology.kryo.decorators``.

    Registrations (a list of names and one-entry ``{name: serializer}`` maps) become one map: every
    component's entries first, the topology's last, so the topology wins on conflict.  Decorators become the
    union of all lists.  Nothing changes when no component and not the topology sets either key.
    """
    confs = [c for c in component_confs if c]
    register_key, decorators_key = "topology.kryo.register", "topology.kryo.decorators"
    if not any(register_key in c or decorators_key in c for c in [*confs, topology_conf]):
        return dict(topology_conf)
    registrations: dict[str, Any] = {}
    decorators: list[str] = []
    for c in [*confs, topology_conf]:
        for entry in _as_list(c.get(register_key), register_key):
            if isinstance(entry, dict):
                registrations.update({str(k): v for k, v in entry.items()})
            else:
                registrations[str(entry)] = None
        for d in _as_list(c.get(decorators_key), decorators_key):
            if d not in decorators:
                decorators.append(str(d))
    merged = dict(topology_conf)
    merged[register_key] = [{k: v} if v is not None else k for k, v in registrations.items()]
    merged[decorators_key] = decorators
    return merged


def _as_list(value: Any, key: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, dict):
        return [value]
    if not isinstance(value, list):
        raise ConfigError(f"config key {key!r} must be a list, got {value!r}", key=key)
    return value


def merge_component_conf(topology_conf: Mapping[str, Any], component_conf: Mapping[str, Any] | None) -> dict[str, Any]:
    """The configuration a component sees: topology conf plus its own whitelisted (or non-Storm) keys."""
    merged = dict(topology_conf)
    if component_conf:
        for k, v in component_conf.items():
            if k in COMPONENT_WHITELIST or not k.startswith(_STORM_PREFIXES):
                merged[k] = v
    return merged
