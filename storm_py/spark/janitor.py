"""The janitor of a dataset root: what a sink task's start-up removes (staged, unpublished and replaced files).

Standard library only; runs on a :class:`~storm_py.spark.layout.DatasetLayout` after its :meth:`recover`.
"""

from __future__ import annotations

import contextlib
import json
import shutil

from storm_py.spark.layout import REPLACED, DatasetLayout, prune_empty


def clean_up(layout: DatasetLayout, task: int, ntasks: int) -> list[str]:
    """Start-up clean-up of one task's leftovers (and, for task 0, of tasks beyond ``ntasks``).

    Removes its staged attempts, what it published for txids above ``_LATEST`` and files of ``_LATEST``
    that its manifest does not list (a replacement that failed, or replaced content), and (task 0) the
    files of replaced content listed under ``_replaced/``; returns what it removed.  Readers that took a
    manifest before a replacement may still be reading the replaced files: the janitor runs only at a
    sink's start-up, long after.
    """
    latest = layout.recover()

    def mine(t: int) -> bool:
        return t == task or (task == 0 and t >= ntasks)

    removed: list[str] = []
    listed = {f.path for f in layout.read_manifest(latest).files} if latest else set()
    if task == 0 and (layout.commits / REPLACED).is_dir():
        for tomb in sorted((layout.commits / REPLACED).glob("*.json")):
            data = json.loads(tomb.read_bytes())
            current = listed if data["txid"] == latest else {
                f.path for f in layout.read_manifest(int(data["txid"])).files}
            for rel in data["files"]:
                if rel not in current and (layout.root / rel).exists():
                    (layout.root / rel).unlink()
                    removed.append(rel)
                    prune_empty((layout.root / rel).parent, layout.root)
            tomb.unlink()
    if layout.staging.is_dir():
        for txdir in layout.staging.iterdir():
            fields = txdir.name.split("-")
            if txdir.is_file() and len(fields) > 2 and fields[1].isdigit() and mine(int(fields[1])):
                txdir.unlink()  # a staged file: <txid>-<task>-<attempt>-<seq>.parquet
                removed.append(str(txdir.relative_to(layout.root)))
                continue
            for attempt in list(txdir.iterdir()) if txdir.is_dir() else []:
                head = attempt.name.split("-", 1)[0]
                if head.isdigit() and mine(int(head)):
                    shutil.rmtree(attempt, ignore_errors=True)
                    removed.append(str(attempt.relative_to(layout.root)))
            with contextlib.suppress(OSError):
                txdir.rmdir()
    for path, txid, t in list(layout.published_files()):
        rel = path.relative_to(layout.root).as_posix()
        if mine(t) and (txid > latest or (txid == latest and rel not in listed)):
            path.unlink()
            removed.append(str(path.relative_to(layout.root)))
            prune_empty(path.parent, layout.root)
    if ntasks == 1:  # N's directory without files (created ahead of them, or its files lost in a crash)
        for empty in list(layout.root.rglob("txid=*")):
            number = empty.name.removeprefix("txid=")
            if number.isdigit() and int(number) > latest and empty.is_dir() and not any(empty.iterdir()):
                empty.rmdir()
                prune_empty(empty.parent, layout.root)
    for entry in list(layout.commits.iterdir()) if layout.commits.is_dir() else []:
        txid_of = entry.name.removesuffix(".json")
        if not txid_of.isdigit() or int(txid_of) <= latest:
            continue
        if entry.is_dir():
            for part in entry.glob("task-*.json"):
                if mine(int(part.stem.split("-")[1])):
                    part.unlink()
                    removed.append(str(part.relative_to(layout.root)))
        elif task == 0:  # a manifest above _LATEST: written by a commit that did not finish
            entry.unlink()
            removed.append(str(entry.relative_to(layout.root)))
    return removed
