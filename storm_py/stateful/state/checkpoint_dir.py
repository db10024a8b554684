"""This module owns the durable checkpoint provider (``topology.state.provider: checkpoint_dir``): each task's
managed state kept in a directory every worker reaches, a local path or an fsspec URL (the one fsspec import).

A task's directory is ``<url>/<topology name>/<namespace>``, so the state outlives its workers, a kill and a
resubmit of the same topology name.  It holds three kinds of files, each a checksummed msgpack body of the
project's codec: ``changes-N`` (the keys changed since the previous commit: their new values and the keys
deleted), ``base-N`` (a whole committed map, written by a compaction) and ``manifest-N``, the commit record: the
committed txid, the list of files whose changes, applied in order, give the committed map, and the prepared txid
with its changes file.  A manifest is written last, after the files it names, and never overwritten: a reader
takes the newest manifest whose checksum holds, so a writer killed at any point (``kill -9``) leaves the previous
manifest in force.  Local paths also write every file to a temporary name and rename it (a torn file never has its
final name); fsspec filesystems without renames rely on the checksum.  A prepare writes only the keys changed
since the last commit; a commit writes only a manifest, and folds the list into one ``base`` file once it is longer
than ``compact_files``.  Files no longer named by the newest two manifests are removed.

The whole map lives in memory too (reads never touch the directory): a task reads its files once, when its state
is made.
"""

from __future__ import annotations

import contextlib
import os
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Protocol

from storm_py.errors import CodecError, ConfigError, StateBackendError
from storm_py.protocol.codec import pack_value, unpack_value
from storm_py.stateful.state.key_value import NO_TXID, KeyValueState

#: the provider's name in ``topology.state.provider``
CHECKPOINT_DIR: Final = "checkpoint_dir"
CONFIG_KEY: Final = "topology.state.provider.config"
DEFAULT_URL_KEY: Final = "topology.state.checkpoint.dir"
#: the settings ``topology.state.provider.config`` may hold for this provider
KNOWN_SETTINGS: Final = ("url", "compact_files", "fsync", "storage_options")

_MAGIC: Final = b"SPCK\x01"
_MANIFEST: Final = "manifest-"
_CHANGES: Final = "changes-"
_BASE: Final = "base-"
_TMP: Final = ".tmp-"


class _Absent:
    """A key absent from the map (in the undo log of changed keys)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
#: reads of a task's directory before a file named by its newest manifest is taken as lost
_READ_ATTEMPTS: Final = 5


class _Gone(StateBackendError):
    """A file a manifest names is not there (removed by a writer that went on, or lost)."""


# ------------------------------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    """The provider's settings: ``url`` (a local path, ``file://`` or another fsspec URL), the number of files a
    commit may leave before it compacts them, whether local writes are flushed to disk, fsspec's options."""

    url: str
    compact_files: int = 8
    fsync: bool = True
    storage_options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def protocol(self) -> str | None:
        """The fsspec protocol of a non-local URL (``None``: a local path)."""
        scheme, sep, _ = self.url.partition("://")
        return scheme if sep and scheme != "file" else None

    @property
    def local_path(self) -> Path:
        """The directory of a local URL."""
        return Path(self.url.removeprefix("file://")).expanduser()


def settings_of(config: Mapping[str, Any], default_url: Any = None) -> Settings:
    """The settings in ``topology.state.provider.config`` (``default_url``: ``topology.state.checkpoint.dir``,
    used when the config has no url); every error names the key."""
    unknown = sorted(str(k) for k in config if k not in KNOWN_SETTINGS)
    if unknown:
        raise ConfigError(
            f"{CONFIG_KEY} has unknown keys {unknown} for provider 'checkpoint_dir' (known: {list(KNOWN_SETTINGS)})",
            key=CONFIG_KEY,
        )
    url = config.get("url", default_url)
    if url is None:
        raise ConfigError(
            f"topology.state.provider 'checkpoint_dir' needs {CONFIG_KEY} {{\"url\": ...}} (a local path or an "
            f"fsspec URL every worker reaches), or {DEFAULT_URL_KEY}",
            key=CONFIG_KEY,
        )
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"{CONFIG_KEY} url must be a non-empty string, got {url!r}", key=CONFIG_KEY)
    compact = config.get("compact_files", Settings.compact_files)
    if isinstance(compact, bool) or not isinstance(compact, int) or compact < 1:
        raise ConfigError(f"{CONFIG_KEY} compact_files must be an integer >= 1, got {compact!r}", key=CONFIG_KEY)
    fsync = config.get("fsync", True)
    if not isinstance(fsync, bool):
        raise ConfigError(f"{CONFIG_KEY} fsync must be true or false, got {fsync!r}", key=CONFIG_KEY)
    options = config.get("storage_options") or {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"{CONFIG_KEY} storage_options must be a mapping, got {options!r}", key=CONFIG_KEY)
    return Settings(url.strip(), compact, fsync, dict(options))


