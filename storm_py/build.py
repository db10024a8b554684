"""Which build of storm_py runs: pure Python, or its hot modules compiled with mypyc; and the stale-module guard.

``HOT_MODULES`` is the one list of modules a compiled build compiles (``setup.py`` reads it).  A compiled
module is a C extension next to its ``.py`` file, and Python imports the extension first, so an edited ``.py``
beside an older extension would silently not run.  :func:`refuse_stale` (called when ``storm_py`` is imported,
before any hot module) refuses that: an extension older than its source is stale unless the source still has the
hash the build recorded in ``compiled.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from storm_py.errors import StaleBuildError

#: the modules a compiled build compiles with mypyc: the per-tuple path (tuples, emit and routing, executors,
#: acking, frames and the codec), the Kafka spout's offset manager and its per-record loops (the spout itself is a
#: user-facing component, copied and pickled with topologies, which mypyc's native classes do not support), and
#: the Parquet sink's per-value passes over a batch, and the window manager with its events, policies and
#: watermarks (the windowed bolt and its executor are user-facing, copied with topologies, and stay interpreted),
#: and the managed state's in-memory ``KeyValueState`` and each guarantee's per-tuple path of a bolt (each runs
#: for every tuple of a managed bolt; its compiled path is made at ``prepare``, never copied), the buckets a
#: rescale's moves hash every key of a state into, and a
#: stateful spout's per-call path under exactly_once (made in ``open``), and a shell bolt's per-tuple traffic,
#: pending ledger and wire formats (made in ``prepare``; the shell components themselves stay interpreted)
HOT_MODULES: tuple[str, ...] = (
    "storm_py.api.tuple",
    "storm_py.protocol.codec",
    "storm_py.protocol.messages",
    "storm_py.runtime.executor",
    "storm_py.runtime.spout_executor",
    "storm_py.runtime.bolt_executor",
    "storm_py.runtime.bolt_collectors",
    "storm_py.runtime.routing",
    "storm_py.runtime.groupers",
    "storm_py.runtime.acker",
    "storm_py.runtime.ids",
    "storm_py.runtime.pending",
    "storm_py.runtime.worker_runtime",
    "storm_py.runtime.transfer.frames",
    "storm_py.kafka.offsets",
    "storm_py.kafka.flow",
    "storm_py.spark.columns",
    "storm_py.clock",
    "storm_py.windowing.events",
    "storm_py.windowing.manager",
    "storm_py.windowing.policies",
    "storm_py.windowing.watermarks",
    "storm_py.stateful.state.key_value",
    "storm_py.stateful.state.key_buckets",
    "storm_py.stateful.at_least_once.tuple_path",
    "storm_py.stateful.exactly_once.tuple_path",
    "storm_py.stateful.exactly_once.spout_path",
    "storm_py.multilang.json_wire",
    "storm_py.multilang.ledger",
    "storm_py.multilang.msgpack_wire",
    "storm_py.multilang.wire",
    "storm_py.multilang.traffic",
)

#: written by a compiled build next to this file: module name -> sha256 of the source it was compiled from
MANIFEST = "compiled.json"
#: written by a build next to this file when hot modules stay pure Python: why (setup.py's ``NOTE``)
NOTE = "build-note.txt"

_PACKAGE_DIR = Path(__file__).resolve().parent


def source_path(module: str, root: Path = _PACKAGE_DIR) -> Path:
    """The ``.py`` file of ``module`` (a ``storm_py.*`` name) under the package directory ``root``."""
    return root.joinpath(*module.split(".")[1:]).with_suffix(".py")


def source_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _extension_of(py: Path, listing: dict[Path, set[str]]) -> Path | None:
    names = listing.get(py.parent)
    if names is None:
        try:
            names = set(os.listdir(py.parent))
        except OSError:
            names = set()
        listing[py.parent] = names
    for suffix in EXTENSION_SUFFIXES:
        if py.stem + suffix in names:
            return py.with_name(py.stem + suffix)
    return None


def stale_modules(root: Path = _PACKAGE_DIR) -> list[tuple[Path, Path]]:
    """``(source, extension)`` pairs under ``root`` whose extension was not compiled from the source as it is now."""
    recorded: dict[str, str] = {}
    manifest = root / MANIFEST
    if manifest.exists():
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
    listing: dict[Path, set[str]] = {}
    stale = []
    for module in HOT_MODULES:
        py = source_path(module, root)
        ext = _extension_of(py, listing)
        if ext is None or not py.exists():
            continue
        if py.stat().st_mtime <= ext.stat().st_mtime:
            continue  # the source is not newer than its extension
        if module in recorded and recorded[module] == source_hash(py):
            continue  # newer on disk (e.g. unpacked later), but the very source that was compiled
        stale.append((py, ext))
    return stale


def refuse_stale() -> None:
    """Raise :class:`StaleBuildError` when a compiled module would shadow a changed ``.py`` file."""
    stale = stale_modules()
    if stale:
        files = ", ".join(str(ext) for _, ext in stale)
        raise StaleBuildError(
            f"compiled modules older than their edited sources would run instead of them: {files}; delete these "
            "files (a development checkout runs pure Python) or reinstall with `pip install .`",
            extensions=files,
        )


def _runs_compiled(module: str, listing: dict[Path, set[str]]) -> bool:
    """Whether ``module`` runs (or, imported, would run) from an extension; never imports it, so a hot module of an
    extra that is not installed (the Kafka client's) can be asked about."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        return str(getattr(loaded, "__file__", "") or "").endswith(tuple(EXTENSION_SUFFIXES))
    return _extension_of(source_path(module), listing) is not None  # the path finder prefers an extension


def compiled_modules() -> list[str]:
    """The hot modules that run compiled in this process."""
    listing: dict[Path, set[str]] = {}
    return [module for module in HOT_MODULES if _runs_compiled(module, listing)]


def pure_reason() -> str:
    """Why this install's pure hot modules are not compiled, as its build recorded (``""`` when it recorded none:
    a source checkout or an editable install)."""
    note = _PACKAGE_DIR / NOTE
    return note.read_text(encoding="utf-8").strip() if note.exists() else ""


def describe() -> str:
    """One line naming the build: ``pure Python``, ``compiled (mypyc): N of N hot modules`` or a mix."""
    compiled = compiled_modules()
    if not compiled:
        return "pure Python"
    if len(compiled) == len(HOT_MODULES):
        return f"compiled (mypyc): all {len(compiled)} hot modules"
    return f"partly compiled (mypyc): {len(compiled)} of {len(HOT_MODULES)} hot modules"


def report() -> list[str]:
    """``storm-py version``'s lines after the first: each compiled hot module, then the pure ones and why."""
    compiled = compiled_modules()
    pure = [m for m in HOT_MODULES if m not in compiled]
    lines = [f"  compiled: {m}" for m in compiled]
    if pure:
        why = pure_reason() or "no compiled modules beside the sources: a source checkout or an editable install"
        lines.append(f"  pure Python ({why}):")
        lines += [f"    {m}" for m in pure]
    return lines


refuse_stale()  # on import: ``storm_py/__init__.py`` imports this module before any hot module
