"""This module owns the stored users of a shared cluster: names, roles and the hashes of their tokens.

A user is a record under ``users/<name>`` (its role and the SHA-256 of its token, never the token) and an index
entry ``user-tokens/<hash>`` naming the user, so a token is identified with two reads whatever the number of users.
Both are signed like storm bases (:mod:`storm_py.cluster_state.signing`): a record planted by a ZooKeeper client without
the cluster token is refused, so it grants nothing.  Tokens are 256 random bits, so one SHA-256 is as hard to
reverse as the token is to guess (no slow hash needed).  Every daemon holding the cluster token can identify a
token (nimbus, the UI, the DRPC server); only nimbus writes.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from storm_py.cluster_state import znodes
from storm_py.cluster_state.cluster_state import ClusterState, decode_json, encode_json
from storm_py.errors import ConfigError

ADMIN, USER, READONLY = "admin", "user", "readonly"
#: The roles a stored user may have.
ROLES = (ADMIN, USER, READONLY)
#: The name the cluster token (``nimbus.auth.token``) acts under: an admin no stored user may be named after.
CLUSTER_USER = "cluster"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def check_name(name: object) -> str:
    """``name`` when it can name a user (letters, digits, ``.``, ``_``, ``-``; at most 64; not ``cluster``)."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ConfigError(f"user name {name!r} is invalid: 1 to 64 letters, digits, '.', '_' or '-', starting "
                          "with a letter or digit", user=str(name))
    if name == CLUSTER_USER:
        raise ConfigError(f"user name {name!r} is reserved for the cluster token", user=name)
    return name


def check_role(role: object) -> str:
    """``role`` when it is one of :data:`ROLES`."""
    if role not in ROLES:
        raise ConfigError(f"role {role!r} is not one of {', '.join(ROLES)}", role=str(role))
    return str(role)


def token_hash(token: str) -> str:
    """The stored form of a token (hex SHA-256)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh user token (256 random bits, URL-safe)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class UserRecord:
    """One stored user."""

    name: str
    role: str
    token_hash: str
    created: float

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready form."""
        return {"name": self.name, "role": self.role, "token_hash": self.token_hash, "created": self.created}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> UserRecord:
        """Parse the stored form."""
        return cls(str(obj["name"]), check_role(obj["role"]), str(obj["token_hash"]), float(obj["created"]))


class UserStore:
    """The users of the cluster that ``state`` reaches."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state

    def _write(self, path: str, obj: Mapping[str, Any]) -> None:
        signer = self.state.signer
        self.state.storage.set(path, encode_json(signer.sign(path, obj) if signer is not None else dict(obj)))

    def _read(self, path: str) -> dict[str, Any] | None:
        data = self.state.storage.get(path)
        if data is None:
            return None
        obj = decode_json(path, data)
        if not isinstance(obj, Mapping):
            return None
        signer = self.state.signer
        return signer.verify(path, obj) if signer is not None else dict(obj)

    def get(self, name: str) -> UserRecord | None:
        """The user ``name`` (None when there is none, or its record does not verify)."""
        if not _NAME_RE.match(name):
            return None
        obj = self._read(znodes.user(self.state.root, name))
        try:
            return UserRecord.from_json(obj) if obj is not None else None
        except (KeyError, TypeError, ValueError, ConfigError):
            return None

    def all(self) -> list[UserRecord]:
        """Every user, by name."""
        found = (self.get(n) for n in sorted(self.state.storage.children(znodes.users(self.state.root))))
        return [u for u in found if u is not None]

    def identify(self, token: str) -> UserRecord | None:
        """The user whose token is ``token``, or None."""
        if not token:
            return None
        digest = token_hash(token)
        entry = self._read(znodes.user_token(self.state.root, digest))
        name = entry.get("name") if entry is not None else None
        user = self.get(name) if isinstance(name, str) else None
        if user is None or not secrets.compare_digest(user.token_hash, digest):
            return None  # a stale index entry (rotated, removed) names nobody
        return user

    def add(self, name: str, role: str, now: float) -> str:
        """Create user ``name`` with ``role``; its token (returned, and kept nowhere)."""
        check_name(name)
        check_role(role)
        if self.get(name) is not None:
            raise ConfigError(f"user {name!r} already exists (rotate its token or remove it first)", user=name)
        return self._issue(UserRecord(name, role, "", now))

    def rotate(self, name: str) -> str:
        """A new token for ``name``; the old one identifies nobody from now on."""
        user = self._existing(name)
        return self._issue(user)

    def remove(self, name: str) -> None:
        """Forget user ``name`` and its token."""
        user = self._existing(name)
        self.state.storage.delete(znodes.user(self.state.root, name))
        self.state.storage.delete(znodes.user_token(self.state.root, user.token_hash))

    def _existing(self, name: str) -> UserRecord:
        user = self.get(name)
        if user is None:
            raise ConfigError(f"there is no user {name!r}", user=name)
        return user

    def _issue(self, user: UserRecord) -> str:
        token = new_token()
        digest = token_hash(token)
        self._write(znodes.user_token(self.state.root, digest), {"name": user.name})
        self._write(znodes.user(self.state.root, user.name), UserRecord(user.name, user.role, digest,
                                                                        user.created).to_json())
        if user.token_hash:  # the record no longer matches the old entry either way; tidy it
            self.state.storage.delete(znodes.user_token(self.state.root, user.token_hash))
        return token
