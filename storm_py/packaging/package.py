"""This module owns topology packages: the zip archive (a wheel, or a zipped directory) carrying a topology's code.

A package is read once on the client (:func:`read_package`), stored as an opaque blob by nimbus, and unpacked by
supervisors into a directory that workers put first on ``sys.path`` (:func:`unpack`).  Like a Storm topology
jar, it must hold everything the topology imports that the worker's environment does not already provide.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from storm_py.errors import TopologyLoadError

log = logging.getLogger(__name__)

#: Directories never packed from a source directory: VCS, caches, virtualenvs.
SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".venv", "venv", ".mypy_cache", ".pytest_cache",
                          ".ruff_cache", ".tox", "node_modules"})
#: Build outputs, left out at the top of a source directory (deeper, a ``build`` package may be real code).
SKIPPED_TOP_DIRS = frozenset({"build", "dist"})
SKIPPED_SUFFIXES = (".pyc", ".pyo")
#: A directory holding this file is a dev cluster's work dir (logs, state, downloaded packages).
DEV_CLUSTER_RECORD = "dev-cluster.json"


@dataclass(frozen=True)
class TopologyPackage:
    """A topology's code as nimbus receives it: the archive bytes, its entry point and original file name."""

    data: bytes
    entry: str
    filename: str

    @property
    def sha256(self) -> str:
        """The archive's digest (supervisors check what they download against it)."""
        return digest(self.data)


def digest(data: bytes) -> str:
    """SHA-256 of ``data`` in hex."""
    return hashlib.sha256(data).hexdigest()


def read_package(path: str | os.PathLike[str], left_out: list[str] | None = None) -> tuple[bytes, str]:
    """The archive bytes and file name of a wheel/zip file, or of a directory (zipped here).

    A directory is packed without VCS and cache directories, virtualenvs, build outputs (``build/``,
    ``dist/``, ``*.egg-info``) and dev-cluster work dirs; the directories left out are appended to
    ``left_out`` when given.

    Raises:
        TopologyLoadError: the path does not exist, or is neither a directory nor a zip archive (a wheel).
    """
    p = Path(path)
    if p.is_dir():
        return _zip_dir(p, left_out if left_out is not None else []), f"{p.resolve().name or 'topology'}.zip"
    if not p.exists():
        raise TopologyLoadError(f"{p} does not exist", path=str(p))
    try:
        data = p.read_bytes()
    except OSError as err:
        raise TopologyLoadError(f"cannot read {p}: {err.strerror}", path=str(p)) from err
    check_archive(data, str(p))
    return data, p.name


def _skipped(parent: Path, name: str, top: bool) -> bool:
    return (
        name in SKIPPED_DIRS
        or name.startswith(".")
        or name.endswith(".egg-info")
        or (top and name in SKIPPED_TOP_DIRS)
        or (parent / name / DEV_CLUSTER_RECORD).is_file()
    )


def _zip_dir(root: Path, left_out: list[str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for dirpath, dirnames, filenames in os.walk(root):
            here = Path(dirpath)
            skip = {d for d in dirnames if _skipped(here, d, here == root)}
            left_out.extend(f"{(here / d).relative_to(root).as_posix()}/" for d in sorted(skip))
            dirnames[:] = sorted(d for d in dirnames if d not in skip)
            for name in sorted(filenames):
                if name.endswith(SKIPPED_SUFFIXES):
                    continue
                full = Path(dirpath) / name
                zf.write(full, full.relative_to(root).as_posix())
    return buf.getvalue()


def check_archive(data: bytes, what: str = "package") -> None:
    """Raise :class:`TopologyLoadError` unless ``data`` is a readable zip archive with safe member names."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = zf.namelist()
            bad = zf.testzip()
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        raise TopologyLoadError(f"{what} is not a wheel or zip archive: {err}", path=what) from err
    if bad is not None:
        raise TopologyLoadError(f"{what} is corrupted: member {bad!r} fails its checksum", path=what)
    for name in names:
        _safe_member(name, what)


def _safe_member(name: str, what: str) -> PurePosixPath:
    member = PurePosixPath(name)
    if member.is_absolute() or ".." in member.parts or "\\" in name:
        raise TopologyLoadError(f"{what} holds an unsafe path {name!r}", path=what, member=name)
    return member


def unpack(data: bytes, dest: Path) -> None:
    """Extract an archive into ``dest`` (replaced atomically: a reader sees the old tree or the new one)."""
    check_archive(data, str(dest))
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            zf.extractall(tmp)
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        raise TopologyLoadError(f"cannot unpack topology code into {dest}: {err}", path=str(dest)) from err
