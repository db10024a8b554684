"""This module owns the DRPC server daemon (``storm-py drpc``): three HTTP ports over one :class:`DRPCService`.

``drpc.port`` serves clients, ``drpc.invocations.port`` serves topologies, ``drpc.http.port`` is Storm's HTTP
endpoint (the routes are in :mod:`storm_py.drpc.wire`).  Each port is a
:class:`~storm_py.node.http_api.JsonApiServer` with every route but ``/health`` protected by the cluster token
(``nimbus.auth.token``, checked in constant time from the headers before the body is read).  The open
``GET /health`` says ``{"status": "ok"}`` and nothing else; ``GET /status`` (with the token) adds the number of
pending requests.  The two client ports also take a user's token (the stored users of a shared cluster), and
``drpc.authorizer.acl`` (:mod:`storm_py.drpc.acl`) says which users may invoke which function: another gets 403.

Bounds: a body over ``drpc.max.request.bytes`` is refused unread (413); at most ``drpc.max.pending.requests``
requests exist at once (more: 503 busy); at most ``drpc.max.connections`` connections per port (more are
closed); a connection silent for ``drpc.connection.timeout.secs`` while a request is read or a reply written is
dropped; a request unanswered for ``drpc.request.timeout.secs`` gets 504.  On stop, waiting clients get 503.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from storm_py.clock import SYSTEM_CLOCK, Clock, wait_until
from storm_py.cluster_state.users import UserStore
from storm_py.config import defaults
from storm_py.drpc.acl import ACL_KEY, may_invoke, parse_acl
from storm_py.drpc.errors import BAD_REQUEST, FORBIDDEN, DRPCExecutionException
from storm_py.drpc.service import DRPCService, check_function
from storm_py.drpc.wire import (
    EXECUTE_PATH,
    FAILURE_PATH,
    FETCH_PATH,
    MAX_FETCH_BATCH,
    MAX_FETCH_WAIT_SECS,
    RESULT_PATH,
    STATUS_PATH,
    error_body,
)
from storm_py.errors import ConfigError, StormPyError, WaitTimeoutError
from storm_py.node.http_api import JsonApiServer, Reply, Request, Route
from storm_py.node.http_guard import JSON, allowed_hosts
from storm_py.node.loop import until_stopped
from storm_py.node.tls import server_context
from storm_py.node.user_tokens import TokenDirectory, UserTokenGate

log = logging.getLogger(__name__)

#: How long stop waits for answered clients to get their replies.
STOP_GRACE_SECS = 2.0


def _error(err: DRPCExecutionException) -> Reply:
    return Reply.of_json(error_body(err), err.status)


def _field(body: Any, name: str, kind: type) -> Any:
    value = body.get(name) if isinstance(body, dict) else None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise DRPCExecutionException(f"the request needs {name!r} as a {kind.__name__}", BAD_REQUEST)
    return value


class DRPCServer:
    """The DRPC server (see the module docstring).  ``start()`` binds the ports, ``stop()`` releases them."""

    def __init__(self, conf: Mapping[str, Any], clock: Clock = SYSTEM_CLOCK, users: UserStore | None = None) -> None:
        """``users``: the stored users (default: read through a state session of its own, opened at the first
        user token)."""
        c = {**defaults(), **conf}
        token = c.get("nimbus.auth.token")
        if not token:
            raise ConfigError("the DRPC server needs the cluster's nimbus.auth.token", key="nimbus.auth.token")
        self.conf = c
        self.acl = parse_acl(c.get(ACL_KEY))
        self.directory = TokenDirectory(c, users)
        self.host = str(c["drpc.host"])
        self.service = DRPCService(float(c["drpc.request.timeout.secs"]), int(c["drpc.max.pending.requests"]), clock)
        limits: dict[str, Any] = {
            "token": str(token),
            "max_body": int(c["drpc.max.request.bytes"]),
            "timeout": float(c["drpc.connection.timeout.secs"]) or None,
            "max_connections": int(c["drpc.max.connections"]),
            "hosts": allowed_hosts(c, self.host),
            "tls": server_context(c),
        }
        status = Route("GET", STATUS_PATH, self._status, protected=True)
        ports = [
            ("drpc", int(c["drpc.port"]), [Route("POST", EXECUTE_PATH, self._execute, protected=True)]),
            ("drpc-invocations", int(c["drpc.invocations.port"]), [
                Route("POST", FETCH_PATH, self._fetch, protected=True),
                Route("POST", RESULT_PATH, self._result, protected=True),
                Route("POST", FAILURE_PATH, self._failure, protected=True),
            ]),
        ]
        if int(c["drpc.http.port"]) >= 0:
            ports.append(("drpc-http", int(c["drpc.http.port"]), [
                # the rest of the path is the arguments, slashes included (Storm's ``/drpc/reach/foo.com/blog/1``;
                # percent-encoded slashes work too)
                Route("GET", "/drpc/{function}/{args*}", self._http_execute, protected=True),
                Route("GET", "/drpc/{function}", self._http_execute, protected=True),
                # the arguments are the body as text (Storm's ``curl -d ARGS``)
                Route("POST", "/drpc/{function}", self._http_execute, protected=True,
                      bodies=("text/plain", "application/x-www-form-urlencoded", JSON)),
            ]))
        self.servers: dict[str, JsonApiServer] = {}
        gate = UserTokenGate(self.directory)  # users invoke; topologies (the invocations port) use the cluster token
        try:
            for name, port, routes in ports:
                self.servers[name] = JsonApiServer(self.host, port, [status, *routes], name=name, **limits,
                                                   gate=None if name == "drpc-invocations" else gate)
        except OSError as err:
            self._close_all()
            raise StormPyError(f"the DRPC server cannot listen on {self.host}: {err.strerror}", host=self.host) from err
        self._stopped = threading.Event()

    @property
    def port(self) -> int:
        """The client port actually bound."""
        return self.servers["drpc"].port

    @property
    def invocations_port(self) -> int:
        """The invocations port actually bound."""
        return self.servers["drpc-invocations"].port

    @property
    def http_port(self) -> int | None:
        """The HTTP port actually bound (None when off)."""
        server = self.servers.get("drpc-http")
        return server.port if server is not None else None

    def start(self) -> None:
        """Serve every port from background threads."""
        self.directory.connect()
        for server in self.servers.values():
            server.start()
        log.info("DRPC server on %s: clients %d, invocations %d, http %s", self.host, self.port,
                 self.invocations_port, self.http_port)

    def run(self, stop: threading.Event) -> None:
        """Serve until ``stop`` is set."""
        until_stopped(stop)

    def stop(self) -> None:
        """Answer waiting clients with a shutdown error, then release the ports."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self.service.close()
        try:
            wait_until(lambda: self.service.pending() == 0, STOP_GRACE_SECS, interval=0.02, what="DRPC replies")
        except WaitTimeoutError:
            log.warning("stopping the DRPC server with %d requests still unanswered", self.service.pending())
        self._close_all()

    def _close_all(self) -> None:
        for server in self.servers.values():
            server.stop()
        self.directory.close()

    def _check_acl(self, request: Request, function: str) -> None:
        if not may_invoke(self.acl, request.user, function):
            raise DRPCExecutionException(f"user {request.user!r} may not invoke DRPC function {function!r} "
                                         f"({ACL_KEY})", FORBIDDEN, function=function)

    # ------------------------------------------------------------------------------------------------ routes

    def _status(self, request: Request) -> Any:
        return {"status": "ok", "pending": self.service.pending()}

    def _execute(self, request: Request) -> Any:
        try:
            body = request.json()
            function = check_function(_field(body, "function", str))
            self._check_acl(request, function)
            return {"result": self.service.execute(function, _field(body, "args", str))}
        except DRPCExecutionException as err:
            return _error(err)

    def _http_execute(self, request: Request) -> Any:
        try:
            function = check_function(request.params["function"])
            self._check_acl(request, function)
            if request.method == "POST":
                try:
                    args = request.body.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise DRPCExecutionException("the request body is not UTF-8 text", BAD_REQUEST) from err
            else:
                args = request.params.get("args", "")
            result = self.service.execute(function, args)
        except DRPCExecutionException as err:
            return _error(err)
        return Reply(200, result.encode("utf-8"), "text/plain; charset=utf-8")

    def _fetch(self, request: Request) -> Any:
        try:
            body = request.json()
            function = check_function(_field(body, "function", str))
            limit = min(MAX_FETCH_BATCH, max(1, int(body.get("max") or 1)))
            wait = float(body.get("wait_secs") or 0.0)
            if not wait >= 0.0:  # also refuses nan
                raise DRPCExecutionException(f"wait_secs must be >= 0, got {wait}", BAD_REQUEST)
            got = self.service.fetch(function, limit, min(wait, MAX_FETCH_WAIT_SECS))
        except (TypeError, ValueError) as err:
            return _error(DRPCExecutionException(f"bad fetch request: {err}", BAD_REQUEST))
        except DRPCExecutionException as err:
            return _error(err)
        return {"requests": [{"id": i.id, "args": i.args} for i in got]}

    def _result(self, request: Request) -> Any:
        try:
            body = request.json()
            return {"accepted": self.service.result(_field(body, "id", str), _field(body, "result", str))}
        except DRPCExecutionException as err:
            return _error(err)

    def _failure(self, request: Request) -> Any:
        try:
            body = request.json()
            message = body.get("message") if isinstance(body, dict) else None
            text = str(message)[:2000] if message else "the topology failed the request"
            return {"accepted": self.service.fail(_field(body, "id", str), text)}
        except DRPCExecutionException as err:
            return _error(err)
