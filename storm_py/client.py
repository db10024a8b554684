"""This module owns the client side of nimbus's REST API (Storm UI's ``/api/v1`` routes): what the CLI calls.

:class:`NimbusClient` finds the leading nimbus among ``nimbus.seeds`` (each ``host`` or ``host:port``, the port
defaulting to ``nimbus.thrift.port``), sends ``nimbus.auth.token`` (else the token file of ``storm.local.dir``:
:mod:`storm_py.node.token_file`) as a bearer token, speaks TLS when ``storm.tls.enabled`` (verifying against
``storm.tls.ca``), retries while nimbus is unreachable or leadership is moving (:class:`RetryPolicy`: a refused
connection, nothing listening, only briefly), and turns error replies back into storm_py's exceptions
(``NotAliveException``, ``InvalidTopologyException``...).
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from storm_py.clock import SYSTEM_CLOCK, Clock
from storm_py.config.keys import setting
from storm_py.errors import (
    AlreadyAliveException,
    AuthorizationError,
    ConfigError,
    InvalidTopologyException,
    NotAliveException,
    NotLeaderError,
    StormPyError,
    TopologyLoadError,
)
from storm_py.node.http_api import closed_by_peer, reply_object, sign_request
from storm_py.node.nimbus_retry import RetryPolicy
from storm_py.node.tls import client_context, scheme
from storm_py.node.token_file import read_token
from storm_py.packaging.package import TopologyPackage

log = logging.getLogger(__name__)

API = "/api/v1"
#: Seconds one plain request may take.
REQUEST_TIMEOUT_SECS = 30.0
#: Seconds a submit may take (nimbus validates the package in a subprocess and waits for replication).
SUBMIT_TIMEOUT_SECS = 300.0
TOKEN_HEADER = "Authorization"

_ERRORS: dict[str, type[StormPyError]] = {
    NotAliveException.code: NotAliveException,
    AlreadyAliveException.code: AlreadyAliveException,
    InvalidTopologyException.code: InvalidTopologyException,
    TopologyLoadError.code: TopologyLoadError,
    AuthorizationError.code: AuthorizationError,
    NotLeaderError.code: NotLeaderError,
    ConfigError.code: ConfigError,
}


#: Errors of a kept-alive connection the server closed while it was idle (the request is sent again, once).
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, http.client.CannotSendRequest)


class NimbusUnreachableError(StormPyError):
    """No nimbus answered (connection refused, timed out, or no leader elected).

    ``refused``: every nimbus asked refused the connection (nothing listens there), as opposed to a failure that
    may pass (a timeout, a leader election in progress).
    """

    code = "nimbus_unreachable"

    @property
    def refused(self) -> bool:
        return bool(self.fields.get("refused"))


class NimbusRequestError(StormPyError):
    """Nimbus answered a request with an error of its own."""

    code = "nimbus_error"


def parse_seeds(conf: Mapping[str, Any]) -> list[tuple[str, int]]:
    """The ``(host, port)`` of every nimbus seed."""
    raw = setting(conf, "nimbus.seeds")
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    port = int(setting(conf, "nimbus.thrift.port"))
    seeds: list[tuple[str, int]] = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        host, sep, p = text.rpartition(":")
        if sep and p.isdigit() and host:
            seeds.append((host, int(p)))
        else:
            seeds.append((text, port))
    if not seeds:
        raise ConfigError("nimbus.seeds lists no nimbus")
    return seeds


def error_from_reply(status: int, body: bytes, url: str) -> StormPyError:
    """The exception an error reply stands for."""
    data = reply_object(body)
    code = str(data.get("error") or "")
    message = str(data.get("errorMessage") or data.get("message") or f"HTTP {status} from {url}")
    fields = {k: v for k, v in data.items() if k not in ("error", "errorMessage", "message", "status")}
    cls = _ERRORS.get(code, NimbusRequestError)
    err = cls(message, status=status, **fields)
    if cls is NimbusRequestError and code:
        err.code = code
    return err


class NimbusClient:
    """Talks to the leading nimbus over HTTP/JSON (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any], clock: Clock = SYSTEM_CLOCK,
                 on_retry: Callable[[str], None] | None = None) -> None:
        """``on_retry``: told once, with a line saying so, when a request is first retried."""
        self.conf = dict(conf)
        self.clock = clock  # paces retries
        self.seeds = parse_seeds(conf)
        self.token = read_token(conf, None)
        self.scheme = scheme(conf)
        self.tls = client_context(conf)
        self.retry = RetryPolicy.from_conf(conf)
        self.on_retry = on_retry
        self._told_retry = False
        self._leader: str | None = None
        self._local = threading.local()

    # ------------------------------------------------------------------------------------------- plumbing

    def _http(
        self, method: str, url: str, body: bytes | None, timeout: float, content_type: str = "application/json",
        signed: bool = False,
    ) -> bytes:
        headers: dict[str, str] = {}
        if body is not None:
            headers["Content-Type"] = content_type
        if self.token and signed:  # proves the token without sending it
            headers[TOKEN_HEADER] = sign_request(self.token, method, urlsplit(url).path, self.clock.wall())
        elif self.token:
            headers[TOKEN_HEADER] = f"Bearer {self.token}"
        status, data, _ = self._send(method, url, body, headers, timeout)
        if status >= 400:
            raise error_from_reply(status, data, url)
        return data

    def _send(
        self, method: str, url: str, body: bytes | None, headers: Mapping[str, str], timeout: float,
    ) -> tuple[int, bytes, str]:
        """One request over this thread's kept-alive connection to the URL's node (with TLS, a handshake per
        connection, not per request); a connection the server closed meanwhile is replaced once."""
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        pool: dict[str, http.client.HTTPConnection] = self._local.__dict__.setdefault("connections", {})
        for _ in (0, 1):
            conn = pool.pop(parts.netloc, None)
            fresh = conn is None or conn.sock is None or closed_by_peer(conn.sock)
            if conn is None or fresh:
                if conn is not None:
                    conn.close()
                host, port = parts.hostname or "127.0.0.1", parts.port
                conn = (http.client.HTTPSConnection(host, port, timeout=timeout, context=self.tls)
                        if self.tls is not None else http.client.HTTPConnection(host, port, timeout=timeout))
            else:
                conn.sock.settimeout(timeout)
            try:
                conn.request(method, target, body, dict(headers))
                reply = conn.getresponse()
                data = reply.read()
            except (http.client.HTTPException, OSError) as err:
                conn.close()
                if not fresh and isinstance(err, _STALE):
                    continue  # the kept connection died between our check and the request
                reason = getattr(err, "reason", err)
                raise NimbusUnreachableError(f"cannot reach nimbus at {url.split(API)[0]} ({reason})", url=url,
                                             refused=isinstance(err, ConnectionRefusedError),
                                             nimbuses=parts.netloc) from err
            if reply.will_close:
                conn.close()
            else:
                pool[parts.netloc] = conn
            return reply.status, data, reply.getheader("Content-Type") or "application/json"
        raise NimbusUnreachableError(f"cannot reach nimbus at {url.split(API)[0]}", url=url)

    def _base(self, node: str) -> str:
        return f"{self.scheme}://{node}"

    def find_leader(self) -> str:
        """``host:port`` of the leading nimbus, asked of the seeds in turn."""
        problems: list[str] = []
        refused: list[str] = []
        for host, port in self.seeds:
            node = f"{host}:{port}"
            try:
                data = json.loads(self._http("GET", f"{self._base(node)}{API}/nimbus/summary", None, 10.0))
            except AuthorizationError:
                raise  # a missing or wrong token stays wrong: no retries
            except StormPyError as err:
                problems.append(err.message)
                if isinstance(err, NimbusUnreachableError) and err.refused:
                    refused.append(node)
                continue
            for n in data.get("nimbuses", []):
                if n.get("status") == "Leader":
                    leader = f"{n['host']}:{n['port']}"
                    # the seed itself leads: keep the address that reached it (its advertised name may only
                    # resolve inside the cluster's network)
                    if leader == data.get("self"):
                        leader = node
                    self._leader = leader
                    return leader
            problems.append(f"nimbus {node} knows no leader yet")
        everyone_refused = len(refused) == len(self.seeds)
        raise NimbusUnreachableError("no leading nimbus: " + "; ".join(problems), refused=everyone_refused,
                                     nimbuses=", ".join(refused) if everyone_refused else "")

    def request(
        self,
        method: str,
        path: str,
        payload: Any = None,
        *,
        timeout: float = REQUEST_TIMEOUT_SECS,
        raw: bool = False,
        data: bytes | None = None,
    ) -> Any:
        """Send ``method path`` to the leader (retrying as configured); the decoded JSON reply, or bytes.
        ``data`` sends raw bytes as the body in place of the JSON ``payload``."""
        body = data if data is not None else None if payload is None else json.dumps(payload).encode("utf-8")
        content_type = "application/octet-stream" if data is not None else "application/json"
        failures = 0
        refused_since: float | None = None
        while True:
            try:
                leader = self._leader or self.find_leader()
                reply = self._http(method, f"{self._base(leader)}{API}{path}", body, timeout, content_type)
                return reply if raw else json.loads(reply.decode("utf-8") or "null")
            except (NimbusUnreachableError, NotLeaderError) as err:
                self._leader = None
                failures += 1
                refused = isinstance(err, NimbusUnreachableError) and err.refused
                now = self.clock.now()
                refused_since = (refused_since if refused_since is not None else now) if refused else None
                delay = self.retry.delay(failures, refused, now - refused_since if refused_since is not None else 0.0)
                if delay is None:
                    raise
                log.info("nimbus not available (%s); retrying in %.1fs", err.message, delay)
                self._tell_retry(err.message, refused)
                self.clock.sleep(delay)

    def _tell_retry(self, problem: str, refused: bool) -> None:
        if self.on_retry is not None and not self._told_retry:
            self._told_retry = True
            how = (f"for up to {self.retry.refused_secs:g}s" if refused
                   else f"up to {self.retry.times} times, backing off to {self.retry.ceiling:g}s")
            self.on_retry(f"nimbus is not answering ({problem}); retrying {how}")

    def forward(
        self, method: str, path_and_query: str, body: bytes | None, headers: Mapping[str, str]
    ) -> tuple[int, bytes, str]:
        """Relay a raw API request to the leader: ``(status, body, content type)`` of its reply."""
        attempt = 0
        while True:
            leader = self._leader or self.find_leader()
            passed = {k: v for k, v in headers.items() if k.lower() in ("authorization", "content-type")}
            try:
                status, reply, content_type = self._send(method, f"{self._base(leader)}{path_and_query}", body,
                                                         passed, SUBMIT_TIMEOUT_SECS)
                if status != 503 or attempt >= self.retry.times:
                    return status, reply, content_type
            except NimbusUnreachableError:
                if attempt >= self.retry.times:
                    raise
            self._leader = None
            attempt += 1
            self.clock.sleep(self.retry.interval)

    def fetch_blob(self, holder: str, key: str) -> bytes:
        """Blob ``key`` from the nimbus ``holder`` (``host:port``, read from the cluster state), without retries.

        The request is signed (:func:`~storm_py.node.http_api.sign_request`): the token itself never goes to an
        address read from the cluster state.
        """
        url = f"{self._base(holder)}{API}/stored-blobs/{quote(key, safe='')}"
        return self._http("GET", url, None, REQUEST_TIMEOUT_SECS, signed=True)

    # ------------------------------------------------------------------------------------------- reads

    def nimbus_summary(self) -> list[dict[str, Any]]:
        """Every nimbus with its status (``Leader`` / ``Not a Leader``)."""
        return list(self.request("GET", "/nimbus/summary")["nimbuses"])

    def cluster_summary(self) -> dict[str, Any]:
        """Storm UI's cluster summary."""
        return dict(self.request("GET", "/cluster/summary"))

    def supervisor_summary(self) -> list[dict[str, Any]]:
        """Every live supervisor."""
        return list(self.request("GET", "/supervisor/summary")["supervisors"])

    def topology_summaries(self) -> list[dict[str, Any]]:
        """One row per live topology."""
        return list(self.request("GET", "/topology/summary")["topologies"])

    def topology_id(self, name: str) -> str:
        """The id of live topology ``name``; :class:`NotAliveException` when there is none."""
        for row in self.topology_summaries():
            if row.get("name") == name:
                return str(row["id"])
        raise NotAliveException(f"topology {name!r} is not alive", topology=name)

    def topology(self, name: str) -> dict[str, Any]:
        """The topology page of live topology ``name``."""
        return dict(self.request("GET", f"/topology/{quote(self.topology_id(name), safe='')}"))

    def topology_lag(self, name: str) -> dict[str, Any]:
        """Per spout of live topology ``name`` reading a log (Kafka): committed offset, log end and lag per
        partition (``/topology/:id/lag``)."""
        return dict(self.request("GET", f"/topology/{quote(self.topology_id(name), safe='')}/lag"))

    def component(self, name: str, component: str) -> dict[str, Any]:
        """The component page of ``component`` of live topology ``name``."""
        tid = quote(self.topology_id(name), safe="")
        return dict(self.request("GET", f"/topology/{tid}/component/{quote(component, safe='')}"))

    # ------------------------------------------------------------------------------------------- actions

    def submit(
        self, name: str, package: TopologyPackage, conf: Mapping[str, Any] | None = None, inactive: bool = False
    ) -> dict[str, Any]:
        """Upload a package and submit its topology as ``name``; returns ``{"id": ..., ...}``."""
        payload = {
            "name": name,
            "entry": package.entry,
            "filename": package.filename,
            "conf": dict(conf or {}),
            "inactive": bool(inactive),
            "package": base64.b64encode(package.data).decode("ascii"),
        }
        return dict(self.request("POST", "/uploadTopology", payload, timeout=SUBMIT_TIMEOUT_SECS))

    def _action(self, name: str, action: str, wait: float | None = None, payload: Any = None) -> dict[str, Any]:
        tid = quote(self.topology_id(name), safe="")
        suffix = "" if wait is None else f"/{wait:g}"
        return dict(self.request("POST", f"/topology/{tid}/{action}{suffix}", payload if payload is not None else {}))

    def kill(self, name: str, wait_secs: float | None = None) -> dict[str, Any]:
        """Kill ``name`` after ``wait_secs`` (default: its message timeout)."""
        return self._action(name, "kill", wait_secs)

    def activate(self, name: str) -> dict[str, Any]:
        """Activate ``name``."""
        return self._action(name, "activate")

    def deactivate(self, name: str) -> dict[str, Any]:
        """Deactivate ``name``."""
        return self._action(name, "deactivate")

    def rebalance(
        self,
        name: str,
        wait_secs: float | None = None,
        num_workers: int | None = None,
        executors: Mapping[str, int] | None = None,
        conf_overrides: Mapping[str, Any] | None = None,
        resources: Mapping[str, Any] | None = None,
        tasks: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Rebalance ``name`` (Storm's ``rebalanceOptions``: ``numWorkers``, ``executors``,
        ``topologyConfOverrides``, and ``topologyResourcesOverrides``: ``rebalance -r``); ``tasks``
        ({component: n}, sent as the body's top-level ``tasks``) changes components' task counts."""
        options: dict[str, Any] = {}
        if num_workers is not None:
            options["numWorkers"] = num_workers
        if executors:
            options["executors"] = dict(executors)
        if conf_overrides:
            options["topologyConfOverrides"] = dict(conf_overrides)
        if resources:
            options["topologyResourcesOverrides"] = dict(resources)
        body: dict[str, Any] = {"rebalanceOptions": options}
        if tasks:
            body["tasks"] = dict(tasks)
        return self._action(name, "rebalance", wait_secs, body)


class LogViewerError(StormPyError):
    """A supervisor's log viewer could not be reached or refused a request."""

    code = "logviewer_error"


class LogViewerClient:
    """Reads worker logs from one supervisor's log viewer (:mod:`storm_py.supervisor.logviewer`)."""

    def __init__(self, base_url: str, timeout: float = REQUEST_TIMEOUT_SECS, conf: Mapping[str, Any] | None = None,
                 ) -> None:
        """``conf``: the client's config (its token and TLS settings; the log viewers share the cluster's)."""
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.token = read_token(conf or {}, None) if conf is not None else None
        self.tls = client_context(conf or {})
        if self.tls is not None and self.base_url.startswith("http://"):
            self.base_url = "https://" + self.base_url[len("http://"):]

    def _get(self, path: str, raw: bool = False, method: str = "GET", max_bytes: int | None = None) -> Any:
        url = f"{self.base_url}{API}{path}"
        req = urllib.request.Request(url, method=method)
        if self.token:
            req.add_header(TOKEN_HEADER, f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self.tls) as resp:
                body = resp.read() if max_bytes is None else resp.read(max_bytes + 1)
                if max_bytes is not None and len(body) > max_bytes:
                    raise LogViewerError(f"log viewer {self.base_url}: the reply is over {max_bytes} bytes",
                                         url=url, limit=max_bytes)
                return body if raw else json.loads(body)
        except urllib.error.HTTPError as err:
            reply = error_from_reply(err.code, err.read(), url)
            raise LogViewerError(f"log viewer {self.base_url}: {reply.message}", url=url) from err
        except (urllib.error.URLError, OSError, ValueError) as err:
            reason = getattr(err, "reason", err)
            raise LogViewerError(f"cannot reach the log viewer at {self.base_url} ({reason})", url=url) from err

    def files(self, topology_id: str) -> list[dict[str, Any]]:
        """``[{"file": "<id>/<port>/<name>", "size": n}]`` of a topology on that supervisor."""
        return list(self._get(f"/logs/{quote(topology_id, safe='')}")["files"])

    def read(self, rel: str, start: int = 0, length: int | None = None) -> dict[str, Any]:
        """One chunk of a file from ``start`` (at most ``length`` bytes, if given): ``{"file", "start", "next",
        "size", "data"}``."""
        extra = "" if length is None else f"&length={int(length)}"
        return dict(self._get(f"/log?file={quote(rel, safe='/')}&start={int(start)}{extra}"))

    def search(self, rel: str, text: str, num_matches: int = 10, start: int = 0) -> dict[str, Any]:
        """Storm's ``search`` in one worker file: ``{"matches": [{"byteOffset", "matchString", ...}], ...}``."""
        query = urlencode({"file": rel, "search-string": text, "num-matches": num_matches, "start-byte-offset": start})
        return dict(self._get(f"/search?{query}"))

    def deep_search(self, topology_id: str, text: str, num_matches: int = 1, port: str = "*") -> dict[str, Any]:
        """Storm's ``deepSearch``: matches in the worker logs of ``topology_id`` on that host."""
        query = urlencode({"search-string": text, "num-matches": num_matches, "port": port})
        return dict(self._get(f"/deepSearch/{quote(topology_id, safe='')}?{query}"))

    def download(self, rel: str, max_bytes: int | None = None) -> bytes:
        """A whole worker file; with ``max_bytes``, a bigger one is refused (:class:`LogViewerError`) unread."""
        data: bytes = self._get(f"/download?{urlencode({'file': rel})}", raw=True, max_bytes=max_bytes)
        return data

    def profile(self, topology_id: str, port: int, action: str, seconds: int) -> dict[str, Any]:
        """Start profiling action ``stack``, ``cpu`` or ``memory`` on a worker of that supervisor:
        ``{"file", "action", "tool", "seconds", "status"}`` (:mod:`storm_py.supervisor.profiler`)."""
        path = f"/profiling/{quote(action, safe='')}/{quote(topology_id, safe='')}/{int(port)}?seconds={int(seconds)}"
        return dict(self._get(path, method="POST"))

    def profiling_dumps(self, topology_id: str, port: int) -> list[dict[str, Any]]:
        """The profiling results of a worker of that supervisor, newest first."""
        return list(self._get(f"/profiling/dumps/{quote(topology_id, safe='')}/{int(port)}")["dumps"])
