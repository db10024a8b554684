"""This module owns the HTTP plumbing shared by nimbus's API, the log viewer and the UI relay: routes, tokens, errors.

A :class:`JsonApiServer` serves a table of :class:`Route` s on a thread pool; a handler gets a
:class:`Request` and returns a JSON-ready value or a :class:`Reply`.  A :class:`~storm_py.errors.StormPyError`
becomes an error reply ``{"error": <code>, "errorMessage": <message>, ...fields}`` with a status that fits
the code (Storm's UI answers every error with 500; clients here also get a meaningful status).  With a token
configured (every daemon has one), every route requires ``Authorization: Bearer <token>`` except ``GET /health``
(answered here when no route claims it) and routes or fallback paths declared ``public`` (the UI's static files).
With a :class:`Gate` (a shared cluster's users), a user's token is accepted too; the gate decides, before any
handler runs, whether the caller may send the request (403 if not), and records what was changed or refused.

Browser safety, for every route alike (:mod:`storm_py.node.http_guard`): a ``Host`` that is not one of the
server's names or an IP address is refused (DNS rebinding), so is an ``Origin`` other than the server's own and a
body whose type is not one its route accepts (JSON by default: a cross-site "simple" POST is ``text/plain``);
every reply carries the security headers; a client sending too many wrong tokens is answered 429 for a while.
With ``tls`` the port speaks TLS only.

Bounds (anything reaching the port is hostile until proven otherwise): one ``Content-Length`` frames a body and
is the one read, anything else is refused from the headers (:mod:`storm_py.node.http_framing`); the token of a
protected route is checked from the headers before a byte of the body is read; a body over ``max_body`` bytes is
refused unread; every connection has a socket timeout (:data:`CONNECTION_TIMEOUT_SECS`), so a stalled client
cannot hold a thread; at most :data:`MAX_CONNECTIONS` connections are served at once, more are closed at once.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import re
import secrets
import select
import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from storm_py.clock import SYSTEM_CLOCK
from storm_py.cluster_state.users import CLUSTER_USER
from storm_py.errors import AuthorizationError, StormPyError
from storm_py.node.http_framing import body_length, merged_headers
from storm_py.node.http_guard import JSON, SECURITY_HEADERS, FailureLimiter, browser_refusal, header

log = logging.getLogger(__name__)

#: Largest request body accepted (a topology package travels base64-encoded in a submit).
MAX_BODY_BYTES = 256 * 1024 * 1024
#: Seconds a connection may stay silent while a request is read or a reply written.
CONNECTION_TIMEOUT_SECS = 30.0
#: Connections served at once; further ones are closed unanswered until a thread is free.
MAX_CONNECTIONS = 64

STATUS_BY_CODE = {
    "not_alive": 404,
    "not_found": 404,
    "already_alive": 409,
    "invalid_transition": 409,
    "invalid_topology": 400,
    "topology_load_error": 400,
    "config_error": 400,
    "bad_request": 400,
    "length_required": 411,
    "unauthorized": 401,
    "forbidden": 403,
    "too_many_failures": 429,
    "not_leader": 503,
    "state_error": 503,
    "nimbus_unreachable": 502,
    "logviewer_error": 502,
}


#: The ``Authorization`` scheme proving the token without sending it: ``Storm-HMAC <time>:<nonce>:<hex mac>``
#: with mac = HMAC-SHA256(token, "<METHOD>\n<path>\n<time>\n<nonce>").  Daemons use it towards addresses read
#: from the cluster state (blob holders), so a planted address learns nothing it could replay elsewhere.
SIGNATURE_SCHEME = "Storm-HMAC"
#: How far a signed request's time may be from the server's.
SIGNATURE_SKEW_SECS = 300.0


def _signature(token: str, method: str, path: str, when: str, nonce: str) -> str:
    message = f"{method}\n{path}\n{when}\n{nonce}".encode()
    return hmac.new(token.encode("utf-8"), message, "sha256").hexdigest()


def sign_request(token: str, method: str, path: str, now: float) -> str:
    """The ``Authorization`` value of a request to ``path`` signed with ``token`` (the token is not in it)."""
    when, nonce = f"{now:.3f}", secrets.token_hex(8)
    return f"{SIGNATURE_SCHEME} {when}:{nonce}:{_signature(token, method, path, when, nonce)}"


def signature_valid(token: str, method: str, path: str, value: str, now: float) -> bool:
    """Whether ``value`` (after the scheme) signs ``method path`` with ``token`` within the allowed skew."""
    when, _, rest = value.strip().partition(":")
    nonce, _, mac = rest.partition(":")
    try:
        at = float(when)
    except ValueError:
        return False
    if not math.isfinite(at) or abs(now - at) > SIGNATURE_SKEW_SECS or not nonce or len(mac) != 64:
        return False
    return hmac.compare_digest(mac.encode("ascii", "replace"), _signature(token, method, path, when, nonce).encode())


class BadRequestError(StormPyError):
    """The request itself is malformed (bad JSON, bad parameter)."""

    code = "bad_request"


class NotFoundError(StormPyError):
    """No such route or resource."""

    code = "not_found"


class ForbiddenError(StormPyError):
    """A request a browser was tricked into sending (foreign ``Origin`` or ``Host``, a non-JSON body), or one
    outside its caller's rights."""

    code = "forbidden"


