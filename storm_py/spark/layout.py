"""The committed dataset's layout on disk: paths, manifests, the ``_LATEST`` pointer and the commit rules.

Standard library only (no pyarrow): the decisions here are pure functions of what is on disk, unit-tested.
Everything relative to the dataset ``root``::

    _staging/<N>-<task>-<attempt>-<seq>.parquet  files being written (Spark and pyarrow skip names with "_")
    <col>=<value>/.../txid=<N>/part-<N>-<task>-<seq>-<token>.parquet  published rows of txid N (token: the
                                                 commit call's, so an attempt never overwrites another's file)
    _commits/<N>/task-<task>.json                one sink task's part of N (files, rows, source offsets)
    _commits/<N>.pending                         N's manifest being committed (single task), made durable
                                                 with N's files, then renamed to <N>.json
    _commits/<N>.json                            N's manifest, written once every task's part is there:
                                                 its existence is N's commit
    _commits/_LATEST                             {"txid": N}: a hint, every txid <= N is committed
    _commits/_replaced/<N>-<token>.json          files of N's previous content, deleted by a later janitor

A txid is committed exactly when its manifest ``_commits/<N>.json`` exists (renamed into place once everything
N needs is durable; ``<N>.pending`` before that).  ``_LATEST`` is a hint, written without an fsync after the
rename (by a single task every ``HINT_EVERY`` txids, and at start-up): the last committed txid is the highest
N from the hint up whose manifests exist without a gap (:meth:`DatasetLayout.latest`).  A reader takes that
txid first and reads only the files its manifests list, so a partly published N and the files of a replaced or
failed attempt are never seen.  Commits come strictly in txid order and the commit of N is retried until it
succeeds, so:

* ``N = _LATEST + 1``: publish (whatever an earlier attempt of N left is deleted first, nobody reads it);
* ``N = _LATEST``: a replay of the last committed txid (its commit was not recorded by the coordinator before a
  failure).  With an opaque spout the replayed batch may hold other records, so N is *replaced*: the new files
  are written beside the old ones under new names and N's manifest is switched atomically; a reader holding the
  old manifest still reads the old, consistent N.  The old files are listed in ``_replaced/`` and deleted by
  the janitor at a later start-up.  (For a transactional spout the content is the same: replacing is harmless.)
* ``N < _LATEST``: the coordinator recorded N before it committed a later txid; such a commit cannot reach the
  sink again, and if it does it is skipped.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import os
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from storm_py.errors import StormPyError
from storm_py.spark.durable import fsync_path, fsync_round, write_atomic

STAGING = "_staging"
COMMITS = "_commits"
LATEST = "_LATEST"
COMPACTED = "_compacted"
TXID_COLUMN = "txid"
PART_RE = re.compile(r"^part-(\d{20})-(\d{5})-(\d{4})(?:-[0-9a-f]+)?\.parquet$")
REPLACED = "_replaced"
COMPACT_LOCK = "_compact.lock"
TXID_DIR_RE = re.compile(r"^txid=(\d+)$")
HINT_EVERY = 16  # a single task rewrites the _LATEST hint every HINT_EVERY txids (a file create costs)


class DatasetError(StormPyError):
    """A dataset root is unusable or out of order (its path and the txids involved are in the fields)."""

    code = "dataset_error"


class CommitAction(enum.Enum):
    """What the commit of one txid does, given ``_LATEST``."""

    PUBLISH = "publish"  # N = _LATEST + 1: replace whatever an earlier attempt left, then publish
    REPLACE = "replace"  # N = _LATEST: a replay of the last committed txid, its content replaced atomically
    SKIP = "skip"  # N < _LATEST: an older txid (its commit was recorded): nothing to do


def plan_commit(latest: int, txid: int) -> CommitAction:
    """The commit rule; a txid beyond ``_LATEST + 1`` means an earlier one was never published: an error."""
    if txid < latest:
        return CommitAction.SKIP
    if txid == latest:
        return CommitAction.REPLACE
    if txid == latest + 1:
        return CommitAction.PUBLISH
    raise DatasetError(
        f"txid {txid} commits but the dataset's last committed txid is {latest}: txids {latest + 1}..{txid - 1} "
        "were never published (was the dataset root reused by another topology?)", txid=txid, latest=latest)


def part_name(txid: int, task: int, seq: int, token: str = "") -> str:
    """The file name of a task's ``seq``-th file of ``txid`` (``token``: the commit call's, hex)."""
    return f"part-{txid:020d}-{task:05d}-{seq:04d}{'-' + token if token else ''}.parquet"


def escape_value(value: Any) -> str:
    """A partition value as a directory name component (Hive-style ``%XX`` escapes, which Spark decodes)."""
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    if text == "":
        return "__HIVE_DEFAULT_PARTITION__"
    # ASCII specials only: Spark unescapes each %XX to one character, so non-ASCII stays as it is (UTF-8 names)
    return "".join(c if ord(c) > 127 else quote(c, safe="-_.:@+ ") for c in text)


def partition_dir(cols: Sequence[str], values: Sequence[Any], txid: int) -> str:
    """``col=value/.../txid=N`` (relative)."""
    parts = [f"{c}={escape_value(v)}" for c, v in zip(cols, values, strict=True)]
    return "/".join([*parts, f"{TXID_COLUMN}={txid}"])


def parse_partition_dir(rel: str) -> dict[str, str]:
    """``{"col": "value", ...}`` of a relative directory (unescaped), without ``txid``."""
    out: dict[str, str] = {}
    for segment in rel.split("/"):
        key, sep, value = segment.partition("=")
        if sep and key != TXID_COLUMN:
            out[key] = unquote(value)
    return out


@dataclass
class FileEntry:
    """One published file: its path relative to the root, its rows, and its partition values."""

    path: str
    rows: int
    partition: dict[str, Any] = field(default_factory=dict)
    size: int | None = None  # bytes, checked when a pending manifest is recovered after a crash

    def to_json(self) -> dict[str, Any]:
        out = {"path": self.path, "rows": self.rows, "partition": self.partition}
        if self.size is not None:
            out["size"] = self.size
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileEntry:
        size = data.get("size")
        return cls(str(data["path"]), int(data["rows"]), dict(data.get("partition") or {}),
                   None if size is None else int(size))


@dataclass
class Manifest:
    """What a committed txid holds (or one task's part of it)."""

    txid: int
    attempt: int
    files: list[FileEntry]
    schema: dict[str, str]
    fingerprint: str
    source: dict[str, Any] = field(default_factory=dict)
    errors: int = 0
    tasks: list[int] = field(default_factory=list)
    compacted: str | None = None  # the compacted segment holding this txid's rows, once compaction ran

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    def to_json(self) -> dict[str, Any]:
        return {"txid": self.txid, "attempt": self.attempt, "rows": self.rows,
                "files": [f.to_json() for f in self.files], "schema": self.schema,
                "fingerprint": self.fingerprint, "source": self.source, "errors": self.errors,
                "tasks": self.tasks, "compacted": self.compacted}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Manifest:
        return cls(int(data["txid"]), int(data["attempt"]), [FileEntry.from_json(f) for f in data["files"]],
                   dict(data["schema"]), str(data["fingerprint"]), dict(data.get("source") or {}),
                   int(data.get("errors") or 0), [int(t) for t in data.get("tasks") or []],
                   data.get("compacted"))


def merge_parts(parts: Sequence[Manifest]) -> Manifest:
    """The txid's manifest from its tasks' parts (files in task order, source offsets merged)."""
    parts = sorted(parts, key=lambda p: p.tasks[0] if p.tasks else 0)
    first = parts[0]
    fingerprints = {p.fingerprint for p in parts}
    if len(fingerprints) != 1:
        raise DatasetError(f"txid {first.txid}: tasks wrote different schemas {sorted(fingerprints)}",
                           txid=first.txid)
    source: dict[str, Any] = {}
    for p in parts:
        source = merge_source(source, p.source)
    return Manifest(first.txid, max(p.attempt for p in parts), [f for p in parts for f in p.files],
                    first.schema, first.fingerprint, source, sum(p.errors for p in parts),
                    sorted(t for p in parts for t in p.tasks))


def merge_source(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Per-partition ``[first, last]`` offset ranges of two tasks' shares of a batch, merged."""
    out = {k: list(v) for k, v in a.items()}
    for key, (lo, hi) in b.items():
        have = out.get(key)
        out[key] = [lo, hi] if have is None else [min(have[0], lo), max(have[1], hi)]
    return out


def source_ranges(pairs: Sequence[tuple[Any, Any]]) -> dict[str, list[int]]:
    """``{partition: [first offset, last offset]}`` of a batch's ``(partition, offset)`` pairs (ints only)."""
    out: dict[str, list[int]] = {}
    for part, offset in pairs:
        if isinstance(offset, int) and not isinstance(offset, bool):
            key = str(part)
            have = out.get(key)
            out[key] = [offset, offset] if have is None else [min(have[0], offset), max(have[1], offset)]
    return out


class DatasetLayout:
    """Paths of one dataset root and the reads and writes of its pointers and manifests."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.commits = self.root / COMMITS
        self.staging = self.root / STAGING
        self._commits_fd: int | None = None  # ``_commits/`` kept open by a writer for its fsyncs

    def __del__(self) -> None:
        if self._commits_fd is not None:
            os.close(self._commits_fd)

    def ensure(self) -> None:
        """Create the root's control directories."""
        self.commits.mkdir(parents=True, exist_ok=True)
        self.staging.mkdir(parents=True, exist_ok=True)

    # --- the pointer and the manifests -------------------------------------------------------------------------
    def hint(self) -> int:
        """``_LATEST``'s txid: a lower bound of the last committed txid (0 when missing or torn)."""
        try:
            data = json.loads((self.commits / LATEST).read_bytes())
            return int(data["txid"])
        except FileNotFoundError:
            return 0
        except (ValueError, KeyError, TypeError):
            return 0  # a torn hint (written without fsync, lost in a crash): the manifests say the rest
        except OSError as exc:
            raise DatasetError(f"{self.commits / LATEST} is unreadable: {exc}", root=str(self.root)) from exc

    def latest(self) -> int:
        """The last committed txid (0 when none is): from the ``_LATEST`` hint up while N's manifest exists."""
        txid = self.hint()
        while self.manifest_path(txid + 1).exists():
            txid += 1
        return txid

    def set_latest(self, txid: int, fsync: bool = True) -> None:
        write_atomic(self.commits / LATEST, json.dumps({"txid": txid}).encode(), fsync)
        if fsync:
            fsync_path(self.commits)  # the rename itself

    def open_pending(self, txid: int, data_dir: Path | None = None) -> int:
        """Create N's pending manifest, empty (a descriptor for :meth:`publish_latest`), and N's data directory
        when given: done ahead, while N's rows are encoded.  An empty or partial pending manifest is never
        taken for a commit: :meth:`recover` removes it."""
        if data_dir is not None:
            data_dir.mkdir(parents=True, exist_ok=True)
        return os.open(self.pending_path(txid), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)

    def publish_latest(self, manifest: Manifest, files: Sequence[Path | int], dirs: Sequence[Path | int],
                       fsync: bool = True, hook: Callable[[str], None] | None = None, fd: int | None = None) -> None:
        """The single task's commit of N in one round of fsyncs: N's manifest is written under its pending name
        and fsynced together with N's ``files`` and ``dirs`` and ``_commits/``; renaming it to
        ``<N>.json`` is the commit.  That rename and the ``_LATEST`` hint after it (every ``HINT_EVERY`` txids)
        get no fsync of their own: a
        crash that loses them leaves a durable, complete pending manifest that :meth:`recover` renames at the
        next start-up, so a commit that returned stays committed.  ``hook`` is called between the steps (fault
        injection).  ``fd``: N's pending manifest from :meth:`open_pending`, closed here."""
        step = hook or (lambda _point: None)
        pending = self.pending_path(manifest.txid)
        # N > latest: nobody reads it, recover() checks or removes it
        if fd is None:
            fd = self.open_pending(manifest.txid)
        try:
            os.write(fd, json.dumps(manifest.to_json(), separators=(",", ":")).encode())  # C encoder: no indent
            step("before-fsync")
            if fsync:
                if self._commits_fd is None:
                    self._commits_fd = os.open(self.commits, os.O_RDONLY)
                fsync_round([*files, fd], [*dirs, self._commits_fd])
        finally:
            os.close(fd)
        step("before-rename")
        os.replace(pending, self.manifest_path(manifest.txid))  # the commit point
        step("before-hint")
        if manifest.txid % HINT_EVERY == 0:  # readers probe at most HINT_EVERY - 1 manifests past it
            write_atomic(self.commits / LATEST, json.dumps({"txid": manifest.txid}).encode(), fsync=False)

    def pending_path(self, txid: int) -> Path:
        return self.commits / f"{txid:020d}.pending"

    def recover(self) -> int:
        """Start-up: N+1's pending manifest (after a crash between the fsyncs and the rename) is renamed into
        place when it is complete and every file it lists is there whole, else removed; other pending
        manifests are removed; ``_LATEST`` is brought up to the last committed txid.  Returns that txid."""
        latest = self.latest()
        pending = self.pending_path(latest + 1)
        if pending.exists() and self._whole(pending, latest + 1):
            os.replace(pending, self.manifest_path(latest + 1))
            latest += 1
        for stale in self.commits.glob("*.pending") if self.commits.is_dir() else []:
            stale.unlink(missing_ok=True)
        if self.hint() != latest:
            self.set_latest(latest)
        return latest

    def _whole(self, pending: Path, txid: int) -> bool:
        """A pending manifest of ``txid`` that parses and whose files all have their recorded size and end in
        Parquet's footer magic (what a crash in the middle of the fsync round can lose)."""
        try:
            manifest = Manifest.from_json(json.loads(pending.read_bytes()))
        except (ValueError, KeyError, TypeError):
            return False
        if manifest.txid != txid:
            return False
        for entry in manifest.files:
            path = self.root / entry.path
            try:
                with open(path, "rb") as fh:
                    size = fh.seek(0, os.SEEK_END)
                    if size < 4 or (entry.size is not None and size != entry.size):
                        return False
                    fh.seek(-4, os.SEEK_END)
                    if fh.read(4) != b"PAR1":
                        return False
            except OSError:
                return False
        return True

    def manifest_path(self, txid: int) -> Path:
        return self.commits / f"{txid:020d}.json"

    def parts_dir(self, txid: int) -> Path:
        return self.commits / f"{txid:020d}"

    def read_manifest(self, txid: int) -> Manifest:
        path = self.manifest_path(txid)
        try:
            return Manifest.from_json(json.loads(path.read_bytes()))
        except FileNotFoundError as exc:
            raise DatasetError(f"txid {txid} is below _LATEST but its manifest {path} is missing",
                               root=str(self.root), txid=txid) from exc
        except (ValueError, KeyError, TypeError) as exc:  # manifests appear only by rename: this is damage
            raise DatasetError(f"manifest {path} of txid {txid} is unreadable: {exc}",
                               root=str(self.root), txid=txid) from exc

    def write_manifest(self, manifest: Manifest, fsync: bool = True, atomic: bool = True) -> None:
        """Write N's manifest; ``atomic=False`` (one writer, N above ``_LATEST``: nobody reads it yet) skips the
        temporary file, and the janitor removes a half-written one."""
        data = json.dumps(manifest.to_json(), indent=1).encode()
        if atomic:
            write_atomic(self.manifest_path(manifest.txid), data, fsync)
            return
        with open(self.manifest_path(manifest.txid), "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())

    def committed_manifests(self, latest: int | None = None) -> list[Manifest]:
        """Manifests of txids ``1..latest`` (``latest`` read now when not given)."""
        upto = self.latest() if latest is None else latest
        return [self.read_manifest(t) for t in range(1, upto + 1)]

    def write_part(self, part: Manifest, task: int, fsync: bool = True) -> None:
        self.parts_dir(part.txid).mkdir(parents=True, exist_ok=True)
        path = self.parts_dir(part.txid) / f"task-{task:05d}.json"
        write_atomic(path, json.dumps(part.to_json()).encode(), fsync)

    def replace_manifest(self, old: Manifest, new: Manifest, fsync: bool = True) -> None:
        """Switch committed N's manifest from ``old`` to ``new`` (atomically); ``old``'s files are left for the
        janitor, listed under ``_replaced/`` (readers holding ``old`` keep reading a consistent N)."""
        self.write_manifest(new, fsync, atomic=True)
        if fsync:
            fsync_path(self.commits)  # the switch is durable before the coordinator records the replay
        kept = {f.path for f in new.files}
        gone = [f.path for f in old.files if f.path not in kept]
        if gone:
            (self.commits / REPLACED).mkdir(exist_ok=True)
            path = self.commits / REPLACED / f"{new.txid:020d}-{uuid.uuid4().hex}.json"
            write_atomic(path, json.dumps({"txid": new.txid, "files": gone}).encode(), fsync)

    @contextlib.contextmanager
    def compacting(self) -> Iterator[None]:
        """Hold the root's compaction lock (one compaction at a time; the kernel releases it if the process dies)."""
        self.commits.mkdir(parents=True, exist_ok=True)
        with open(self.commits / COMPACT_LOCK, "a+b") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise DatasetError(f"another compaction of {self.root} is running: run one at a time",
                                   root=str(self.root)) from exc
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def read_parts(self, txid: int) -> list[Manifest]:
        d = self.parts_dir(txid)
        if not d.is_dir():
            return []
        return [Manifest.from_json(json.loads(p.read_bytes())) for p in sorted(d.glob("task-*.json"))]

    # --- files -------------------------------------------------------------------------------------------------
    def staging_dir(self, txid: int, task: int) -> Path:
        """A fresh directory for one attempt of a task's part of ``txid``."""
        d = self.staging / f"{txid:020d}" / f"{task:05d}-{uuid.uuid4().hex}"
        d.mkdir(parents=True)
        return d

    def published_files(self) -> Iterator[tuple[Path, int, int]]:
        """``(path, txid, task)`` of every published part file (committed or not)."""
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(("_", ".")))
            for name in filenames:
                m = PART_RE.match(name)
                if m and TXID_DIR_RE.match(os.path.basename(dirpath)):
                    yield Path(dirpath) / name, int(m.group(1)), int(m.group(2))


def prune_empty(directory: Path, root: Path) -> None:
    """Remove ``directory`` and its parents up to ``root`` while they are empty."""
    d = directory
    while d != root and root in d.parents:
        try:
            d.rmdir()
        except OSError:
            return
        d = d.parent


def committed_txids(root: str | os.PathLike[str]) -> list[int]:
    """The sorted committed txids of the dataset at ``root`` (``[]`` when nothing is committed)."""
    return list(range(1, DatasetLayout(root).latest() + 1))
