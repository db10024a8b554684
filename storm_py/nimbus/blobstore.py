"""This module owns nimbus's blob store: topology packages on local disk, registered in the cluster state, replicated.

Each topology has two immutable blobs: ``<id>-stormjar.zip`` (the package archive) and ``<id>-stormcode.json``
(its entry point, file name and digest).  Every nimbus keeps them in ``<storm.local.dir>/nimbus/blobs`` and
records itself as a holder under ``blobstore/<key>`` in the cluster state; standby nimbuses copy what they lack
from a holder (:class:`BlobReplicator`), so a failover loses no topology.  Supervisors download from any holder.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from storm_py.api.topology import StormTopology
from storm_py.clock import SYSTEM_CLOCK, Clock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.errors import StormPyError, TopologyLoadError
from storm_py.node.http_api import BadRequestError
from storm_py.packaging.package import TopologyPackage, digest

log = logging.getLogger(__name__)

#: A topology's blobs are written once; their version in the cluster state is always this (a user blob's
#: version grows with each update, :mod:`storm_py.nimbus.userblobs`).
BLOB_VERSION = 1
#: A local blob missing from the cluster state is deleted only when older than this (it may be mid-submit).
ORPHAN_GRACE_SECS = 60.0
#: After a failed copy, a blob is tried again after this long, doubling up to the ceiling.
COPY_RETRY_SECS = 1.0
COPY_RETRY_MAX_SECS = 60.0

Fetch = Callable[[str, str], bytes]


def jar_key(topology_id: str) -> str:
    """The key of a topology's package archive."""
    return f"{topology_id}-stormjar.zip"


def code_key(topology_id: str) -> str:
    """The key of a topology's code description (entry point, file name, digest)."""
    return f"{topology_id}-stormcode.json"


def topology_keys(topology_id: str) -> tuple[str, str]:
    """Both blob keys of a topology."""
    return jar_key(topology_id), code_key(topology_id)


class LocalFsBlobStore:
    """Blobs as files in one directory (names percent-encoded), written atomically."""

    def __init__(self, root: Path, clock: Clock = SYSTEM_CLOCK) -> None:
        self.root = root
        self.clock = clock  # file times are wall times
        root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        """The file of blob ``key``: its percent-encoded name in the root.  A key whose name would be the root,
        its parent or a hidden file (``.``, ``..``, a write in progress) names no blob (400)."""
        name = quote(key, safe="")
        if not name or name.startswith("."):
            raise BadRequestError(f"blob key {key!r} names no blob (a key may not be empty or start with '.')",
                                  key=key)
        return self.root / name

    def put(self, key: str, data: bytes) -> None:
        """Write blob ``key`` (replacing it)."""
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.root)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self._path(key))
        except OSError as err:
            Path(tmp).unlink(missing_ok=True)
            raise StormPyError(f"cannot write blob {key} under {self.root}: {err}", key=key) from err

    def get(self, key: str) -> bytes | None:
        """Blob ``key``'s bytes, or None."""
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None

    def has(self, key: str) -> bool:
        """Whether blob ``key`` is here (a key naming no blob is not)."""
        try:
            return self._path(key).is_file()
        except BadRequestError:
            return False

    def age_secs(self, key: str) -> float:
        """Seconds since blob ``key`` was written (0 when it is missing)."""
        try:
            return max(0.0, self.clock.wall() - self._path(key).stat().st_mtime)
        except FileNotFoundError:
            return 0.0

    def delete(self, key: str) -> None:
        """Remove blob ``key`` if present."""
        self._path(key).unlink(missing_ok=True)

    def list_keys(self) -> list[str]:
        """Every blob key here, sorted."""
        return sorted(unquote(p.name) for p in self.root.iterdir() if p.is_file() and not p.name.startswith("."))


def code_description(package: TopologyPackage) -> bytes:
    """The ``-stormcode.json`` blob of a package."""
    return json.dumps(
        {"entry": package.entry, "filename": package.filename, "sha256": package.sha256}, sort_keys=True
    ).encode("utf-8")


def parse_code_description(data: bytes, key: str) -> dict[str, Any]:
    """Read a ``-stormcode.json`` blob; raise :class:`TopologyLoadError` when it is malformed."""
    try:
        meta = json.loads(data.decode("utf-8"))
        if not isinstance(meta, dict) or not isinstance(meta.get("entry"), str):
            raise ValueError("no entry point")
        return meta
    except (UnicodeDecodeError, ValueError) as err:
        raise TopologyLoadError(f"blob {key} is not a code description: {err}", key=key) from err


