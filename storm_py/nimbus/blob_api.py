"""This module owns nimbus's routes of the users' blob store (``storm-py blobstore``); every one needs the token.

* ``GET /api/v1/blobs[?key=K...]`` -> ``{"blobs": [{"key", "version", "acl", "size"}]}``
* ``GET /api/v1/blobs/{key}`` -> the blob's bytes (``X-Blob-Version`` says which version)
* ``POST /api/v1/blobs/{key}[?acl=u:alice:rwa,o::r]`` with the bytes as body -> create (409 if it exists)
* ``PUT /api/v1/blobs/{key}`` with the bytes as body -> update (a new version)
* ``POST /api/v1/blobs/{key}/acl`` with ``{"acl": [...]}`` -> set the ACL
* ``DELETE /api/v1/blobs/{key}`` -> delete

Changes are answered by the leader only (a standby answers ``503 not_leader``, which clients follow).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.errors import NotLeaderError
from storm_py.nimbus.blobstore import LocalFsBlobStore
from storm_py.nimbus.userblobs import UserBlobs, check_key, parse_acl
from storm_py.node.http_api import BadRequestError, Reply, Request, Route
from storm_py.node.http_guard import OCTET_STREAM

API = "/api/v1"


class BlobNode(Protocol):
    """What the blob routes need of the nimbus daemon."""

    id: str
    state: ClusterState
    blobs: LocalFsBlobStore

    def is_leader(self) -> bool: ...

    def leader_id(self) -> str | None: ...

    def wake(self) -> None: ...


def blob_routes(node: BlobNode) -> list[Route]:
    """The user blob store's routes of ``node``."""

    def store() -> UserBlobs:
        return UserBlobs(node.blobs, node.state, node.id)

    changing = threading.Lock()  # one change at a time: a version is read, then the next one written

    def leader_only(fn: Callable[[Request], Any]) -> Callable[[Request], Any]:
        def run(req: Request) -> Any:
            if not node.is_leader():
                leader = node.leader_id()
                raise NotLeaderError(f"this nimbus is not the leader (the leader is {leader or 'not elected yet'})",
                                     leader=leader or "")
            with changing:
                out = fn(req)
            node.wake()
            return out
        return run

    def key_of(req: Request) -> str:
        return check_key(req.params["key"])

    def listing(req: Request) -> Any:
        keys = [check_key(k) for k in req.query.get("key", [])]
        return {"blobs": [b.to_json() for b in store().list(keys)]}

    def cat(req: Request) -> Reply:
        blob, data = store().read(key_of(req))
        return Reply(200, data, "application/octet-stream", {"X-Blob-Version": str(blob.version)})

    def create(req: Request) -> Any:
        acl = parse_acl(req.query.get("acl", [""])[0])
        return store().create(key_of(req), req.body, acl).to_json()

    def update(req: Request) -> Any:
        return store().update(key_of(req), req.body).to_json()

    def set_acl(req: Request) -> Any:
        body = req.json()
        acl = body.get("acl") if isinstance(body, dict) else None
        if not isinstance(acl, list) or not all(isinstance(a, str) for a in acl):
            raise BadRequestError("set-acl needs {\"acl\": [\"u:user:rwa\", ...]}")
        return store().set_acl(key_of(req), parse_acl(acl)).to_json()

    def delete(req: Request) -> Any:
        key = key_of(req)
        store().delete(key)
        return {"key": key, "status": "success"}

    path = API + "/blobs/{key}"
    return [
        Route("GET", API + "/blobs", listing, protected=True),
        Route("GET", path, cat, protected=True),
        # a blob's bytes travel as application/octet-stream, which no cross-site form or simple request can send
        Route("POST", path, leader_only(create), protected=True, bodies=(OCTET_STREAM,)),
        Route("PUT", path, leader_only(update), protected=True, bodies=(OCTET_STREAM,)),
        Route("DELETE", path, leader_only(delete), protected=True),
        Route("POST", path + "/acl", leader_only(set_acl), protected=True),
    ]
