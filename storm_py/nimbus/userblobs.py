"""This module owns the users' blobs in nimbus's blob store (Storm's ``storm blobstore``): keys, versions, ACLs.

A user blob ``K`` is stored as blob ``userblob/K`` of :class:`~storm_py.nimbus.blobstore.LocalFsBlobStore`: one
line of JSON metadata (``{"acl": [...], "version": n}``) then the bytes, so data and metadata replicate together.
Each update raises the version registered for its holders in the cluster state; standby nimbuses copy the newer
version (:class:`~storm_py.nimbus.blobstore.BlobReplicator`), supervisors put it into the directories of the
workers whose topology maps it (``topology.blobstore.map``, :mod:`storm_py.supervisor.localizer`).

ACLs keep Storm's form ``[uo]:[user]:[r-][w-][a-]`` and are shown by ``blobstore list``; with one shared cluster
token every authenticated caller acts as the cluster's administrator, so they are recorded, not enforced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.errors import InvalidTopologyException, StormPyError
from storm_py.nimbus.blobstore import LocalFsBlobStore
from storm_py.node.http_api import BadRequestError, NotFoundError

#: Prefix of the store keys of user blobs (a topology id never holds "/", so no topology blob starts with it).
PREFIX = "userblob/"
#: What a user blob key may hold (Storm's keys, plus ":" as in ``mytopo:data.tgz``).
KEY_RE = re.compile(r"^[A-Za-z0-9 _.:-]{1,200}$")
ACL_RE = re.compile(r"^[uo]:[^:,]*:[r-]?[w-]?[a-]?$")
#: Everyone may read, write and administer (Storm's default for a blob created without -a, with one user).
DEFAULT_ACL = ("o::rwa",)


class BlobExistsError(StormPyError):
    """``blobstore create`` of a key that exists."""

    code = "already_alive"


@dataclass(frozen=True)
class UserBlob:
    """One user blob's metadata."""

    key: str
    version: int
    acl: list[str]
    size: int

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready form (what ``GET /api/v1/blobs`` lists)."""
        return {"key": self.key, "version": self.version, "acl": list(self.acl), "size": self.size}


def store_key(key: str) -> str:
    """The blob-store key of user blob ``key`` (checked)."""
    return PREFIX + check_key(key)


def check_key(key: str) -> str:
    """``key`` when it is a valid user blob key; :class:`BadRequestError` naming it otherwise."""
    if not KEY_RE.match(key) or key.strip(" .") == "":
        raise BadRequestError(f"blob key {key!r} must be 1-200 of letters, digits, space, '_', '.', ':' and '-'",
                              key=key)
    return key


def parse_acl(text: str | Sequence[str]) -> list[str]:
    """Storm's comma-separated ACL (``u:alice:rwa,o::r``), each entry checked."""
    entries = [e.strip() for e in (text.split(",") if isinstance(text, str) else text) if e.strip()]
    for entry in entries:
        if not ACL_RE.match(entry):
            raise BadRequestError(f"ACL entry {entry!r} is not [uo]:[user]:[r-][w-][a-]", acl=entry)
    return entries or list(DEFAULT_ACL)


def encode(meta: dict[str, Any], data: bytes) -> bytes:
    """A stored user blob: one line of JSON metadata, then the data."""
    return json.dumps(meta, sort_keys=True, separators=(",", ":")).encode("utf-8") + b"\n" + data


def decode(stored: bytes, key: str) -> tuple[dict[str, Any], bytes]:
    """The metadata and data of a stored user blob."""
    head, sep, data = stored.partition(b"\n")
    try:
        meta = json.loads(head.decode("utf-8")) if sep else None
    except (UnicodeDecodeError, ValueError):
        meta = None
    if not isinstance(meta, dict):
        raise StormPyError(f"stored blob {key!r} has no metadata line", key=key)
    return meta, data


class UserBlobs:
    """Create, update, read, delete and list user blobs held by this nimbus (``holder_id``)."""

    def __init__(self, blobs: LocalFsBlobStore, state: ClusterState, holder_id: str) -> None:
        self.blobs = blobs
        self.state = state
        self.holder_id = holder_id

    def version(self, key: str) -> int:
        """The newest registered version of user blob ``key`` (0: none)."""
        return max(self.state.blob_holders(store_key(key)).values(), default=0)

    def _write(self, key: str, version: int, acl: list[str], data: bytes) -> UserBlob:
        self.blobs.put(store_key(key), encode({"acl": acl, "version": version}, data))
        self.state.register_blob_holder(store_key(key), self.holder_id, version)
        return UserBlob(key, version, acl, len(data))

    def create(self, key: str, data: bytes, acl: list[str]) -> UserBlob:
        """A new blob at version 1; :class:`BlobExistsError` when ``key`` exists."""
        if self.version(key):
            raise BlobExistsError(f"blob {key!r} exists already (use blobstore update)", key=key)
        return self._write(key, 1, acl, data)

    def read(self, key: str) -> tuple[UserBlob, bytes]:
        """A blob's metadata and bytes; :class:`NotFoundError` when there is none."""
        stored = self.blobs.get(store_key(key)) if self.version(key) else None
        if stored is None:
            raise NotFoundError(f"no blob {key!r} in the blob store", key=key)
        meta, data = decode(stored, key)
        return UserBlob(key, int(meta.get("version", 1)), list(meta.get("acl") or []), len(data)), data

    def update(self, key: str, data: bytes) -> UserBlob:
        """New contents for ``key`` at the next version."""
        blob, _ = self.read(key)
        return self._write(key, max(blob.version, self.version(key)) + 1, blob.acl, data)

    def set_acl(self, key: str, acl: list[str]) -> UserBlob:
        """New ACL for ``key`` (a new version, so every holder follows)."""
        blob, data = self.read(key)
        return self._write(key, max(blob.version, self.version(key)) + 1, acl, data)

    def delete(self, key: str) -> None:
        """Remove ``key`` everywhere; :class:`NotFoundError` when there is none."""
        if not self.version(key):
            raise NotFoundError(f"no blob {key!r} in the blob store", key=key)
        self.state.remove_blob(store_key(key))
        self.blobs.delete(store_key(key))

    def list(self, keys: Sequence[str] = ()) -> list[UserBlob]:
        """Every user blob (or those named), by key."""
        names = [k[len(PREFIX):] for k in self.state.blob_keys() if k.startswith(PREFIX)]
        wanted = sorted(set(keys)) if keys else sorted(names)
        return [self.read(k)[0] for k in wanted]

    def check_map(self, mapping: Any) -> None:
        """Refuse a ``topology.blobstore.map`` that is not ``{key: {localname: name}}`` or names a blob that does
        not exist (Storm refuses such a submit too)."""
        if mapping is None:
            return
        if not isinstance(mapping, Mapping) or not all(isinstance(v, Mapping) for v in mapping.values()):
            raise InvalidTopologyException("topology.blobstore.map must map blob keys to {localname: name}")
        missing = sorted(str(k) for k in mapping if not KEY_RE.match(str(k)) or not self.version(str(k)))
        if missing:
            raise InvalidTopologyException(
                f"topology.blobstore.map names blobs not in the blob store: {', '.join(missing)}", keys=missing
            )
