"""This module owns the browser-facing checks every HTTP endpoint applies before a route runs: the ``Host`` a
request names (DNS rebinding), its ``Origin`` (cross-site requests), the type of its body, the security headers
of every reply, and the rate limit of failed tokens.

Pure decisions over headers and ``now``; :class:`~storm_py.node.http_api.JsonApiServer` applies them to every
route, so a route added later is covered without doing anything.
"""

from __future__ import annotations

import ipaddress
import socket
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

JSON = "application/json"
#: raw bytes (user blobs): no cross-site form or simple request can send this type
OCTET_STREAM = "application/octet-stream"
#: Methods whose body a route reads.
BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")

#: Headers of every reply: no sniffing, no framing, scripts and styles from the server itself only.
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
}

#: Config keys naming hosts a daemon or its clients may be reached by.
HOST_KEYS = ("nimbus.host", "nimbus.bind.host", "ui.host", "storm.local.hostname", "logviewer.host", "drpc.host")
#: Config keys listing hosts (``host`` or ``host:port`` each).
HOST_LIST_KEYS = ("nimbus.seeds", "drpc.servers", "storm.http.hosts")

#: Failed tokens one client address may send per :data:`FAILURE_WINDOW_SECS` before it is answered 429.
MAX_FAILURES = 100
FAILURE_WINDOW_SECS = 60.0
#: Client addresses whose failures are remembered at once (the oldest is forgotten first).
MAX_TRACKED_CLIENTS = 4096


def _bare(host: str) -> str:
    """``host`` without port or IPv6 brackets, lower case."""
    text = host.strip().lower()
    if text.startswith("["):
        return text[1:].partition("]")[0]
    if text.count(":") == 1:
        return text.partition(":")[0]
    return text


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def allowed_hosts(conf: Mapping[str, Any], *extra: str) -> frozenset[str]:
    """The names a server of this config answers to in ``Host``: the configured ones, ``localhost`` and this
    machine's name (IP addresses are always accepted: a rebinding attack needs a name)."""
    names: set[str] = {"localhost", socket.gethostname().lower(), *(_bare(e) for e in extra if e)}
    for key in HOST_KEYS:
        if conf.get(key):
            names.add(_bare(str(conf[key])))
    for key in HOST_LIST_KEYS:
        raw = conf.get(key) or []
        items: Iterable[Any] = raw.split(",") if isinstance(raw, str) else raw
        names.update(_bare(str(item)) for item in items if str(item).strip())
    return frozenset(n for n in names if n)


def host_allowed(host_header: str | None, names: frozenset[str]) -> bool:
    """Whether a request's ``Host`` is an IP address or one of ``names`` (a missing ``Host`` is refused)."""
    if not host_header:
        return False
    name = _bare(host_header)
    return _is_ip(name) or name in names


def origin_allowed(origin: str | None, host_header: str | None, tls: bool) -> bool:
    """Whether ``Origin`` (when a browser sent one) is the server's own: same scheme, host and port."""
    if origin is None:
        return True
    parts = urlsplit(origin.strip())
    scheme = "https" if tls else "http"
    return parts.scheme == scheme and bool(host_header) and parts.netloc.lower() == str(host_header).strip().lower()


def media_type(content_type: str | None) -> str:
    """``application/json`` of ``application/json; charset=utf-8``."""
    return (content_type or "").split(";", 1)[0].strip().lower()


class FailureLimiter:
    """Counts failed tokens per client address; a client over :data:`MAX_FAILURES` in the window is blocked."""

    def __init__(self, limit: int = MAX_FAILURES, window: float = FAILURE_WINDOW_SECS,
                 tracked: int = MAX_TRACKED_CLIENTS) -> None:
        self.limit, self.window, self.tracked = limit, window, tracked
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, client: str, now: float) -> deque[float]:
        times = self._failures.get(client)
        if times is None:
            return deque()
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[client]
        return times

    def blocked(self, client: str, now: float) -> bool:
        """Whether ``client`` has failed too often lately (its requests are refused unchecked)."""
        return len(self._recent(client, now)) >= self.limit

    def failed(self, client: str, now: float) -> None:
        """Record one failed token from ``client``."""
        times = self._recent(client, now)
        if not times:
            self._failures[client] = times
        times.append(now)
        self._failures.move_to_end(client)
        while len(self._failures) > self.tracked:
            self._failures.popitem(last=False)


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value by (lower-case) name, whatever its case in the request."""
    return next((v for k, v in headers.items() if k.lower() == name), None)


def browser_refusal(
    method: str, headers: Mapping[str, str], hosts: frozenset[str], tls: bool, bodies: tuple[str, ...],
) -> str | None:
    """Why a request a browser may have been tricked into sending is refused (403), or None: a ``Host`` not among
    ``hosts``, an ``Origin`` not the server's own, a body whose media type is not in ``bodies``."""
    host = header(headers, "host")
    if not host_allowed(host, hosts):
        return f"this server does not answer to Host {str(host)[:80]!r}"
    origin = header(headers, "origin")
    if not origin_allowed(origin, host, tls):
        return f"cross-origin request from {str(origin)[:80]!r} refused"
    content_type = header(headers, "content-type")
    chunked = (header(headers, "transfer-encoding") or "").strip().lower() not in ("", "identity")
    has_body = chunked or (header(headers, "content-length") or "0").strip() != "0"
    if method in BODY_METHODS and has_body and media_type(content_type) not in bodies:
        return f"a {method} body must be {' or '.join(bodies)}, not {str(content_type)[:60]!r}"
    return None
