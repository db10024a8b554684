"""This module owns nimbus's credentials routes (Storm's ``uploadNewCredentials``); each needs the token.

* ``POST /api/v1/topology/{id}/credentials`` with ``{"credentials": {"key": "value", ...}}`` -> ``{"id", "name",
  "keys"}``: replaces the topology's credentials (as Storm's ``storm upload-credentials`` does); the topology's
  workers hand them to every spout and bolt that defines ``set_credentials``.  Answered by the leader only.
* ``GET /api/v1/topology/{id}/credentials`` -> ``{"id", "name", "keys"}``: which keys the topology has, never
  their values (``storm-py admin creds``).

``{id}`` is a topology id or name.  Keys and values are strings, keys non-empty; the body, JSON encoded, may be
at most ``nimbus.credentials.max.bytes`` (more is refused with 413).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from storm_py.cluster_state.cluster_state import ClusterState, encode_json
from storm_py.cluster_state.models import Credentials, StormBase
from storm_py.config import defaults
from storm_py.errors import NotLeaderError
from storm_py.node.http_api import BadRequestError, Reply, Request, Route, error_reply

API = "/api/v1"
#: Longest credential key accepted.
MAX_KEY_CHARS = 256


class CredentialsNode(Protocol):
    """What the credentials routes need of the nimbus daemon."""

    conf: dict[str, Any]
    state: ClusterState

    def is_leader(self) -> bool: ...

    def leader_id(self) -> str | None: ...


def parse_credentials(body: Any) -> dict[str, str]:
    """The credentials of an upload's JSON body ``{"credentials": {key: value}}``; malformed input is a
    :class:`BadRequestError` naming what is wrong."""
    if not isinstance(body, Mapping) or not isinstance(body.get("credentials"), Mapping):
        raise BadRequestError('the body must be {"credentials": {"key": "value", ...}}')
    out: dict[str, str] = {}
    for key, value in body["credentials"].items():
        if not isinstance(key, str) or not key.strip():
            raise BadRequestError("a credential key must be a non-empty string")
        if len(key) > MAX_KEY_CHARS:
            raise BadRequestError(f"credential key {key[:40]!r}... is over {MAX_KEY_CHARS} characters")
        if not isinstance(value, str):
            raise BadRequestError(f"credential {key!r} must be a string, not {type(value).__name__}", key=key)
        out[key] = value
    return out


def credentials_routes(node: CredentialsNode, base: Callable[[str], tuple[str, StormBase]]) -> list[Route]:
    """The credentials routes of ``node``; ``base`` finds a live topology by id or name."""

    def upload(req: Request) -> Any:
        limit = int({**defaults(), **node.conf}["nimbus.credentials.max.bytes"])
        if not node.is_leader():
            leader = node.leader_id()
            raise NotLeaderError(f"this nimbus is not the leader (the leader is {leader or 'not elected yet'})",
                                 leader=leader or "")  # fmt: skip
        if len(req.body) > limit:
            return _too_large(len(req.body), limit)
        creds = parse_credentials(req.json())
        size = len(encode_json(creds))
        if size > limit:
            return _too_large(size, limit)
        tid, found = base(req.params["id"])
        node.state.set_credentials(tid, Credentials(creds))
        return {"id": tid, "name": found.name, "keys": sorted(creds)}

    def keys(req: Request) -> Any:
        tid, found = base(req.params["id"])
        stored = node.state.credentials(tid)
        return {"id": tid, "name": found.name, "keys": sorted(stored.creds) if stored is not None else []}

    path = API + "/topology/{id}/credentials"
    return [Route("POST", path, upload, protected=True), Route("GET", path, keys, protected=True)]


def _too_large(size: int, limit: int) -> Reply:
    reply = error_reply(BadRequestError(f"the credentials are {size} bytes, over nimbus.credentials.max.bytes "
                                        f"({limit})", size=size, limit=limit))  # fmt: skip
    reply.status = 413
    return reply
