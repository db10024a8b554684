"""This module owns the HTTP plumbing shared by nimbus's API, the log viewer and the UI relay: routes, tokens, errors.

A :class:`JsonApiServer` serves a table of :class:`Route` s on a thread pool; a handler gets a
:class:`Request` and returns a JSON-ready value or a :class:`Reply`.  A :class:`~storm_py.errors.StormPyError`
becomes an error reply ``{"error": <code>, "errorMessage": <message>, ...fields}`` with a status that fits
the code (Storm's UI answers every error with 500; clients here also get a meaningful status).  Routes marked
``protected`` require ``Authorization: Bearer <token>`` when a token is configured.

Bounds (anything reaching the port is hostile until proven otherwise): the token of a protected route is checked
from the headers before a byte of the body is read; a body over ``max_body`` bytes is refused unread; every
connection has a socket timeout (:data:`CONNECTION_TIMEOUT_SECS`), so a stalled client cannot hold a thread;
at most :data:`MAX_CONNECTIONS` connections are served at once, more are closed at once.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import re
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from storm_py.clock import SYSTEM_CLOCK
from storm_py.errors import AuthorizationError, StormPyError

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
    "unauthorized": 401,
    "not_leader": 503,
    "state_error": 503,
    "nimbus_unreachable": 502,
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


@dataclass
class Request:
    """One HTTP request as a handler sees it."""

    method: str
    path: str
    params: dict[str, str]
    query: dict[str, list[str]]
    headers: Mapping[str, str]
    body: bytes

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
    """``method`` + a path pattern with ``{name}`` segments; ``protected`` routes need the token."""

    method: str
    pattern: str
    handler: Handler
    protected: bool = False
    regex: re.Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        parts = re.split(r"(\{\w+\})", self.pattern)
        rx = "".join(f"(?P<{p[1:-1]}>[^/]+)" if p.startswith("{") else re.escape(p) for p in parts)
        self.regex = re.compile(f"^{rx}/?$")


def error_reply(err: StormPyError) -> Reply:
    """The reply of an error."""
    body = {k: str(v) for k, v in err.fields.items()}
    body.update({"error": err.code, "errorMessage": err.message})
    return Reply.of_json(body, STATUS_BY_CODE.get(err.code, 500))


class _BoundedServer(ThreadingHTTPServer):
    """A thread per connection, at most ``limit`` at once: a connection beyond that is closed unanswered."""

    daemon_threads = True
    #: connections the kernel queues until accepted (a burst waits there instead of in the clients' SYN retries)
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], limit: int) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(limit)
        self.refused = 0

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            log.warning("refusing a connection from %s: every connection slot is busy", client_address)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

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
    ) -> None:
        self.routes = list(routes)
        self.token = token
        self.fallback = fallback
        self.name = name
        self.max_body = max_body
        api = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "storm-py"
            #: a reply's headers and body leave in two writes: with Nagle's algorithm the body waited for the
            #: client's delayed ACK (40 ms a request on Linux)
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("%s %s", api.name, format % args)

            def _serve(self) -> None:
                headers = dict(self.headers.items())
                refusal = api.refusal(self.command, self.path, headers)
                if refusal is not None:
                    self.close_connection = True  # the body, if any, is never read
                    reply = refusal
                else:
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    reply = api.dispatch(self.command, self.path, headers, body)
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(reply.body)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

        _Handler.timeout = timeout
        self._server = _BoundedServer((host, port), _Handler, max_connections)
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
        self._server.server_close()

    def _authorized(self, headers: Mapping[str, str], method: str, path: str) -> bool:
        if not self.token:
            return True
        given = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        if given.startswith(SIGNATURE_SCHEME + " "):
            return signature_valid(self.token, method, path, given[len(SIGNATURE_SCHEME) + 1 :], SYSTEM_CLOCK.wall())
        if not given.startswith("Bearer "):
            return False
        return hmac.compare_digest(given[len("Bearer ") :].strip().encode("utf-8"), self.token.encode("utf-8"))

    def refusal(self, method: str, raw_path: str, headers: Mapping[str, str]) -> Reply | None:
        """The reply refusing a request from its headers alone (bad length, missing token), or None."""
        raw_length = next((v for k, v in headers.items() if k.lower() == "content-length"), "0") or "0"
        try:
            length = int(raw_length)
        except ValueError:
            length = -1
        if length < 0:
            return error_reply(BadRequestError(f"bad Content-Length {raw_length[:40]!r}"))
        path = urlsplit(raw_path).path
        route = next((r for r in self.routes if r.method == method and r.regex.match(path)), None)
        if route is not None and route.protected and not self._authorized(headers, method, path):
            return error_reply(AuthorizationError("this request needs the cluster's nimbus.auth.token"))
        if length > self.max_body:
            reply = error_reply(BadRequestError(f"request body of {length} bytes is over {self.max_body}"))
            reply.status = 413
            return reply
        return None

    def dispatch(self, method: str, raw_path: str, headers: Mapping[str, str], body: bytes) -> Reply:
        """Route one request and turn its outcome (value, reply or error) into a reply."""
        split = urlsplit(raw_path)
        path = split.path
        query = parse_qs(split.query)
        try:
            for route in self.routes:
                match = route.regex.match(path)
                if match is None or route.method != method:
                    continue
                if route.protected and not self._authorized(headers, method, path):
                    raise AuthorizationError("this request needs the cluster's nimbus.auth.token")
                params = {k: unquote(v) for k, v in match.groupdict().items()}
                result = route.handler(Request(method, path, params, query, headers, body))
                return result if isinstance(result, Reply) else Reply.of_json(result)
            if self.fallback is not None:
                result = self.fallback(Request(method, raw_path, {}, query, headers, body))
                return result if isinstance(result, Reply) else Reply.of_json(result)
            raise NotFoundError(f"no route {method} {path}", path=path)
        except StormPyError as err:
            if err.code not in ("not_alive", "not_found", "not_leader"):
                log.info("%s %s failed: %s", method, path, err.message)
            return error_reply(err)
        except Exception as err:
            log.exception("%s %s crashed", method, path)
            return Reply.of_json({"error": "internal_error", "errorMessage": f"{type(err).__name__}: {err}"}, 500)
