"""Durable writes of the committed dataset: atomic replacement of a small file and rounds of fsyncs.

Standard library only.  A commit makes its files and directories durable in one round (:func:`fsync_round`) before
the pointer that publishes them moves.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def write_atomic(path: Path, data: bytes, fsync: bool = True) -> None:
    """Write ``path`` through a temporary file renamed over it (readers see old or new, never half)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        if fsync:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)


_FSYNC_POOL: ThreadPoolExecutor | None = None
_FSYNC_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _FSYNC_POOL
    with _FSYNC_POOL_LOCK:
        if _FSYNC_POOL is None:
            _FSYNC_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="parquet-io")
        return _FSYNC_POOL


def in_background(fn: Callable[..., T], *args: Any) -> Future[T]:
    """Run ``fn(*args)`` on the I/O threads: file creates there overlap the caller's Arrow and Parquet encoding
    (both release the GIL while the kernel or the encoder works)."""
    return _pool().submit(fn, *args)


def fsync_all(paths: Sequence[Path | int]) -> None:
    """fsync files and directories (paths, or descriptors already open: no second lookup) together, one thread
    each (up to 4): a journaling file system commits concurrent fsyncs in one journal commit, so n of them cost
    about one.  Returns once all are durable."""
    if len(paths) <= 1:
        for p in paths:
            fsync_path(p)
        return
    pool = _pool()
    futures = [pool.submit(fsync_path, p) for p in paths[1:]]
    fsync_path(paths[0])  # this thread does one of them
    for future in futures:
        future.result()


def fsync_round(files: Sequence[Path | int], dirs: Sequence[Path | int]) -> None:
    """Make ``files`` (their content) and ``dirs`` (their entries) durable: the files together first, then the
    directories one after the other.  A file's fsync writes its data back and commits the journal, which
    carries every metadata change made before it (the directories' new entries and renames included), so the
    directories' fsyncs then find nothing left to commit.  Fsyncing the directories alongside the files was
    slower (docs/benchmarks/spark.md): a directory's fsync may commit the journal before a file's data has its blocks,
    and the file then needs a second commit."""
    fsync_all(files)
    for d in dirs:
        fsync_path(d)


def fsync_path(path: Path | int) -> None:
    """Make a file's content, or a directory's entries (renames inside it), durable."""
    if isinstance(path, int):
        os.fsync(path)
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
