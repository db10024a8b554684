"""This module owns the DRPC wire format shared by the server and its clients: paths, JSON shapes, error bodies.

Every port speaks HTTP/1.1 with JSON bodies (the project's :class:`~storm_py.node.http_api.JsonApiServer`),
authenticated with ``Authorization: Bearer <nimbus.auth.token>``; ``GET /health`` is open on each (``{"status":
"ok"}``, nothing else) and ``GET /status`` (token) adds ``"pending"``, the requests waiting or in flight.

* client port (``drpc.port``): ``POST /drpc/execute`` ``{"function", "args"}`` -> ``{"result"}``;
* invocations port (``drpc.invocations.port``): ``POST /drpc/fetch`` ``{"function", "max", "wait_secs"}`` ->
  ``{"requests": [{"id", "args"}]}`` (long poll: waits up to ``wait_secs`` for a first request),
  ``POST /drpc/result`` ``{"id", "result"}`` and ``POST /drpc/failure`` ``{"id", "message"}`` ->
  ``{"accepted": bool}`` (false: the request is unknown, answered already or timed out);
* HTTP port (``drpc.http.port``, Storm's): ``GET /drpc/FUNC/ARGS`` (the rest of the path is the arguments,
  slashes included: ``/drpc/reach/foo.com/blog/1``, or percent-encoded), ``GET /drpc/FUNC`` (empty arguments),
  ``POST /drpc/FUNC`` with the arguments as the body text -> the result as ``text/plain``.

An error is ``{"error": <TYPE>, "type": <type>, "errorMessage": <text>}`` (Storm's body: ``error`` names the
``DRPCExceptionType``, e.g. ``FAILED_REQUEST``) with the status of its type (400 failed, 504 timed out, 503
shutting down or busy, 401 token, 413 too large).
"""

from __future__ import annotations

from typing import Any

from storm_py.drpc.errors import BAD_REQUEST, TOO_LARGE, UNAUTHORIZED, UNREACHABLE, DRPCExecutionException
from storm_py.node.http_api import reply_object

EXECUTE_PATH = "/drpc/execute"
FETCH_PATH = "/drpc/fetch"
RESULT_PATH = "/drpc/result"
FAILURE_PATH = "/drpc/failure"
STATUS_PATH = "/status"

#: Longest long poll of one fetch (a spout's fetcher asks again right away).
MAX_FETCH_WAIT_SECS = 5.0
#: Most requests one fetch returns.
MAX_FETCH_BATCH = 100


def error_body(err: DRPCExecutionException) -> dict[str, Any]:
    """The JSON body of an error reply."""
    return {"error": err.type.upper(), "type": err.type, "errorMessage": err.message}


def error_from_reply(status: int, body: bytes, where: str) -> DRPCExecutionException:
    """The exception an error reply from ``where`` (``host:port``) stands for."""
    data = reply_object(body)
    message = str(data.get("errorMessage") or f"HTTP {status}")
    kind = data.get("type")
    if status == 401:
        return DRPCExecutionException(
            f"the DRPC server at {where} refused the request: {message} (send the cluster's token)", UNAUTHORIZED,
            server=where,
        )
    if status == 413:
        return DRPCExecutionException(f"the DRPC server at {where} refused the request: {message}", TOO_LARGE,
                                      server=where)
    if isinstance(kind, str) and kind:
        return DRPCExecutionException(message, kind, server=where)
    if status == 400:
        return DRPCExecutionException(f"the DRPC server at {where} refused the request: {message}", BAD_REQUEST,
                                      server=where)
    return DRPCExecutionException(f"the DRPC server at {where} answered HTTP {status}: {message}", UNREACHABLE,
                                  server=where)


def parse_servers(raw: Any, default_port: int) -> list[tuple[str, int]]:
    """``drpc.servers`` entries (``host`` or ``host:port``) as ``(host, port)``, the port defaulting."""
    items = raw.split(",") if isinstance(raw, str) else list(raw or [])
    out: list[tuple[str, int]] = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        host, sep, port = text.rpartition(":")
        out.append((host, int(port)) if sep and host and port.isdigit() else (text, default_port))
    return out
