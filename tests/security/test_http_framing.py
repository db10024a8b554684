"""An anonymous attacker framing one body two ways against every HTTP endpoint of a cluster on loopback: two
``Content-Length`` headers (the check reading one, the read using the other), ``Transfer-Encoding`` with a length,
and a huge body declared on ``GET /health``.  Each request declares hundreds of megabytes and sends none of them:
a server that meant to read the body would wait for it, so the refusal coming back at once proves nothing was
read (and nothing could be buffered)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from storm_py.clock import SYSTEM_CLOCK
from storm_py.errors import StormPyError
from storm_py.node.http_framing import body_length, merged_headers
from tests.security.endpoints import TOKEN, Endpoints, loopback_endpoints

pytestmark = pytest.mark.timeout(120)

NAMES = ("nimbus", "ui", "logviewer", "drpc", "drpc-invocations", "drpc-http")
HUGE = 314572800
#: Far below the servers' 30 s connection timeout: a server reading the declared body would still be waiting.
PROMPT_SECS = 5.0


@pytest.fixture(scope="module")
def endpoints(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoints]:
    with loopback_endpoints(tmp_path_factory.mktemp("framing")) as found:
        yield found


def raw(port: int, lines: list[str]) -> tuple[int, bytes, float]:
    """Send the request head ``lines`` and no body; the reply's status, bytes and seconds until it came."""
    began = SYSTEM_CLOCK.now()
    with socket.create_connection(("127.0.0.1", port), timeout=PROMPT_SECS) as sock:
        sock.sendall(("\r\n".join([*lines, "", ""])).encode("latin-1"))
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            pass
    reply = b"".join(chunks)
    assert reply.startswith(b"HTTP/1.1 "), f"no reply within {PROMPT_SECS} s: the server waited for the body"
    return int(reply.split(b" ", 2)[1]), reply, SYSTEM_CLOCK.now() - began


def head(method: str, path: str, port: int, *extra: str) -> list[str]:
    return [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", *extra]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("lengths", [(HUGE, 0), (0, HUGE), (HUGE, HUGE)])
def test_two_content_lengths_are_refused_unread(endpoints: Endpoints, name: str, lengths: tuple[int, int]) -> None:
    port = endpoints.servers[name].port
    endpoints.handled.clear()
    status, reply, took = raw(port, head("GET", "/health", port, *(f"Content-Length: {n}" for n in lengths)))
    assert status == 400 and b"more than one Content-Length" in reply
    assert took < PROMPT_SECS
    # the same with the token, on a route that takes a body, and with the second header in another case
    status, reply, _ = raw(port, head("POST", "/x", port, "Content-Type: application/json",
                                      f"Authorization: Bearer {TOKEN}", f"Content-Length: {lengths[0]}",
                                      f"content-length: {lengths[1]}"))
    assert status == 400 and b"more than one Content-Length" in reply
    assert endpoints.handled == []


@pytest.mark.parametrize("name", NAMES)
def test_transfer_encoding_is_refused_with_or_without_a_length(endpoints: Endpoints, name: str) -> None:
    port = endpoints.servers[name].port
    endpoints.handled.clear()
    base = head("POST", "/x", port, "Content-Type: application/json", f"Authorization: Bearer {TOKEN}")
    status, reply, _ = raw(port, [*base, "Transfer-Encoding: chunked", f"Content-Length: {HUGE}"])
    assert status == 400 and b"both Transfer-Encoding" in reply
    status, reply, _ = raw(port, [*base, "Transfer-Encoding: chunked"])
    assert status == 411 and b"Transfer-Encoding" in reply
    assert endpoints.handled == []


@pytest.mark.parametrize("name", NAMES)
def test_a_body_on_a_get_is_refused_unread(endpoints: Endpoints, name: str) -> None:
    """``GET /health`` (open), the UI's files (open) and a protected read take no body: a declared one is refused
    before a byte of it is read, token or not (declaring the server's whole body limit, which passes the size
    check: a server meaning to read it would wait)."""
    server = endpoints.servers[name]
    port, length = server.port, server.max_body
    endpoints.handled.clear()
    for path, auth in (("/health", []), ("/", []), ("/api/v1/cluster/summary", [f"Authorization: Bearer {TOKEN}"])):
        status, reply, took = raw(port, head("GET", path, port, *auth, f"Content-Length: {length}"))
        assert status == 400 and b"takes no body" in reply, (path, reply)
        assert took < PROMPT_SECS
    assert endpoints.handled == []
    status, reply, _ = raw(port, head("GET", "/health", port, "Content-Length: 0", "Connection: close"))
    assert status == 200  # an empty body is no body


def test_the_framing_decision() -> None:
    def length(method: str, *fields: tuple[str, str]) -> int | str:
        try:
            return body_length(method, merged_headers(fields))
        except StormPyError as err:
            return err.code

    assert length("POST", ("Content-Length", "12")) == 12
    assert length("POST") == 0 and length("GET", ("Content-Length", "0")) == 0
    assert length("POST", ("Content-Length", "12"), ("CONTENT-LENGTH", "12")) == "bad_request"
    assert length("POST", ("Content-Length", "12, 0")) == "bad_request"
    for junk in ("-5", "+5", "1_0", "1e3", "", "٣"):
        assert length("POST", ("Content-Length", junk)) == "bad_request", junk
    assert length("POST", ("Transfer-Encoding", "chunked")) == "length_required"
    assert length("POST", ("Transfer-Encoding", "identity"), ("Content-Length", "3")) == "bad_request"
    assert length("GET", ("Content-Length", "3")) == "bad_request"
    assert merged_headers([("Host", "a"), ("host", "b"), ("X", "1")]) == {"Host": "a, b", "X": "1"}

