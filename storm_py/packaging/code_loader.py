"""This module owns turning ``MODULE:FUNCTION`` (from a directory, a wheel or the import path) into a topology.

The function is called with the topology conf when it takes one argument, with none otherwise, and must
return a :class:`StormTopology`.  Every failure is a :class:`TopologyLoadError` naming what is wrong.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from storm_py.api.topology import StormTopology
from storm_py.errors import TopologyLoadError


def parse_entry(entry: str) -> tuple[str, str]:
    """Split ``MODULE:FUNCTION``; raise naming the bad spec."""
    module, sep, func = entry.partition(":")
    if not sep or not module or not func or not all(p.isidentifier() for p in module.split(".")) or not all(
        p.isidentifier() for p in func.split(".")
    ):
        raise TopologyLoadError(f"{entry!r} is not of the form MODULE:FUNCTION", entry=entry)
    return module, func


def load_topology(entry: str, conf: Mapping[str, Any] | None = None, path: str | Path | None = None) -> StormTopology:
    """Import ``MODULE`` (with ``path`` first on ``sys.path`` when given) and call ``FUNCTION``."""
    module_name, func_name = parse_entry(entry)
    if path is not None:
        p = str(Path(path).resolve())
        if p not in sys.path:
            sys.path.insert(0, p)
    try:
        module = importlib.import_module(module_name)
    except Exception as err:
        raise TopologyLoadError(
            f"cannot import module {module_name!r} for {entry!r}: {type(err).__name__}: {err}", entry=entry
        ) from err
    target: Any = module
    for part in func_name.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as err:
            raise TopologyLoadError(f"module {module_name!r} has no function {func_name!r}", entry=entry) from err
    if not callable(target):
        raise TopologyLoadError(f"{entry!r} is not callable", entry=entry)
    try:
        params = [
            p for p in inspect.signature(target).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        takes_conf = len(params) == 1 or (
            len(params) == 0 and len(inspect.signature(target).parameters) >= 1
        )
    except (TypeError, ValueError):
        takes_conf = False
    try:
        topology = target(dict(conf or {})) if takes_conf else target()
    except Exception as err:
        raise TopologyLoadError(f"{entry!r} raised {type(err).__name__}: {err}", entry=entry) from err
    if not isinstance(topology, StormTopology):
        raise TopologyLoadError(
            f"{entry!r} returned {type(topology).__name__}, not a topology (call create_topology())", entry=entry
        )
    return topology
