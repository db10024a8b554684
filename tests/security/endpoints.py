"""Every HTTP endpoint of a cluster on loopback, in this process, with one token: nimbus (over the in-memory
state store), the UI relay, a supervisor's log viewer and the DRPC server's three ports.  Each server is a
:class:`JsonApiServer`, so the attacker tests enumerate their route tables (a route added later is attacked too)."""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.drpc.server import DRPCServer
from storm_py.nimbus.api import API
from storm_py.nimbus.daemon import NimbusDaemon
from storm_py.node.http_api import JsonApiServer, Request, Route
from storm_py.supervisor.daemon import SupervisorDaemon
from storm_py.ui.daemon import UiDaemon

TOKEN = "the-cluster-token-0123456789abcdef"
#: The only routes open without the token: the UI's files and the health check.
PUBLIC_PATTERNS = {"/", "/{page}", "/static/{name}", "/health"}


@dataclass
class Endpoints:
    """The running servers by name, every handler call they made (``(server, method, path)``) and every request
    they refused from its headers (``(server, method, path, status)``)."""

    servers: dict[str, JsonApiServer]
    handled: list[tuple[str, str, str]] = field(default_factory=list)
    #: the daemon objects serving them (nimbus, ui, supervisor, drpc), to find every server each one runs
    daemons: dict[str, Any] = field(default_factory=dict)
    refused: list[tuple[str, str, str, int]] = field(default_factory=list)

    def routes(self, name: str) -> list[Route]:
        """The route table of server ``name``; the UI relays nimbus's, so it is attacked with nimbus's."""
        return self.servers["nimbus" if name == "ui" else name].routes


def servers_of(obj: Any, depth: int = 3) -> list[JsonApiServer]:
    """Every HTTP server reachable from ``obj`` through its attributes, dicts and lists (``depth`` levels)."""
    found: list[JsonApiServer] = []
    seen: set[int] = set()

    def walk(value: Any, level: int) -> None:
        if id(value) in seen or level < 0:
            return
        seen.add(id(value))
        if isinstance(value, JsonApiServer):
            found.append(value)
            return
        if isinstance(value, dict):
            children: list[Any] = list(value.values())
        elif isinstance(value, (list, tuple)):
            children = list(value)
        else:
            children = list(getattr(value, "__dict__", {}).values())
        for child in children:
            walk(child, level - 1)

    walk(obj, depth)
    return found


def concrete(pattern: str) -> str:
    """A request path matching ``pattern`` (each ``{name}`` becomes ``x``)."""
    return re.sub(r"\{\w+\}", "x", pattern)


def call(port: int, method: str, path: str, headers: Mapping[str, str] | None = None, body: bytes | None = None,
         address: str = "127.0.0.1") -> tuple[int, dict[str, str], bytes]:
    """One raw request (the headers exactly as given, ``Host`` included): status, headers, body."""
    conn = http.client.HTTPConnection(address, port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        sent = {"Host": f"{address}:{port}", **(headers or {})}
        if body is not None:
            sent["Content-Length"] = str(len(body))
        for k, v in sent.items():
            conn.putheader(k, v)
        conn.endheaders(body)
        reply = conn.getresponse()
        return reply.status, dict(reply.getheaders()), reply.read()
    finally:
        conn.close()


def error_of(body: bytes) -> str:
    """The ``error`` code of an error reply."""
    return str(json.loads(body.decode("utf-8")).get("error"))


def _spy(endpoints: Endpoints, name: str, server: JsonApiServer) -> None:
    """Record every handler call of ``server`` (the attacker tests assert none happened)."""
    def wrap(handler: Any) -> Any:
        def recorded(request: Request) -> Any:
            endpoints.handled.append((name, request.method, request.path))
            return handler(request)
        return recorded

    server.routes = [replace(r, handler=wrap(r.handler)) for r in server.routes]
    refusal = server.refusal

    def refusal_recorded(method: str, raw_path: str, headers: Mapping[str, str], client: str = "") -> Any:
        reply = refusal(method, raw_path, headers, client)
        if reply is not None:
            endpoints.refused.append((name, method, raw_path, reply.status))
        return reply

    server.refusal = refusal_recorded  # type: ignore[method-assign]
    if server.fallback is not None:
        server.fallback = wrap(server.fallback)


@contextmanager
def loopback_endpoints(tmp: Path) -> Iterator[Endpoints]:
    """Nimbus, the UI, a supervisor's log viewer and DRPC on 127.0.0.1, all with :data:`TOKEN`."""
    store = MemoryStore()
    base = {"nimbus.host": "127.0.0.1", "nimbus.thrift.port": 0, "nimbus.auth.token": TOKEN,
            "storm.log.dir": str(tmp / "logs"), "nimbus.monitor.freq.secs": 0.5}
    nimbus = NimbusDaemon({**base, "storm.local.dir": str(tmp / "nimbus")}, MemoryStorage(store))
    nimbus.start()
    thread = threading.Thread(target=nimbus.run, daemon=True)
    thread.start()
    seeds = {"nimbus.seeds": [f"127.0.0.1:{nimbus.port}"], "storm.nimbus.retry.times": 0}
    stops: list[Any] = [nimbus.stop]
    try:
        ui = UiDaemon({**base, **seeds, "ui.port": 0, "storm.local.dir": str(tmp / "ui")})
        ui.start()
        stops.append(ui.stop)
        supervisor = SupervisorDaemon({**base, **seeds, "storm.local.dir": str(tmp / "supervisor"),
                                       "supervisor.slots.ports": [], "logviewer.port": 0}, MemoryStorage(store))
        supervisor.logviewer.start()
        stops.append(supervisor.stop)
        drpc = DRPCServer({**base, "drpc.port": 0, "drpc.invocations.port": 0, "drpc.http.port": 0,
                           "drpc.request.timeout.secs": 5})
        drpc.start()
        stops.append(drpc.stop)
        endpoints = Endpoints({"nimbus": nimbus.api, "ui": ui.server, "logviewer": supervisor.logviewer.server,
                               **drpc.servers},
                              daemons={"nimbus": nimbus, "ui": ui, "supervisor": supervisor, "drpc": drpc})
        for name, server in endpoints.servers.items():
            _spy(endpoints, name, server)
        yield endpoints
    finally:
        for stop in reversed(stops):
            stop()
        thread.join(10)


__all__ = ["API", "PUBLIC_PATTERNS", "TOKEN", "Endpoints", "call", "concrete", "error_of", "loopback_endpoints",
           "servers_of"]