def check_reachable(settings: Settings) -> None:
    """Refuse, with a :class:`ConfigError` naming the key, a url whose fsspec protocol is unknown, or a local path
    that cannot be made or written: the path, or the nearest of its parents that exists, must be a writable
    directory.  Nothing is created (the check runs where the topology is submitted: nimbus)."""
    root = open_root(settings)
    if isinstance(root, LocalBlobs):
        problem = local_problem(root.path)
        if problem is not None:
            raise ConfigError(f"{CONFIG_KEY} url {settings.url!r} is not reachable: {problem}", key=CONFIG_KEY)


def local_problem(path: Path) -> str | None:
    """Why a directory could not be made or written at ``path`` (``None``: it can)."""
    here = path.absolute()
    while not here.exists() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        return f"{here} is not a directory"
    if not os.access(here, os.W_OK | os.X_OK):
        return f"{here} is not writable"
    return None


# ---------------------------------------------------------------------------------------------------- files


class Blobs(Protocol):
    """One directory of named files; every failure is a :class:`StateBackendError`."""

    where: str

    def child(self, name: str) -> Blobs: ...

    def make(self) -> None: ...

    def names(self) -> list[str]: ...

    def read(self, name: str) -> bytes | None: ...

    def write(self, name: str, data: bytes) -> None: ...

    def remove(self, name: str) -> None: ...


@contextlib.contextmanager
def _failures(where: str, what: str) -> Iterator[None]:
    try:
        yield
    except StateBackendError:
        raise
    except Exception as exc:  # OSError, or whatever an fsspec filesystem raises
        raise StateBackendError(f"checkpoint_dir {where!r} cannot {what}: {type(exc).__name__}: {exc}") from exc


class LocalBlobs:
    """A local directory; a file is written to a temporary name, flushed, and renamed into place."""

    def __init__(self, path: Path, fsync: bool = True) -> None:
        self.path = path
        self.where = str(path)
        self._fsync = fsync

    def child(self, name: str) -> LocalBlobs:
        return LocalBlobs(self.path / name, self._fsync)

    def make(self) -> None:
        with _failures(self.where, "make its directory"):
            self.path.mkdir(parents=True, exist_ok=True)

    def names(self) -> list[str]:
        with _failures(self.where, "list its files"):
            try:
                return [p.name for p in self.path.iterdir()]
            except FileNotFoundError:
                return []

    def read(self, name: str) -> bytes | None:
        with _failures(self.where, f"read {name}"):
            try:
                return (self.path / name).read_bytes()
            except FileNotFoundError:
                return None

    def write(self, name: str, data: bytes) -> None:
        tmp = self.path / f"{_TMP}{name}-{os.getpid()}-{threading.get_ident()}"
        with _failures(self.where, f"write {name}"):
            with open(tmp, "wb") as out:
                out.write(data)
                if self._fsync:
                    out.flush()
                    os.fsync(out.fileno())
            os.replace(tmp, self.path / name)
            if self._fsync:
                fd = os.open(self.path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)

    def remove(self, name: str) -> None:
        with _failures(self.where, f"remove {name}"):
            (self.path / name).unlink(missing_ok=True)


