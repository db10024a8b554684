"""This module owns the clients of the DRPC server: :class:`DRPCClient` (the client port) and
:class:`DRPCInvocationsClient` (the invocations port, used by ``DRPCSpout`` and ``ReturnResults``).

Both keep one HTTP/1.1 connection open (a round trip costs no new TCP connection), send the cluster token as
``Authorization: Bearer``, and turn every failure into :class:`~storm_py.drpc.errors.DRPCExecutionException`
naming the server.  A kept-alive connection the server closed while idle (``drpc.connection.timeout.secs``) is
noticed before a request is sent into it and reopened; a request lost on a connection that broke while in use
is sent again only when that is safe (every one but ``execute``: a request sent twice would run twice).
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from typing import Any

from storm_py.drpc.errors import UNREACHABLE, DRPCExecutionException
from storm_py.drpc.ledger import Invocation
from storm_py.drpc.wire import EXECUTE_PATH, FAILURE_PATH, FETCH_PATH, RESULT_PATH, error_from_reply
from storm_py.node.http_api import closed_by_peer

_RETRIABLE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError, http.client.CannotSendRequest)


class _JsonConnection:
    """One keep-alive connection posting JSON to ``host:port`` (thread-safe: one request at a time)."""

    def __init__(self, host: str, port: int, timeout_secs: float | None, token: str | None,
                 tls: ssl.SSLContext | None = None) -> None:
        self.host, self.port = host, int(port)
        self.tls = tls
        self.where = f"{host}:{self.port}"
        self.timeout_secs = timeout_secs
        self._headers = {"Content-Type": "application/json", "Connection": "keep-alive"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._conn: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()

    def post(self, path: str, payload: Any, retry: bool, timeout_secs: float | None = None) -> Any:
        """POST ``payload`` and return the decoded reply; errors become :class:`DRPCExecutionException`."""
        body = json.dumps(payload).encode("utf-8")
        with self._lock:
            for attempt in (0, 1):
                if self._conn is not None and self._conn.sock is not None and closed_by_peer(self._conn.sock):
                    self._drop()  # the server closed it while idle: never send a request into it
                fresh = self._conn is None
                if self._conn is None:
                    self._conn = (
                        http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout_secs, context=self.tls)
                        if self.tls is not None
                        else http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_secs)
                    )
                conn = self._conn
                conn.timeout = timeout_secs if timeout_secs is not None else self.timeout_secs
                if conn.sock is not None:
                    conn.sock.settimeout(conn.timeout)
                try:
                    conn.request("POST", path, body, self._headers)
                    resp = conn.getresponse()
                    data = resp.read()
                except _RETRIABLE as err:
                    self._drop()
                    if retry and attempt == 0 and not fresh:
                        continue
                    raise self._unreachable(err) from err
                except (OSError, http.client.HTTPException) as err:
                    self._drop()
                    raise self._unreachable(err) from err
                if resp.will_close:
                    self._drop()
                if resp.status != 200:
                    raise error_from_reply(resp.status, data, self.where)
                try:
                    return json.loads(data.decode("utf-8"))
                except (UnicodeDecodeError, ValueError) as err:
                    raise DRPCExecutionException(
                        f"the DRPC server at {self.where} answered something that is not JSON", UNREACHABLE,
                        server=self.where,
                    ) from err
        raise AssertionError("unreachable")

    def _unreachable(self, err: BaseException) -> DRPCExecutionException:
        if isinstance(err, TimeoutError):
            why = f"no answer within {self.timeout_secs:g}s"
        elif isinstance(err, (http.client.RemoteDisconnected, ConnectionResetError)):
            why = "it closed the connection (it may be at its connection limit, drpc.max.connections)"
        else:
            why = str(err) or type(err).__name__
        return DRPCExecutionException(f"cannot reach the DRPC server at {self.where}: {why}", UNREACHABLE,
                                      server=self.where)

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._drop()


class DRPCClient:
    """Storm's ``DRPCClient``: ``execute(function, args)`` on the DRPC server's client port (``drpc.port``).

    Args:
        timeout_secs: socket timeout of one request (None: wait as long as the server does, which answers a
            timeout after ``drpc.request.timeout.secs``).
        token: the cluster's ``nimbus.auth.token``.
        tls: the verifying context when the server speaks TLS (:func:`storm_py.node.tls.client_context`).
    """

    def __init__(self, host: str, port: int, timeout_secs: float | None = None, token: str | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        self.host, self.port = host, int(port)
        self._conn = _JsonConnection(host, self.port, timeout_secs, token, tls)

    def execute(self, function: str, args: str) -> str:
        """The result of ``function(args)``; :class:`DRPCExecutionException` on a failed, timed-out or refused
        request."""
        reply = self._conn.post(EXECUTE_PATH, {"function": function, "args": args}, retry=False)
        result = reply.get("result") if isinstance(reply, dict) else None
        if not isinstance(result, str):
            raise DRPCExecutionException(f"the DRPC server at {self._conn.where} answered no result", UNREACHABLE)
        return result

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> DRPCClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class DRPCInvocationsClient:
    """What a topology says to a DRPC server's invocations port: fetch requests, return results or failures."""

    def __init__(self, host: str, port: int, token: str | None, timeout_secs: float = 30.0,
                 tls: ssl.SSLContext | None = None) -> None:
        self.host, self.port = host, int(port)
        self._conn = _JsonConnection(host, self.port, timeout_secs, token, tls)

    @property
    def where(self) -> str:
        """``host:port`` of the server."""
        return self._conn.where

    def fetch(self, function: str, limit: int = 1, wait_secs: float = 0.0) -> list[Invocation]:
        """Up to ``limit`` requests of ``function``, waiting up to ``wait_secs`` for the first."""
        reply = self._conn.post(
            FETCH_PATH, {"function": function, "max": limit, "wait_secs": wait_secs}, retry=True,
            timeout_secs=(self._conn.timeout_secs or 0.0) + wait_secs,
        )
        rows = reply.get("requests") if isinstance(reply, dict) else None
        return [Invocation(str(r["id"]), str(r["args"])) for r in rows or []]

    def result(self, request_id: str, value: str) -> bool:
        """Return a request's result; False when the server no longer waits for it."""
        reply = self._conn.post(RESULT_PATH, {"id": request_id, "result": value}, retry=True)
        return bool(reply.get("accepted")) if isinstance(reply, dict) else False

    def fail(self, request_id: str, message: str) -> bool:
        """Fail a request; False when the server no longer waits for it."""
        reply = self._conn.post(FAILURE_PATH, {"id": request_id, "message": message}, retry=True)
        return bool(reply.get("accepted")) if isinstance(reply, dict) else False

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
