"""This module owns nimbus's user routes (``storm-py users``); each needs an admin's token (the gate checks) and
the leader for changes.

* ``GET /api/v1/users`` -> ``{"users": [{"name", "role", "created"}]}`` (never a token or its hash);
* ``POST /api/v1/users`` ``{"name", "role"}`` -> ``{"name", "role", "token"}``: the token is in this reply only;
* ``POST /api/v1/users/:name/rotate`` -> ``{"name", "token"}``: the old token names nobody from then on;
* ``DELETE /api/v1/users/:name`` -> ``{"name", "status": "removed"}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from storm_py.clock import Clock
from storm_py.cluster_state.users import USER, UserStore
from storm_py.errors import NotLeaderError
from storm_py.node.http_api import BadRequestError, NotFoundError, Request, Route

API = "/api/v1"


class UsersNode(Protocol):
    """What the user routes need of the nimbus daemon."""

    clock: Clock

    def is_leader(self) -> bool: ...

    def leader_id(self) -> str | None: ...


def users_routes(node: UsersNode, store: Callable[[], UserStore]) -> list[Route]:
    """The user routes of ``node`` over the users ``store()`` returns (read when a request comes)."""

    def leader() -> None:
        if not node.is_leader():
            found = node.leader_id()
            raise NotLeaderError(f"this nimbus is not the leader (the leader is {found or 'not elected yet'})",
                                 leader=found or "")

    def existing(name: str) -> str:
        if store().get(name) is None:
            raise NotFoundError(f"there is no user {name!r}", user=name)
        return name

    def listing(req: Request) -> Any:
        return {"users": [{"name": u.name, "role": u.role, "created": u.created} for u in store().all()]}

    def add(req: Request) -> Any:
        leader()
        body = req.json()
        if not isinstance(body, Mapping):
            raise BadRequestError("users add needs a JSON object {name, role}")
        name, role = body.get("name"), body.get("role", USER)
        token = store().add(str(name) if isinstance(name, str) else repr(name), str(role), node.clock.wall())
        return {"name": name, "role": role, "token": token}

    def rotate(req: Request) -> Any:
        leader()
        name = existing(req.params["name"])
        return {"name": name, "token": store().rotate(name)}

    def remove(req: Request) -> Any:
        leader()
        name = existing(req.params["name"])
        store().remove(name)
        return {"name": name, "status": "removed"}

    return [
        Route("GET", API + "/users", listing, protected=True),
        Route("POST", API + "/users", add, protected=True),
        Route("POST", API + "/users/{name}/rotate", rotate, protected=True),
        Route("DELETE", API + "/users/{name}", remove, protected=True),
    ]