class FsspecBlobs:
    """A directory of an fsspec filesystem; a file is written whole, in place (the manifest checksum covers a
    torn write)."""

    def __init__(self, fs: Any, root: str, where: str) -> None:
        self._fs = fs
        self._root = root.rstrip("/")
        self.where = where

    def child(self, name: str) -> FsspecBlobs:
        return FsspecBlobs(self._fs, f"{self._root}/{name}", f"{self.where.rstrip('/')}/{name}")

    def make(self) -> None:
        with _failures(self.where, "make its directory"):
            self._fs.makedirs(self._root, exist_ok=True)

    def names(self) -> list[str]:
        with _failures(self.where, "list its files"):
            try:
                listed = self._fs.ls(self._root, detail=False)
            except FileNotFoundError:
                return []
            return [str(p).rstrip("/").rsplit("/", 1)[-1] for p in listed]

    def read(self, name: str) -> bytes | None:
        with _failures(self.where, f"read {name}"):
            try:
                data: bytes = self._fs.cat_file(f"{self._root}/{name}")
            except FileNotFoundError:
                return None
            return data

    def write(self, name: str, data: bytes) -> None:
        with _failures(self.where, f"write {name}"):
            self._fs.pipe_file(f"{self._root}/{name}", data)

    def remove(self, name: str) -> None:
        with _failures(self.where, f"remove {name}"), contextlib.suppress(FileNotFoundError):
            self._fs.rm_file(f"{self._root}/{name}")


def open_root(settings: Settings) -> Blobs:
    """The provider's root directory: a :class:`LocalBlobs` for a path or ``file://``, else fsspec's filesystem
    of the URL's protocol (:class:`ConfigError` naming the key when fsspec or the protocol is unknown)."""
    protocol = settings.protocol
    if protocol is None:
        return LocalBlobs(settings.local_path, settings.fsync)
    try:
        import fsspec
    except ImportError as err:
        raise ConfigError(
            f"{CONFIG_KEY} url {settings.url!r} needs fsspec: pip install 'storm_py[elastic]'", key=CONFIG_KEY
        ) from err
    try:
        fs = fsspec.filesystem(protocol, **dict(settings.storage_options))
    except (ValueError, ImportError, TypeError) as err:
        raise ConfigError(
            f"{CONFIG_KEY} url {settings.url!r}: fsspec cannot open protocol {protocol!r}: {err}", key=CONFIG_KEY
        ) from err
    return FsspecBlobs(fs, settings.url.split("://", 1)[1], settings.url)