class NimbusCodeStore:
    """Nimbus's :class:`~storm_py.packaging.code_store.CodeStore`: packages in the blob store, never imported here."""

    def __init__(self, blobs: LocalFsBlobStore, state: ClusterState, holder_id: str) -> None:
        self.blobs = blobs
        self.state = state
        self.holder_id = holder_id

    def put(self, topology_id: str, code: Any) -> None:
        """Store a :class:`TopologyPackage` and register this nimbus as its holder."""
        if not isinstance(code, TopologyPackage):
            raise TopologyLoadError(f"expected a topology package for {topology_id}, got {type(code).__name__}")
        self.blobs.put(jar_key(topology_id), code.data)
        self.blobs.put(code_key(topology_id), code_description(code))
        for key in topology_keys(topology_id):
            self.state.register_blob_holder(key, self.holder_id, BLOB_VERSION)

    def load(self, topology_id: str, conf: dict[str, Any]) -> StormTopology:
        """Nimbus never imports topology code (workers load it from the package)."""
        raise TopologyLoadError(f"nimbus does not load the code of {topology_id}; its workers do", topology=topology_id)

    def delete(self, topology_id: str) -> None:
        """Forget a topology's blobs here and in the cluster state (standby nimbuses follow)."""
        for key in topology_keys(topology_id):
            self.blobs.delete(key)
            try:
                self.state.remove_blob(key)
            except StormPyError as err:
                log.warning("could not unregister blob %s: %s", key, err)

    def has(self, topology_id: str) -> bool:
        """Whether both blobs of the topology are here."""
        return all(self.blobs.has(k) for k in topology_keys(topology_id))

    def replication_count(self, topology_id: str) -> int:
        """How many nimbuses hold the topology's package."""
        return len(self.state.blob_holders(jar_key(topology_id)))


class BlobReplicator:
    """Keeps this nimbus's blob store equal to the registered blobs: copies missing ones, drops removed ones."""

    def __init__(
        self, blobs: LocalFsBlobStore, state: ClusterState, holder_id: str, fetch: Fetch, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.blobs = blobs
        self.clock = clock
        self.state = state
        self.holder_id = holder_id
        self.fetch = fetch
        self._lock = threading.Lock()
        self._retry: dict[str, tuple[float, float]] = {}  # key -> (when to try again, current delay)

    def sync(self) -> int:
        """One round; returns how many blobs were copied here.  Cluster-state errors propagate."""
        with self._lock:
            registered = set(self.state.blob_keys())
            copied = 0
            for key in sorted(registered):
                holders = self.state.blob_holders(key)
                newest = max(holders.values(), default=BLOB_VERSION)  # user blobs gain versions
                if self.blobs.has(key) and holders.get(self.holder_id, newest) >= newest:
                    if self.holder_id not in holders:
                        self.state.register_blob_holder(key, self.holder_id, newest, follow=True)
                    continue
                retry_at, delay = self._retry.get(key, (0.0, COPY_RETRY_SECS / 2))
                if self.clock.now() < retry_at:
                    continue
                if self._copy(key, [h for h, v in holders.items() if h != self.holder_id and v >= newest], newest):
                    copied += 1
                    self._retry.pop(key, None)
                else:
                    delay = min(delay * 2, COPY_RETRY_MAX_SECS)
                    self._retry[key] = (self.clock.now() + delay, delay)
            for key in [k for k in self._retry if k not in registered]:
                del self._retry[key]
            for key in self.blobs.list_keys():
                if key not in registered and self.blobs.age_secs(key) > ORPHAN_GRACE_SECS:
                    log.info("deleting blob %s: its topology is gone", key)
                    self.blobs.delete(key)
            return copied

    def _copy(self, key: str, holders: list[str], version: int = BLOB_VERSION) -> bool:
        for holder in holders:
            try:
                data = self.fetch(holder, key)
                self.blobs.put(key, data)
            except StormPyError as err:
                log.warning("could not copy blob %s from %s: %s", key, holder, err)
                continue
            if not self.state.register_blob_holder(key, self.holder_id, version, follow=True):
                log.info("blob %s was deleted while it was copied here", key)  # the orphan sweep removes the copy
                return True
            log.info("copied blob %s (%d bytes) from %s", key, len(data), holder)
            return True
        if holders:
            log.warning("no holder of blob %s could serve it (holders: %s)", key, ", ".join(holders))
        return False


def verify_package(data: bytes, meta: dict[str, Any], key: str) -> None:
    """Raise :class:`TopologyLoadError` unless ``data`` matches the digest in its code description."""
    expected = meta.get("sha256")
    if expected and digest(data) != expected:
        raise TopologyLoadError(f"blob {key} does not match its digest (a partial or corrupted copy)", key=key)
