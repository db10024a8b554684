"""This module owns the ``storm-py ui`` process: the UI's pages (from :mod:`storm_py.ui`) and nimbus's REST API
and ``/metrics``, relayed to the leader.

Every nimbus serves the API itself; the UI daemon gives it the stable address Storm users expect (one host,
``ui.port``), following leadership changes.  Callers' bearer tokens are passed through untouched, so
nimbus checks them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from storm_py import ui
from storm_py.client import API, NimbusClient
from storm_py.errors import StormPyError
from storm_py.node.http_api import JsonApiServer, NotFoundError, Reply, Request

log = logging.getLogger(__name__)


class UiDaemon:
    """Relays ``/api/v1/...`` to the leader; ``ui.host`` / ``ui.port`` place it (port 0 picks a free port)."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.client = NimbusClient(conf)
        host = str(conf.get("ui.host") or "127.0.0.1")
        port = int(conf.get("ui.port") or 0)
        try:
            self.server = JsonApiServer(host, port, [], fallback=self._relay, name="ui")
        except OSError as err:
            raise StormPyError(f"ui cannot listen on {host}:{port}: {err.strerror}") from err
        self.host = host

    @property
    def port(self) -> int:
        """The port served."""
        return self.server.port

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
        self.server.start()
        log.info("ui serving http://%s:%d/ (REST API under %s)", self.host, self.port, API)

    def stop(self) -> None:
        """Stop serving."""
        self.server.stop()
