"""This module owns topology packages: the zip archive (a wheel, or a zipped directory) carrying a topology's code.

A package is read once on the client (:func:`read_package`), stored as an opaque blob by nimbus, and unpacked by
supervisors into a directory that workers put first on ``sys.path`` (:func:`unpack`).  Like a Storm topology
jar, it must hold everything the topology imports that the worker's environment does not already provide.

An archive is hostile until checked: its unpacked size, member count and each member's compression ratio are
bounded (:class:`UnpackLimits`, from the cluster's conf, never the topology's), first from the zip's directory
(:func:`check_archive`) and again while unpacking, since a directory may understate what a member inflates to.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from storm_py.config.keys import setting
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
#: Members unpacking to less than this are not held to the compression ratio (a small file of one repeated byte
#: compresses far better than any limit, harmlessly).
RATIO_FLOOR_BYTES = 1024 * 1024
#: Bytes in a MiB.
MIB = 1024 * 1024
#: The size of the pieces a member is copied in while unpacking.
CHUNK = 64 * 1024
#: The keys of :class:`UnpackLimits`, in its fields' order.
LIMIT_KEYS = ("storm.package.max.unpacked.mb", "storm.package.max.compression.ratio", "storm.package.max.members")


@dataclass(frozen=True)
class UnpackLimits:
    """How far an archive (a topology package, or a wheel of its wheelhouse) may unpack.

    Args:
        max_bytes: the total unpacked size (``storm.package.max.unpacked.mb``).
        max_ratio: the unpacked/packed size of one member over :data:`RATIO_FLOOR_BYTES`
            (``storm.package.max.compression.ratio``).
        max_members: how many members (``storm.package.max.members``).
    """

    max_bytes: int
    max_ratio: float
    max_members: int

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> UnpackLimits:
        """The limits a daemon's conf sets (the defaults for keys it leaves out)."""
        mb, ratio, members = (setting(conf, k) for k in LIMIT_KEYS)
        return cls(int(float(mb) * MIB), float(ratio), int(members))


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


def check_archive(data: bytes, what: str = "package", limits: UnpackLimits | None = None) -> None:
    """Raise :class:`TopologyLoadError` unless ``data`` is a readable zip archive with safe member names, within
    ``limits`` (default: the defaults of :data:`LIMIT_KEYS`) as its directory tells."""
    limits = limits if limits is not None else UnpackLimits.from_conf({})
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
            for info in infos:
                _safe_member(info.filename, what)
            check_directory(infos, what, limits)
            bad = zf.testzip()  # inflates every member: only once the directory is known to be within limits
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as err:
        raise TopologyLoadError(f"{what} is not a wheel or zip archive: {err}", path=what) from err
    if bad is not None:
        raise TopologyLoadError(f"{what} is corrupted: member {bad!r} fails its checksum", path=what)


def check_directory(infos: list[zipfile.ZipInfo], what: str, limits: UnpackLimits) -> None:
    """Refuse, naming the limit's key, an archive whose directory says it unpacks beyond ``limits``."""
    if len(infos) > limits.max_members:
        raise TopologyLoadError(
            f"{what} holds {len(infos)} members, over storm.package.max.members ({limits.max_members})",
            path=what, members=len(infos))
    total = sum(info.file_size for info in infos)
    if total > limits.max_bytes:
        raise TopologyLoadError(
            f"{what} unpacks to {total / MIB:.1f} MiB, over storm.package.max.unpacked.mb "
            f"({limits.max_bytes / MIB:g})", path=what, size=total)
    for info in infos:
        if info.file_size > RATIO_FLOOR_BYTES and info.file_size > limits.max_ratio * max(info.compress_size, 1):
            raise TopologyLoadError(
                f"{what}: member {info.filename!r} unpacks {info.file_size / max(info.compress_size, 1):.0f} times "
                f"its packed size, over storm.package.max.compression.ratio ({limits.max_ratio:g})",
                path=what, member=info.filename)


def _safe_member(name: str, what: str) -> PurePosixPath:
    member = PurePosixPath(name)
    if member.is_absolute() or ".." in member.parts or "\\" in name:
        raise TopologyLoadError(f"{what} holds an unsafe path {name!r}", path=what, member=name)
    return member


def unpack(data: bytes, dest: Path, limits: UnpackLimits | None = None) -> None:
    """Extract an archive into ``dest`` (replaced atomically: a reader sees the old tree or the new one).

    Raises:
        TopologyLoadError: the archive is unsafe or unreadable, or unpacks beyond ``limits`` (checked from its
            directory first, then byte by byte: nothing is left of a refused archive).
    """
    limits = limits if limits is not None else UnpackLimits.from_conf({})
    check_archive(data, str(dest), limits)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            _extract(zf, tmp, str(dest), limits)
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    except (OSError, zipfile.BadZipFile, EOFError) as err:
        shutil.rmtree(tmp, ignore_errors=True)
        raise TopologyLoadError(f"cannot unpack topology code into {dest}: {err}", path=str(dest)) from err
    except TopologyLoadError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _extract(zf: zipfile.ZipFile, root: Path, what: str, limits: UnpackLimits) -> None:
    """Write every member under ``root``, counting the bytes really inflated against ``limits``."""
    written = 0
    for info in zf.infolist():
        target = root.joinpath(*_safe_member(info.filename, what).parts)
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        member_bytes = 0
        with zf.open(info) as src, target.open("wb") as dst:
            for chunk in _chunks(src):
                written += len(chunk)
                member_bytes += len(chunk)
                if written > limits.max_bytes:
                    raise TopologyLoadError(
                        f"{what} unpacks to over storm.package.max.unpacked.mb ({limits.max_bytes / MIB:g}) "
                        f"at member {info.filename!r}, more than its directory says", path=what, member=info.filename)
                if member_bytes > RATIO_FLOOR_BYTES and member_bytes > limits.max_ratio * max(info.compress_size, 1):
                    raise TopologyLoadError(
                        f"{what}: member {info.filename!r} unpacks over storm.package.max.compression.ratio "
                        f"({limits.max_ratio:g}) times its packed size, more than its directory says",
                        path=what, member=info.filename)
                dst.write(chunk)


def _chunks(src: IO[bytes]) -> Iterator[bytes]:
    while chunk := src.read(CHUNK):
        yield chunk
