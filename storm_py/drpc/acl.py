"""This module owns who may invoke which DRPC function (pure): ``drpc.authorizer.acl``.

``{function: {"client.users": [names]}}``: a function listed may be invoked by the users it names only; a
function not listed, or no ACL at all, by every user the server recognises.  The cluster token's caller
(:data:`~storm_py.cluster_state.users.CLUSTER_USER`) may invoke everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storm_py.cluster_state.users import CLUSTER_USER
from storm_py.errors import ConfigError

ACL_KEY = "drpc.authorizer.acl"
CLIENT_USERS = "client.users"


def parse_acl(raw: Any) -> dict[str, frozenset[str]]:
    """``drpc.authorizer.acl`` as ``{function: users}``; a malformed value is a :class:`ConfigError` naming it."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{ACL_KEY} must map function names to {{\"{CLIENT_USERS}\": [users]}}, got {raw!r}",
                          key=ACL_KEY)
    out: dict[str, frozenset[str]] = {}
    for function, entry in raw.items():
        users = entry.get(CLIENT_USERS) if isinstance(entry, Mapping) else None
        if isinstance(users, str):
            users = [users]
        if not isinstance(function, str) or not isinstance(users, list) or not all(isinstance(u, str) for u in users):
            raise ConfigError(f"{ACL_KEY} entry {function!r} must be {{\"{CLIENT_USERS}\": [user names]}}, got "
                              f"{entry!r}", key=ACL_KEY)
        out[function] = frozenset(users)
    return out


def may_invoke(acl: Mapping[str, frozenset[str]], user: str | None, function: str) -> bool:
    """Whether ``user`` may invoke ``function`` (``user`` None: the server has no token, so no users)."""
    if user is None or user == CLUSTER_USER:
        return True
    allowed = acl.get(function)
    return allowed is None or user in allowed
