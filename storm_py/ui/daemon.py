"""This module owns the ``storm-py ui`` process: the UI's pages (from :mod:`storm_py.ui`) and nimbus's REST API
and ``/metrics``, relayed to the leader.

Every nimbus serves the API itself; the UI daemon gives it the stable address Storm users expect (one host,
``ui.port``), following leadership changes.  The daemon checks tokens itself (the cluster's, or a user's through
the stored users; only the UI's files are served without one), so a wrong token never reaches nimbus, and passes
callers' bearer tokens through, so nimbus decides each user's rights and writes the audit.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from storm_py import ui
from storm_py.client import API, NimbusClient
from storm_py.config.keys import setting
from storm_py.errors import StormPyError
from storm_py.node.http_api import JsonApiServer, NotFoundError, Reply, Request
from storm_py.node.http_guard import JSON, OCTET_STREAM, allowed_hosts
from storm_py.node.tls import server_context
from storm_py.node.token_file import with_token
from storm_py.node.user_tokens import TokenDirectory, UserTokenGate

log = logging.getLogger(__name__)


class UiDaemon:
    """Relays ``/api/v1/...`` to the leader; ``ui.host`` / ``ui.port`` place it (port 0 picks a free port)."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        conf = with_token(conf)
        self.client = NimbusClient(conf)
        host = str(setting(conf, "ui.host"))
        port = int(setting(conf, "ui.port"))
        self.directory = TokenDirectory(conf)
        try:
            self.server = JsonApiServer(
                host, port, [], token=str(conf["nimbus.auth.token"]), fallback=self._relay, name="ui",
                hosts=allowed_hosts(conf, host), public=_static, tls=server_context(conf),
                fallback_bodies=(JSON, OCTET_STREAM),  # what nimbus's routes take (user blobs are raw bytes)
                gate=UserTokenGate(self.directory),
            )
        except OSError as err:
            raise StormPyError(f"ui cannot listen on {host}:{port}: {err.strerror}") from err
        self.host = host

    @property
    def port(self) -> int:
        """The port served."""
        return self.server.port

    @property
    def url(self) -> str:
        """The UI's address."""
        return f"{'https' if self.server.tls else 'http'}://{self.host}:{self.port}/"

    def _relay(self, req: Request) -> Reply:
        if req.method == "GET" and not req.path.startswith(API + "/") and not req.path.startswith("/metrics"):
            found = ui.asset(req.path)
            if found is None:
                raise NotFoundError(f"no route {req.method} {req.path} (the UI serves /, {API}/... and /metrics)",
                                    path=req.path)
            return Reply(200, found[0], found[1], {"Cache-Control": "no-cache"})
        if not req.path.startswith(API + "/") and not req.path.startswith("/metrics"):
            raise NotFoundError(f"no route {req.method} {req.path} (the UI serves {API}/...)", path=req.path)
        status, body, content_type = self.client.forward(req.method, req.path, req.body or None, req.headers)
        return Reply(status, body, content_type)

    def start(self) -> None:
        """Serve."""
        self.directory.connect()
        self.server.start()
        log.info("ui serving %s (REST API under %s)", self.url, API)

    def stop(self) -> None:
        """Stop serving."""
        self.server.stop()
        self.directory.close()


def _static(method: str, path: str) -> bool:
    """Whether a request is for one of the UI's files (served without the token: they hold no cluster data)."""
    return method in ("GET", "HEAD") and not path.startswith(API + "/") and ui.asset(path) is not None
