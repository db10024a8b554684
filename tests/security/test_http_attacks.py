"""An attacker on the same machine against every HTTP endpoint of a cluster on loopback: no token, a wrong token,
a tricked browser's requests (foreign Origin, text/plain and form bodies), DNS rebinding, token guessing.  The
routes come from the servers' own tables, so a route added later is attacked without touching this file."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py import ui
from storm_py.node.http_api import JsonApiServer, Route
from storm_py.node.http_guard import MAX_FAILURES, FailureLimiter, allowed_hosts, host_allowed, origin_allowed
from tests.security.endpoints import (
    PUBLIC_PATTERNS,
    TOKEN,
    Endpoints,
    call,
    concrete,
    error_of,
    loopback_endpoints,
    servers_of,
)

pytestmark = pytest.mark.timeout(120)

NAMES = ("nimbus", "ui", "logviewer", "drpc", "drpc-invocations", "drpc-http")
JSON_BODY = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def endpoints(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoints]:
    with loopback_endpoints(tmp_path_factory.mktemp("endpoints")) as found:
        yield found


def attacked(endpoints: Endpoints, name: str) -> list[Route]:
    routes = [r for r in endpoints.routes(name) if not r.public and concrete(r.pattern) != "/health"]
    assert routes, f"{name} has no protected route"
    return routes


def test_every_http_server_of_every_daemon_is_attacked(endpoints: Endpoints) -> None:
    """Nimbus, the UI, the supervisor (whose only HTTP server is its log viewer) and the DRPC server run no server
    the tests below leave out: one added to a daemon later joins them or fails here."""
    attacked_servers = {id(s) for s in endpoints.servers.values()}
    for name, daemon in endpoints.daemons.items():
        running = servers_of(daemon)
        assert running, f"{name} runs no HTTP server"
        assert {id(s) for s in running} <= attacked_servers, (name, [s.name for s in running])
    assert [s.name for s in servers_of(endpoints.daemons["supervisor"])] == [endpoints.servers["logviewer"].name]
    assert {s.name for s in servers_of(endpoints.daemons["drpc"])} == {"drpc", "drpc-invocations", "drpc-http"}


def test_only_the_ui_files_and_health_are_public(endpoints: Endpoints) -> None:
    for name in NAMES:
        public = {r.pattern for r in endpoints.routes(name) if r.public}
        assert public <= PUBLIC_PATTERNS, (name, public)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", f"Bearer {TOKEN}x", "Basic Zm9vOmJhcg==",
                                           f"bearer{TOKEN}"])
def test_every_route_refuses_no_or_a_wrong_token(endpoints: Endpoints, name: str, authorization: str | None) -> None:
    port = endpoints.servers[name].port
    endpoints.servers[name].limiter = FailureLimiter()  # each case on its own: the routes outnumber the limit
    endpoints.handled.clear()
    for route in attacked(endpoints, name):
        content = route.bodies[0]  # each route's own body type (the UI relays nimbus's routes)
        headers = {"Content-Type": content} if route.method in ("POST", "PUT") else {}
        if authorization is not None:
            headers["Authorization"] = authorization
        body = b"{}" if route.method == "POST" else None
        status, _, reply = call(port, route.method, concrete(route.pattern), headers, body)
        assert (status, error_of(reply)) == (401, "unauthorized"), (name, route.method, route.pattern)
    assert [h for h in endpoints.handled if h[0] == name and h[2] != "/health"] == []  # no handler ran


@pytest.mark.parametrize("name", NAMES)
def test_health_is_open_and_tells_nothing(endpoints: Endpoints, name: str) -> None:
    status, headers, body = call(endpoints.servers[name].port, "GET", "/health")
    assert status == 200 and set(json.loads(body)) <= {"status", "server"}  # no live numbers (DRPC's pending)
    assert headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("name", NAMES)
def test_a_rebinding_host_is_refused_even_with_the_token(endpoints: Endpoints, name: str) -> None:
    """A page of attacker.example whose name now resolves to 127.0.0.1 sends ``Host: attacker.example``."""
    port = endpoints.servers[name].port
    endpoints.handled.clear()
    for route in [*attacked(endpoints, name), Route("GET", "/health", lambda _r: None)]:
        headers = {"Host": f"attacker.example:{port}", "Authorization": f"Bearer {TOKEN}", **JSON_BODY}
        body = b"{}" if route.method == "POST" else None
        status, _, reply = call(port, route.method, concrete(route.pattern), headers, body)
        assert (status, error_of(reply)) == (403, "forbidden"), (name, route.pattern)
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):  # its own names still work
        assert call(port, "GET", "/health", {"Host": host})[0] == 200
    assert [h for h in endpoints.handled if h[0] == name and h[2] != "/health"] == []


@pytest.mark.parametrize("name", NAMES)
def test_a_foreign_origin_is_refused_even_with_the_token(endpoints: Endpoints, name: str) -> None:
    port = endpoints.servers[name].port
    endpoints.handled.clear()
    for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", "null", f"https://127.0.0.1:{port}"):
        for route in attacked(endpoints, name):
            headers = {"Origin": origin, "Authorization": f"Bearer {TOKEN}", **JSON_BODY}
            body = b"{}" if route.method == "POST" else None
            status, _, reply = call(port, route.method, concrete(route.pattern), headers, body)
            assert (status, error_of(reply)) == (403, "forbidden"), (name, origin, route.pattern)
    assert [h for h in endpoints.handled if h[0] == name and h[2] != "/health"] == []


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=x",
                                          None])
def test_a_post_body_that_is_not_json_is_refused(endpoints: Endpoints, name: str, content_type: str | None) -> None:
    """The cross-site "simple" request (no preflight) and a form post, even if the token were known."""
    port = endpoints.servers[name].port
    endpoints.handled.clear()
    posts = [r for r in attacked(endpoints, name) if r.method == "POST" and r.bodies == ("application/json",)]
    for route in posts:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        status, _, reply = call(port, "POST", concrete(route.pattern), headers, b'{"name": "x"}')
        assert (status, error_of(reply)) == (403, "forbidden"), (name, route.pattern, content_type)
    assert [h for h in endpoints.handled if h[0] == name and h[2] != "/health"] == []


def test_the_right_token_from_the_server_s_own_origin_is_served(endpoints: Endpoints) -> None:
    for name in ("nimbus", "ui"):
        port = endpoints.servers[name].port
        headers = {"Authorization": f"Bearer {TOKEN}", "Origin": f"http://127.0.0.1:{port}"}
        status, _, body = call(port, "GET", "/api/v1/cluster/summary", headers)
        assert status == 200 and "supervisors" in json.loads(body)


def test_the_ui_files_carry_the_security_headers_and_no_inline_script(endpoints: Endpoints) -> None:
    port = endpoints.servers["ui"].port
    for page in ("/", *(f"/{p}" for p in ui.PAGES), "/static/storm.js", "/static/style.css"):
        status, headers, body = call(port, "GET", page)
        assert status == 200, page
        csp = headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"] == "DENY"
        if page.endswith(".html") or page == "/":
            html = body.decode("utf-8")
            assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), page  # every script is a file
            assert not re.search(r"\son[a-z]+\s*=", html, re.I) and " style=" not in html, page
            assert "javascript:" not in html


def test_token_guessing_is_rate_limited(tmp_path: Path) -> None:
    api = JsonApiServer("127.0.0.1", 0, [Route("GET", "/secret", lambda _r: {"secret": 1})], token=TOKEN)
    api.start()
    try:
        guesses = [call(api.port, "GET", "/secret", {"Authorization": f"Bearer guess-{i}"})[0]
                   for i in range(MAX_FAILURES + 5)]
        assert guesses[:MAX_FAILURES] == [401] * MAX_FAILURES and guesses[MAX_FAILURES:] == [429] * 5
        # while blocked, the address is not even checked (the right token waits too)
        assert call(api.port, "GET", "/secret", {"Authorization": f"Bearer {TOKEN}"})[0] == 429
    finally:
        api.stop()


def test_the_failure_limiter_forgets_after_its_window() -> None:
    limiter = FailureLimiter(limit=3, window=60.0, tracked=2)
    for t in (0.0, 1.0, 2.0):
        limiter.failed("a", t)
    assert limiter.blocked("a", 2.5) and not limiter.blocked("b", 2.5)
    assert not limiter.blocked("a", 60.5)  # the first failure left the window
    limiter.failed("b", 3.0)
    limiter.failed("c", 4.0)  # over the tracked limit: the oldest address is forgotten
    assert not limiter.blocked("a", 5.0)


def test_host_and_origin_decisions() -> None:
    names = allowed_hosts({"nimbus.host": "nimbus", "nimbus.seeds": ["n2:6627"], "storm.http.hosts": ["ui.corp"]})
    for good in ("nimbus:6627", "n2", "UI.corp", "localhost:8080", "10.0.0.7:80", "[::1]:8080", "127.0.0.1"):
        assert host_allowed(good, names), good
    for bad in ("attacker.example", "attacker.example:8080", "nimbus.attacker.example", "", None):
        assert not host_allowed(bad, names), bad
    assert origin_allowed(None, "127.0.0.1:80", tls=False)
    assert origin_allowed("http://127.0.0.1:80", "127.0.0.1:80", tls=False)
    assert not origin_allowed("http://127.0.0.1:80", "127.0.0.1:80", tls=True)
    assert not origin_allowed("http://127.0.0.1:81", "127.0.0.1:80", tls=False)
    assert not origin_allowed("null", "127.0.0.1:80", tls=False)


def test_the_ui_relays_a_blob_upload_and_still_refuses_a_simple_request_body(endpoints: Endpoints) -> None:
    """User blobs travel as raw bytes: the UI relays them to nimbus like any route's body; a ``text/plain`` body
    (what a cross-site simple request sends) stays refused before anything is relayed."""
    port = endpoints.servers["ui"].port
    auth = {"Authorization": f"Bearer {TOKEN}"}
    status, _, reply = call(port, "POST", "/api/v1/blobs/relayed-blob",
                            {**auth, "Content-Type": "application/octet-stream"}, b"\x00raw bytes\xff")
    assert status == 200, reply
    status, _, data = call(port, "GET", "/api/v1/blobs/relayed-blob", auth)
    assert (status, data) == (200, b"\x00raw bytes\xff")
    status, _, reply = call(port, "PUT", "/api/v1/blobs/relayed-blob", {**auth, "Content-Type": "text/plain"}, b"x")
    assert (status, error_of(reply)) == (403, "forbidden")


@pytest.mark.parametrize("key", ["..", ".", "%2e%2e", "%2E%2e", "%2e", ".tmp-upload"])
def test_a_stored_blob_key_naming_a_directory_is_a_clean_bad_request(endpoints: Endpoints, key: str) -> None:
    """``/api/v1/stored-blobs/..`` once answered 500 with ``IsADirectoryError`` naming nimbus's blob directory."""
    server = endpoints.servers["nimbus"]
    status, _, body = call(server.port, "GET", f"/api/v1/stored-blobs/{key}", {"Authorization": f"Bearer {TOKEN}"})
    reply = json.loads(body)
    assert (status, reply["error"]) == (400, "bad_request"), reply
    assert repr(key.replace("%2e", ".").replace("%2E", ".")) in reply["errorMessage"]
    nimbus_dir = str(endpoints.daemons["nimbus"].blobs.root)
    assert "/" not in reply["errorMessage"] and nimbus_dir not in body.decode()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    status, _, body = call(server.port, "GET", "/api/v1/stored-blobs/no-such-blob", auth)
    assert status == 404 and b"no-such-blob" in body and nimbus_dir.encode() not in body