def _safe_part(name: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise StateBackendError(f"checkpoint_dir cannot keep state under the name {name!r}")
    return name


# ------------------------------------------------------------------------------------------------ encodings


def encode(payload: Any) -> bytes:
    """A file's bytes: magic, the codec's body of ``payload``, the body's CRC-32."""
    body = pack_value(payload)
    return _MAGIC + body + zlib.crc32(body).to_bytes(4, "big")


def decode(data: bytes) -> Any:
    """The payload of a file written by :func:`encode`; :class:`ValueError` when it is torn or not one."""
    if len(data) < len(_MAGIC) + 4 or not data.startswith(_MAGIC):
        raise ValueError("not a checkpoint_dir file")
    body, crc = data[len(_MAGIC):-4], data[-4:]
    if zlib.crc32(body).to_bytes(4, "big") != crc:
        raise ValueError("its checksum does not match (a torn write)")
    try:
        return unpack_value(body)
    except CodecError as err:
        raise ValueError(str(err)) from err


@dataclass(frozen=True)
class Manifest:
    """A commit record: ``files`` (name and size) hold the committed map; ``prepared_file`` the prepared changes."""

    seq: int = 0
    committed: int = NO_TXID
    files: tuple[tuple[str, int], ...] = ()
    prepared: int | None = None
    prepared_file: tuple[str, int] | None = None

    def payload(self) -> dict[str, Any]:
        return {"seq": self.seq, "committed": self.committed, "files": [list(f) for f in self.files],
                "prepared": self.prepared, "prepared_file": list(self.prepared_file) if self.prepared_file else None}

    @classmethod
    def of(cls, payload: Any) -> Manifest:
        if not isinstance(payload, dict):
            raise ValueError("a manifest is a map")
        pf = payload.get("prepared_file")
        return cls(int(payload["seq"]), int(payload["committed"]),
                   tuple((str(n), int(s)) for n, s in payload["files"]),
                   None if payload.get("prepared") is None else int(payload["prepared"]),
                   None if pf is None else (str(pf[0]), int(pf[1])))

    def names(self) -> set[str]:
        """Every file this manifest needs (itself included)."""
        out = {manifest_name(self.seq), *(n for n, _ in self.files)}
        if self.prepared_file is not None:
            out.add(self.prepared_file[0])
        return out


def manifest_name(seq: int) -> str:
    return f"{_MANIFEST}{seq:016d}"


def garbage(names: list[str], newest: Manifest, previous: Manifest | None) -> list[str]:
    """The files of a task directory neither manifest needs (older manifests, folded and rolled back changes,
    temporary files of killed writers), never a manifest newer than ``newest``."""
    keep = newest.names() | (previous.names() if previous is not None else set())
    out = []
    for name in names:
        if name in keep:
            continue
        if name.startswith(_MANIFEST):
            if name < manifest_name(newest.seq):
                out.append(name)
        elif name.startswith((_CHANGES, _BASE, _TMP)):
            out.append(name)
    return sorted(out)


def should_compact(files: tuple[tuple[str, int], ...], compact_files: int) -> bool:
    """Whether a commit folds its files into one base: more files than allowed, or the changes outweigh a base
    (then a reload would read more than the map)."""
    if len(files) <= 1:
        return False
    if len(files) > compact_files:
        return True
    base = files[0][1] if files[0][0].startswith(_BASE) else 0
    changes = sum(size for _, size in files) - base
    return base > 0 and changes > 2 * base


# ----------------------------------------------------------------------------------------------------- state


class CheckpointDirState(KeyValueState):
    """A :class:`KeyValueState` kept in a checkpoint directory; every call that reaches the directory raises
    :class:`StateBackendError` when it fails.  Keys are kept by their codec body (a tuple key reads back as a
    list, as from Redis)."""

    def __init__(self, blobs: Blobs, compact_files: int = 8) -> None:
        # no super().__init__: nothing of the in-memory state is used
        self._blobs = blobs
        self._compact_files = compact_files
        self._current: dict[bytes, Any] = {}
        #: the committed value (or ABSENT) of every key changed since the last commit
        self._undo: dict[bytes, Any] = {}
        #: keys changed since the prepare (while a prepare is pending)
        self._after_prepare: set[bytes] = set()
        #: the prepared changes (key -> value or ABSENT), None when nothing is prepared
        self._prepared: dict[bytes, Any] | None = None
        self._manifest = Manifest()
        self._previous: Manifest | None = None
        self._load()

    @classmethod
    def open(cls, settings: Settings, topology_name: str, namespace: str) -> CheckpointDirState:
        """The state of ``namespace`` of topology ``topology_name`` under the settings' url."""
        blobs = open_root(settings).child(_safe_part(topology_name)).child(_safe_part(namespace))
        return cls(blobs, settings.compact_files)

    @classmethod
    def committed_of(cls, settings: Settings, topology_name: str, component: str) -> dict[int, dict[Any, Any]]:
        """The committed state of every task of ``component`` found under the url, by task id (for tools and
        tests)."""
        topo = open_root(settings).child(_safe_part(topology_name))
        out: dict[int, dict[Any, Any]] = {}
        for name in topo.names():
            task = name[len(component) + 1:]
            if name.startswith(f"{component}-") and task.isdigit():
                out[int(task)] = cls._committed(topo.child(name), settings)
        return out

    @classmethod
    def committed(cls, settings: Settings, topology_name: str, namespace: str) -> dict[Any, Any]:
        """The committed state of ``namespace`` of topology ``topology_name`` (for tools and tests)."""
        return cls._committed(open_root(settings).child(_safe_part(topology_name)).child(_safe_part(namespace)),
                              settings)

    @classmethod
    def _committed(cls, blobs: Blobs, settings: Settings) -> dict[Any, Any]:
        state = cls(blobs, settings.compact_files)
        if state.prepared_txid() is not None:
            state._rollback_memory()
        return dict(state)

    # ------------------------------------------------------------------------------------------- reading

    def _load(self) -> None:
        """Read the newest whole commit; a file gone meanwhile (a writer went on and removed what its two newest
        manifests no longer need: a reader beside a running task) makes it read the newer manifest instead."""
        for attempt in range(_READ_ATTEMPTS):
            try:
                self._load_once()
                return
            except _Gone:
                if attempt == _READ_ATTEMPTS - 1:
                    raise
                self._current, self._undo, self._prepared = {}, {}, None
                self._manifest, self._previous = Manifest(), None

    def _load_once(self) -> None:
        names = self._blobs.names()
        found: list[Manifest] = []
        for name in sorted((n for n in names if n.startswith(_MANIFEST)), reverse=True):
            raw = self._blobs.read(name)
            if raw is None:
                raise _Gone(f"checkpoint_dir {self._blobs.where!r}: {name} went away while read")
            try:
                found.append(Manifest.of(decode(raw)))
            except (ValueError, KeyError, TypeError, IndexError):
                continue  # torn by a killed writer: the previous manifest is in force
            if len(found) == 2:
                break
        if not found:
            return
        self._manifest = found[0]
        self._previous = found[1] if len(found) > 1 else None
        for name, _ in self._manifest.files:
            self._apply(self._read_changes(name), self._current, None)
        if self._manifest.prepared_file is not None:
            self._prepared = {}
            self._apply(self._read_changes(self._manifest.prepared_file[0]), self._current, self._undo,
                        self._prepared)

    def _read_changes(self, name: str) -> dict[str, Any]:
        raw = self._blobs.read(name)
        if raw is None:
            raise _Gone(f"checkpoint_dir {self._blobs.where!r}: {name} is missing (its manifest names it)")
        try:
            payload = decode(raw)
        except ValueError as err:
            raise StateBackendError(f"checkpoint_dir {self._blobs.where!r}: {name} is damaged: {err}") from err
        if not isinstance(payload, dict):
            raise StateBackendError(f"checkpoint_dir {self._blobs.where!r}: {name} is not a changes file")
        return payload

    @staticmethod
    def _apply(payload: dict[str, Any], into: dict[bytes, Any], undo: dict[bytes, Any] | None,
               record: dict[bytes, Any] | None = None) -> None:
        puts: dict[bytes, Any] = payload.get("puts") or {}
        deletes: list[bytes] = payload.get("deletes") or []
        for k, v in puts.items():
            if undo is not None and k not in undo:
                undo[k] = into.get(k, ABSENT)
            into[k] = v
            if record is not None:
                record[k] = v
        for k in deletes:
            if undo is not None and k not in undo:
                undo[k] = into.get(k, ABSENT)
            into.pop(k, None)
            if record is not None:
                record[k] = ABSENT

    # ------------------------------------------------------------------------------------- the map

    def _touch(self, k: bytes) -> None:
        if k not in self._undo:
            self._undo[k] = self._current.get(k, ABSENT)
        if self._prepared is not None:
            self._after_prepare.add(k)

    def put(self, key: Any, value: Any) -> None:
        k = pack_value(key)
        self._touch(k)
        self._current[k] = value

    def put_all(self, entries: Iterable[tuple[Any, Any]]) -> None:
        for key, value in entries:
            self.put(key, value)

    def get(self, key: Any, default: Any = None) -> Any:
        return self._current.get(pack_value(key), default)

    def delete(self, key: Any) -> None:
        k = pack_value(key)
        if k in self._current:
            self._touch(k)
            del self._current[k]

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return iter([(unpack_value(k), v) for k, v in self._current.items()])

    def __len__(self) -> int:
        return len(self._current)

    # --------------------------------------------------------------------------------- transactions

    def _changes(self) -> tuple[dict[str, Any], dict[bytes, Any]]:
        """The payload of a changes file of every key changed since the last commit, and those changes."""
        changes = {k: self._current.get(k, ABSENT) for k in self._undo}
        puts = {k: v for k, v in changes.items() if v is not ABSENT}
        return {"puts": puts, "deletes": [k for k, v in changes.items() if v is ABSENT]}, changes

    def _write_file(self, name: str, payload: dict[str, Any], what: str) -> int:
        try:
            data = encode(payload)
        except CodecError as err:
            raise StateBackendError(f"checkpoint_dir {self._blobs.where!r} cannot {what}: {err}") from err
        self._blobs.write(name, data)
        return len(data)

    def _publish(self, manifest: Manifest) -> None:
        """Write ``manifest`` (the commit record, last), then remove what neither it nor its predecessor needs."""
        self._blobs.write(manifest_name(manifest.seq), encode(manifest.payload()))
        self._previous, self._manifest = self._manifest, manifest
        for name in garbage(self._blobs.names(), manifest, self._previous):
            self._blobs.remove(name)

    def prepare_commit(self, txid: int) -> None:
        m = self._manifest
        if m.prepared is not None and txid < m.prepared:
            raise StateBackendError(f"cannot prepare txid {txid}: txid {m.prepared} is already prepared", txid=txid)
        seq = m.seq + 1
        if m.seq == 0:
            self._blobs.make()
        payload, changes = self._changes()
        name = f"{_CHANGES}{seq:016d}"
        size = self._write_file(name, payload, f"prepare txid {txid}")
        self._publish(replace(m, seq=seq, prepared=txid, prepared_file=(name, size)))
        self._prepared = changes
        self._after_prepare = set()

    def commit(self, txid: int | None = None) -> None:
        m = self._manifest
        if txid is None:  # commit the current changes at once (the checkpoint spout's own state)
            self._commit_all(m)
            return
        if m.prepared is not None and m.prepared == txid and m.prepared_file is not None and \
                self._prepared is not None:
            files = (*m.files, m.prepared_file)
            prepared = self._prepared
            # keys changed after the prepare stay uncommitted: their committed value is now the prepared one
            self._undo = {k: (prepared[k] if k in prepared else self._undo[k]) for k in self._after_prepare}
            self._prepared, self._after_prepare = None, set()
            seq = m.seq + 1
            if should_compact(files, self._compact_files):
                files = (self._write_base(seq, f"commit txid {txid}"),)
            self._publish(Manifest(seq, txid, files))
        elif txid != m.committed:
            raise StateBackendError(
                f"checkpoint_dir {self._blobs.where!r} cannot commit txid {txid}: it was not prepared (prepared: "
                f"{m.prepared if m.prepared is not None else 'none'}, committed: {m.committed})",
                txid=txid,
            )

    def _commit_all(self, m: Manifest) -> None:
        seq = m.seq + 1
        if m.seq == 0:
            self._blobs.make()
        payload, _ = self._changes()
        self._undo, self._prepared, self._after_prepare = {}, None, set()
        files: tuple[tuple[str, int], ...]
        if should_compact((*m.files, (_CHANGES, 0)), self._compact_files):
            files = (self._write_base(seq, "commit"),)
        else:
            name = f"{_CHANGES}{seq:016d}"
            files = (*m.files, (name, self._write_file(name, payload, "commit")))
        self._publish(Manifest(seq, m.committed, files))

    def _write_base(self, seq: int, what: str) -> tuple[str, int]:
        """Write the committed map (the current one with every uncommitted change undone) as one file."""
        snapshot = dict(self._current)
        for k, old in self._undo.items():
            if old is ABSENT:
                snapshot.pop(k, None)
            else:
                snapshot[k] = old
        name = f"{_BASE}{seq:016d}"
        return name, self._write_file(name, {"puts": snapshot, "deletes": []}, what)

    def _rollback_memory(self) -> None:
        for k, old in self._undo.items():
            if old is ABSENT:
                self._current.pop(k, None)
            else:
                self._current[k] = old
        self._undo, self._prepared, self._after_prepare = {}, None, set()

    def rollback(self) -> None:
        self._rollback_memory()
        m = self._manifest
        if m.prepared is not None:
            self._publish(Manifest(m.seq + 1, m.committed, m.files))

    def committed_txid(self) -> int:
        return self._manifest.committed

    def prepared_txid(self) -> int | None:
        return self._manifest.prepared

    def __repr__(self) -> str:
        return f"CheckpointDirState({self._blobs.where!r}, committed txid {self.committed_txid()})"
