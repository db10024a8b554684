"""This module owns the upkeep of a supervisor's ``workers-artifacts`` directory: worker logs rotated by size,
and the directories of workers gone for longer than ``logviewer.cleanup.age.mins`` removed.

Rotation is "copy, then truncate": a worker writes ``worker.log`` and ``events.log`` (its logging handlers) and
``worker.log.out`` / ``.err`` (its stdout and stderr) in append mode, so after the truncation its next write lands
at the new end (and a log search, which reads in chunks rather than mapping the file, just ends early:
:mod:`storm_py.supervisor.logsearch`).  Each file over its share of ``logviewer.max.per.worker.logs.size.mb``
(an eighth: four files and one ``.1`` backup each) is copied to ``<name>.1`` and emptied, so a worker's
directory stays under the limit whatever the worker prints.  Plain functions over paths and ``now``; the
supervisor's round calls :func:`maintain`.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from storm_py.config.keys import setting

log = logging.getLogger(__name__)

#: The files rotated in each worker's directory.
ROTATED = ("worker.log", "worker.log.out", "worker.log.err", "events.log")


def file_limit(conf: Mapping[str, Any]) -> int:
    """Bytes one log file may reach before it is rotated."""
    total_mb = float(setting(conf, "logviewer.max.per.worker.logs.size.mb"))
    return max(1, int(total_mb * 1024 * 1024 / (2 * len(ROTATED))))


def rotate(worker_dir: Path, limit: int) -> list[str]:
    """Copy-truncate every log file of ``worker_dir`` over ``limit`` bytes into ``<name>.1``; the names rotated."""
    rotated: list[str] = []
    for name in ROTATED:
        path = worker_dir / name
        try:
            if path.is_symlink() or path.stat().st_size <= limit:
                continue
            shutil.copyfile(path, worker_dir / f"{name}.1", follow_symlinks=False)
            os.truncate(path, 0)
            rotated.append(name)
        except FileNotFoundError:
            continue
        except OSError as err:
            log.warning("cannot rotate %s: %s", path, err)
    return rotated


def expired(root: Path, live: Collection[tuple[str, int]], age_secs: float, now: float) -> list[Path]:
    """Worker directories (``<topology>/<port>``) not ``live`` and untouched for ``age_secs``."""
    out: list[Path] = []
    if not root.is_dir():
        return out
    for topo in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        for port_dir in sorted(p for p in topo.iterdir() if p.is_dir() and not p.is_symlink()):
            key = (topo.name, int(port_dir.name)) if port_dir.name.isdigit() else (topo.name, -1)
            if key in live:
                continue
            newest = max([port_dir.stat().st_mtime] + [f.stat().st_mtime for f in port_dir.iterdir()
                                                       if f.is_file() and not f.is_symlink()])  # fmt: skip
            if now - newest > age_secs:
                out.append(port_dir)
    return out


def maintain(root: Path, conf: Mapping[str, Any], live: Collection[tuple[str, int]], now: float) -> None:
    """Rotate the logs of every worker directory under ``root``; remove expired ones (and emptied topologies)."""
    if not root.is_dir():
        return
    limit = file_limit(conf)
    for topo in (p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        for port_dir in (p for p in topo.iterdir() if p.is_dir() and not p.is_symlink()):
            for name in rotate(port_dir, limit):
                log.info("rotated %s/%s (over %d bytes)", port_dir, name, limit)
    age = float(setting(conf, "logviewer.cleanup.age.mins")) * 60.0
    for port_dir in expired(root, live, age, now):
        shutil.rmtree(port_dir, ignore_errors=True)
        log.info("removed the artifacts of %s, gone for over %.0f minutes", port_dir, age / 60)
        try:
            port_dir.parent.rmdir()  # only when it was the topology's last worker directory
        except OSError:
            pass