class TooManyFailuresError(StormPyError):
    """The client sent too many wrong tokens lately."""

    code = "too_many_failures"


#: The path answered without a token on every server.
HEALTH_PATH = "/health"
#: What a request without a token, or with one that names nobody, is told.
NEEDS_TOKEN = "this request needs a valid token (nimbus.auth.token: the cluster's or a user's)"


class Gate(Protocol):
    """A shared cluster's users as a server sees them (:mod:`storm_py.nimbus.access` is nimbus's)."""

    def identify(self, token: str) -> str | None:
        """The user a bearer token belongs to, or None."""
        ...

    def permit(self, user: str, method: str, path: str) -> None:
        """Raise a :class:`ForbiddenError` when ``user`` may not send ``method path`` (``path``: the request's
        target, its query string included: a log viewer's file names its topology there)."""
        ...

    def record(self, user: str | None, method: str, path: str, status: int) -> None:
        """Note the outcome of a request (the audit; ``path`` as for :meth:`permit`)."""
        ...


@dataclass
class Request:
    """One HTTP request as a handler sees it."""

    method: str
    path: str
    params: dict[str, str]
    query: dict[str, list[str]]
    headers: Mapping[str, str]
    body: bytes
    #: who sent it (:data:`~storm_py.cluster_state.users.CLUSTER_USER` for the cluster token; None without a token)
    user: str | None = None

    def json(self) -> Any:
        """The body as JSON (an empty body is ``{}``)."""
        if not self.body.strip():
            return {}
        try:
            return json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as err:
            raise BadRequestError(f"request body is not JSON: {err}") from err


