"""This module owns the signatures on the records that decide what runs: storm bases and assignments (pure).

Nimbus signs each one it writes with a key derived from the cluster's ``nimbus.auth.token`` (never from the
ZooKeeper digest payload, so whoever steals the digest credentials still cannot sign); nimbus, supervisors and
workers check the signature of each one they read and refuse one that is unsigned or mis-signed: it is logged,
counted, and read as absent, so a ZooKeeper write by someone holding only the digest schedules and runs nothing.

The signature is an HMAC-SHA256 over the znode's path and the record's stored JSON (keys sorted), kept in the
record under :data:`SIGNATURE_FIELD`; binding the path means a record copied to another topology's node does
not verify either.  Without a token nothing is signed and nothing is checked (a loopback-only development setup).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

#: The field of a stored record that holds its signature (hex).
SIGNATURE_FIELD = "signature"


def _canonical(path: str, record: Mapping[str, Any]) -> bytes:
    body = json.dumps(dict(record), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return path.encode("utf-8") + b"\x00" + body.encode("utf-8")


class RecordSigner:
    """Signs records and checks their signatures with one key."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("a record signing key needs at least 16 bytes")
        self._key = key

    def _mac(self, path: str, record: Mapping[str, Any]) -> str:
        return hmac.new(self._key, _canonical(path, record), hashlib.sha256).hexdigest()

    def sign(self, path: str, record: Mapping[str, Any]) -> dict[str, Any]:
        """``record`` with its signature for ``path`` (a signature it already has is replaced)."""
        body = {k: v for k, v in record.items() if k != SIGNATURE_FIELD}
        return {**body, SIGNATURE_FIELD: self._mac(path, body)}

    def verify(self, path: str, record: Mapping[str, Any]) -> dict[str, Any] | None:
        """The record without its signature when the signature is right for ``path``, else None."""
        given = record.get(SIGNATURE_FIELD)
        if not isinstance(given, str):
            return None
        body = {k: v for k, v in record.items() if k != SIGNATURE_FIELD}
        return body if hmac.compare_digest(given.encode("ascii", "replace"), self._mac(path, body).encode()) else None


def record_key(conf: Mapping[str, Any]) -> bytes | None:
    """The record signing key of the cluster configured by ``conf`` (None without ``nimbus.auth.token``)."""
    token = conf.get("nimbus.auth.token")
    if not token:
        return None
    return hmac.new(str(token).encode("utf-8"), b"zk-records", hashlib.sha256).digest()


def signer_from_conf(conf: Mapping[str, Any]) -> RecordSigner | None:
    """The signer of ``conf``'s cluster, or None when it has no token."""
    key = record_key(conf)
    return None if key is None else RecordSigner(key)