@dataclass
class Reply:
    """A handler's explicit reply (for non-JSON bodies or other statuses)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of_json(cls, value: Any, status: int = 200) -> Reply:
        """A JSON reply."""
        return cls(status, json.dumps(value, default=str).encode("utf-8"))


Handler = Callable[[Request], Any]


@dataclass
class Route:
    """``method`` + a path pattern of ``{name}`` segments and a last ``{name*}`` (the rest of the path); the token
    is needed unless ``public`` (``protected`` says so explicitly); ``bodies``: the media types it accepts."""

    method: str
    pattern: str
    handler: Handler
    protected: bool = False
    public: bool = False
    bodies: tuple[str, ...] = (JSON,)
    regex: re.Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        parts = re.split(r"(\{\w+\*?\})", self.pattern)
        self.regex = re.compile("^" + "".join(re.escape(p) if not p.startswith("{") else f"(?P<{p[1:-2]}>.+)"
                                              if p.endswith("*}") else f"(?P<{p[1:-1]}>[^/]+)" for p in parts) + "/?$")


def error_reply(err: StormPyError) -> Reply:
    """The reply of an error."""
    body = {k: str(v) for k, v in err.fields.items()}
    body.update({"error": err.code, "errorMessage": err.message})
    return Reply.of_json(body, STATUS_BY_CODE.get(err.code, 500))


def _reply_of(result: Any) -> Reply:
    return result if isinstance(result, Reply) else Reply.of_json(result)


def reply_object(body: bytes) -> dict[str, Any]:
    """A client's reading of an error reply's body: its JSON object, else ``{}``."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether a client's idle kept-alive connection is readable: the server closed it (or sent unasked)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class _BoundedServer(ThreadingHTTPServer):
    """A thread per connection, at most ``limit`` at once: a connection beyond that is closed unanswered."""

    daemon_threads = True
    #: connections the kernel queues until accepted (a burst waits there instead of in the clients' SYN retries)
    request_queue_size = 1024

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], limit: int,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__(address, handler)
        if tls is not None:  # the handshake happens in the connection's thread, under its timeout
            self.socket = tls.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)
        self._slots = threading.BoundedSemaphore(limit)
        self.refused = 0
        self._open: set[Any] = set()
        self._open_lock = threading.Lock()

    def close_connections(self) -> None:
        """End every established connection (kept-alive clients must not talk to a stopped server)."""
        with self._open_lock:
            connections = list(self._open)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("connection from %s failed", client_address, exc_info=True)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            log.warning("refusing a connection from %s: every connection slot is busy", client_address)
            self.shutdown_request(request)
            return
        with self._open_lock:
            self._open.add(request)
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class JsonApiServer:
    """Serves ``routes`` on ``host:port`` (port 0 picks a free one) from a background thread."""

    def __init__(
        self,
        host: str,
        port: int,
        routes: Sequence[Route],
        token: str | None = None,
        fallback: Handler | None = None,
        name: str = "api",
        max_body: int = MAX_BODY_BYTES,
        timeout: float = CONNECTION_TIMEOUT_SECS,
        max_connections: int = MAX_CONNECTIONS,
        hosts: Iterable[str] = (),
        public: Callable[[str, str], bool] | None = None,
        tls: ssl.SSLContext | None = None,
        fallback_bodies: tuple[str, ...] = (JSON,),
        gate: Gate | None = None,
    ) -> None:
        """``hosts``: ``Host`` names besides IP addresses (:func:`~storm_py.node.http_guard.allowed_hosts`);
        ``public(method, path)``: whether what ``fallback`` answers (bodies of ``fallback_bodies``) needs no token;
        ``gate``: the cluster's users (their tokens are accepted; it permits and records each protected request)."""
        self.routes = list(routes)
        self.token = token
        self.gate = gate
        self.fallback, self.fallback_bodies = fallback, fallback_bodies
        self.name = name
        self.max_body = max_body
        self.hosts = frozenset({"localhost", host.lower(), *(h.lower() for h in hosts)})
        self.public = public
        self.tls = tls is not None
        self.limiter = FailureLimiter()
        self._limiter_lock = threading.Lock()
        api = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "storm-py"
            #: a reply's headers and body leave in two writes: with Nagle's algorithm the body waited for the
            #: client's delayed ACK (40 ms a request on Linux)
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("%s %s", api.name, format % args)

            def setup(self) -> None:
                super().setup()
                if isinstance(self.connection, ssl.SSLSocket):
                    self.connection.do_handshake()

            def _serve(self) -> None:
                headers = merged_headers(self.headers.items())
                refusal = api.refusal(self.command, self.path, headers, client=str(self.client_address[0]))
                if refusal is not None:
                    self.close_connection = True  # the body, if any, is never read
                    reply = refusal
                else:  # exactly the length refusal checked
                    body = self.rfile.read(body_length(self.command, headers))
                    reply = api.dispatch(self.command, self.path, headers, body)
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                for k, v in {**SECURITY_HEADERS, **reply.headers}.items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(reply.body)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

        _Handler.timeout = timeout
        self._server = _BoundedServer((host, port), _Handler, max_connections, tls)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port actually bound."""
        return int(self._server.server_address[1])

    def start(self) -> None:
        """Serve from a background thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, name=f"{self.name}-http", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5.0)
            self._thread = None
        self._server.close_connections()
        self._server.server_close()

    def _open(self, method: str, path: str, route: Route | None) -> bool:
        """Whether ``method path`` is answered without the token."""
        if not self.token or (method == "GET" and path.rstrip("/") == HEALTH_PATH):
            return True
        if route is not None:
            return route.public
        return self.public is not None and self.public(method, path)

    def caller(self, headers: Mapping[str, str], method: str, path: str) -> str | None:
        """Who the request's ``Authorization`` names: :data:`CLUSTER_USER` for the cluster token (or a request it
        signs), a user the gate knows, else None."""
        if not self.token:
            return None
        given = header(headers, "authorization") or ""
        if given.startswith(SIGNATURE_SCHEME + " "):
            valid = signature_valid(self.token, method, path, given[len(SIGNATURE_SCHEME) + 1 :], SYSTEM_CLOCK.wall())
            return CLUSTER_USER if valid else None
        if not given.startswith("Bearer "):
            return None
        bearer = given[len("Bearer ") :].strip()
        if hmac.compare_digest(bearer.encode("utf-8"), self.token.encode("utf-8")):
            return CLUSTER_USER
        return self.gate.identify(bearer) if self.gate is not None and bearer else None

    def _authorized(self, headers: Mapping[str, str], method: str, path: str) -> bool:
        return not self.token or self.caller(headers, method, path) is not None

    def _record(self, user: str | None, method: str, path: str, reply: Reply) -> Reply:
        if self.gate is not None:
            self.gate.record(user, method, path, reply.status)
        return reply

    def _route(self, method: str, path: str) -> Route | None:
        return next((r for r in self.routes if r.method == method and r.regex.match(path)), None)

    def refusal(
        self, method: str, raw_path: str, headers: Mapping[str, str], client: str = "",
    ) -> Reply | None:
        """The reply refusing a request from its headers alone (bad framing, foreign origin, missing token), or
        None.  ``client``: the peer's address (failed tokens are rate limited per address)."""
        try:
            length = body_length(method, headers)
        except StormPyError as err:
            return error_reply(err)
        path = urlsplit(raw_path).path
        route = self._route(method, path)
        why = browser_refusal(method, headers, self.hosts, self.tls, route.bodies if route else self.fallback_bodies)
        if why is not None:
            return error_reply(ForbiddenError(why))
        if not self._open(method, path, route):
            now = SYSTEM_CLOCK.now()
            with self._limiter_lock:
                if self.limiter.blocked(client, now):
                    reply = error_reply(TooManyFailuresError("too many wrong tokens from this address; wait a minute"))
                    return self._record(None, method, raw_path, reply)
                if not self._authorized(headers, method, path):
                    if header(headers, "authorization"):  # a guess (a missing token guesses nothing)
                        self.limiter.failed(client, now)
                    return self._record(None, method, raw_path, error_reply(AuthorizationError(NEEDS_TOKEN)))
        if length > self.max_body:
            reply = error_reply(BadRequestError(f"request body of {length} bytes is over {self.max_body}"))
            reply.status = 413
            return reply
        return None

    def _admit(self, method: str, raw_path: str, route: Route | None, user: str | None) -> None:
        """Let a request through or refuse it: 401 without a known token, 403 outside the caller's rights (the
        one check every protected route and fallback path goes through, whoever added the route)."""
        if self._open(method, urlsplit(raw_path).path, route):
            return
        if self.token and user is None:
            raise AuthorizationError(NEEDS_TOKEN)
        if self.gate is not None and user is not None:
            self.gate.permit(user, method, raw_path)

    def dispatch(self, method: str, raw_path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Route one request and turn its outcome (value, reply or error) into a reply."""
        split = urlsplit(raw_path)
        path = split.path
        query = parse_qs(split.query)
        user: str | None = None
        try:
            own_health = any(r.pattern == HEALTH_PATH for r in self.routes)
            if method == "GET" and path.rstrip("/") == HEALTH_PATH and not own_health:
                return Reply.of_json({"status": "ok", "server": self.name})
            for route in self.routes:
                match = route.regex.match(path)
                if match is None or route.method != method:
                    continue
                user = self.caller(headers, method, path)
                self._admit(method, raw_path, route, user)
                params = {k: unquote(v) for k, v in match.groupdict().items()}
                result = route.handler(Request(method, path, params, query, headers, body, user))
                return self._record(user, method, raw_path, _reply_of(result))
            if self.fallback is not None:
                user = self.caller(headers, method, path)
                self._admit(method, raw_path, None, user)
                result = self.fallback(Request(method, raw_path, {}, query, headers, body, user))
                return self._record(user, method, raw_path, _reply_of(result))
            raise NotFoundError(f"no route {method} {path}", path=path)
        except StormPyError as err:
            if err.code not in ("not_alive", "not_found", "not_leader"):
                log.info("%s %s failed: %s", method, path, err.message)
            return self._record(user, method, raw_path, error_reply(err))
        except Exception as err:
            log.exception("%s %s crashed", method, path)
            message = f"{method} {path} failed ({type(err).__name__}); the daemon's log has the details (and paths)"
            reply = Reply.of_json({"error": "internal_error", "errorMessage": message}, 500)
            return self._record(user, method, raw_path, reply)
