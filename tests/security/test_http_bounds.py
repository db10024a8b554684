"""An attacker against the HTTP plumbing every daemon serves (nimbus's API, log viewers, the UI relay):
no token, a wrong token, huge and lying bodies, stalled and piled-up connections."""

from __future__ import annotations

import resource
import socket
from collections.abc import Iterator

import pytest

from storm_py.client import NimbusClient
from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.node.http_api import JsonApiServer, Reply, Request, Route, sign_request

TOKEN = "right-token"


def time_now() -> float:
    return SYSTEM_CLOCK.wall()


@pytest.fixture
def server() -> Iterator[tuple[JsonApiServer, list[bytes]]]:
    seen: list[bytes] = []

    def submit(request: Request) -> dict[str, int]:
        seen.append(request.body)
        return {"bytes": len(request.body)}

    api = JsonApiServer("127.0.0.1", 0, [Route("POST", "/submit", submit, protected=True),
                                         Route("GET", "/open", lambda _r: {"ok": True}, public=True)],
                        token=TOKEN, name="test", max_body=1024, timeout=1.0, max_connections=4)  # fmt: skip
    api.start()
    try:
        yield api, seen
    finally:
        api.stop()


def exchange(port: int, head: str, body: bytes = b"", timeout: float = 10.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n" + body)
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            pass
        return b"".join(chunks)


def post(port: int, length: int, token: str | None, body: bytes = b"") -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token is not None else ""
    head = (f"POST /submit HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n{auth}Connection: close\r\n")
    return exchange(port, head, body)


def status(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1])


@pytest.mark.parametrize("token", [None, "wrong-token", ""])
def test_no_or_wrong_token_is_refused_before_the_body_is_read(server: tuple[JsonApiServer, list[bytes]],
                                                              token: str | None) -> None:  # fmt: skip
    api, seen = server
    # Announces 200 MB but sends none of it: the refusal must come from the headers alone.
    reply = post(api.port, 200 * 1024 * 1024, token)
    assert status(reply) == 401 and b"unauthorized" in reply
    assert seen == []


def test_an_oversized_body_is_refused_unread(server: tuple[JsonApiServer, list[bytes]]) -> None:
    api, seen = server
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    reply = post(api.port, 300 * 1024 * 1024, TOKEN, b"x" * 65536)
    assert status(reply) == 413
    assert seen == []
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # KiB: nothing buffered
    # The right token and a small body still work.
    assert status(post(api.port, 3, TOKEN, b"abc")) == 200 and seen == [b"abc"]


def test_a_lying_content_length_is_a_bad_request(server: tuple[JsonApiServer, list[bytes]]) -> None:
    api, seen = server
    for length in ("-5", "nan", "1e9"):
        head = f"POST /submit HTTP/1.1\r\nContent-Length: {length}\r\nAuthorization: Bearer {TOKEN}\r\n"
        assert status(exchange(api.port, head)) == 400
    assert seen == []


def test_stalled_and_piled_up_connections_do_not_hold_the_server(server: tuple[JsonApiServer, list[bytes]]) -> None:
    api, _seen = server
    stalled = []
    try:
        for _ in range(12):  # three times the connection cap, each sending half a request line and stopping
            sock = socket.create_connection(("127.0.0.1", api.port), timeout=10.0)
            sock.sendall(b"GET /op")
            stalled.append(sock)

        def answers() -> bool:
            try:
                head = "GET /open HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                return status(exchange(api.port, head, timeout=2.0)) == 200
            except (OSError, IndexError, ValueError):
                return False

        # The per-connection timeout (1 s here) frees the threads; the server answers again.
        wait_until(answers, 15.0, interval=0.2, what="the server to answer after the stalled connections")
        assert api._server.refused > 0  # the connections beyond the cap were closed, not queued on threads
    finally:
        for sock in stalled:
            sock.close()


def signed_get(port: int, path: str, value: str) -> int:
    return status(exchange(port, f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
                                 f"Authorization: {value}\r\nConnection: close\r\n"))  # fmt: skip


def test_signed_requests_prove_the_token_without_carrying_it(server: tuple[JsonApiServer, list[bytes]]) -> None:
    api, seen = server
    now = time_now()
    good = sign_request(TOKEN, "POST", "/submit", now)
    assert TOKEN not in good
    assert signed_get(api.port, "/submit", good) == 200
    assert signed_get(api.port, "/submit", sign_request("wrong-token", "POST", "/submit", now)) == 401
    assert signed_get(api.port, "/submit", sign_request(TOKEN, "POST", "/other", now)) == 401  # another path
    assert signed_get(api.port, "/submit", sign_request(TOKEN, "GET", "/submit", now)) == 401  # another method
    assert signed_get(api.port, "/submit", sign_request(TOKEN, "POST", "/submit", now - 3600)) == 401  # stale
    for junk in ("Storm-HMAC", "Storm-HMAC nan:x:" + "0" * 64, "Storm-HMAC 1:2", "Storm-HMAC ::::"):
        assert signed_get(api.port, "/submit", junk) == 401
    assert len(seen) == 1


def test_a_planted_blob_holder_learns_nothing_replayable(tmp_path: object) -> None:
    """A daemon fetching a blob from an address read from ZooKeeper sends a signature, never the token."""
    heard: list[str] = []

    def blob(request: Request) -> Reply:
        heard.append(next((v for k, v in request.headers.items() if k.lower() == "authorization"), ""))
        return Reply(200, b"malicious wheel", "application/octet-stream")

    evil = JsonApiServer("127.0.0.1", 0, [Route("GET", "/api/v1/stored-blobs/{key}", blob)], name="evil")
    evil.start()
    try:
        client = NimbusClient({"nimbus.seeds": ["127.0.0.1:1"], "nimbus.auth.token": TOKEN})
        client.fetch_blob(f"127.0.0.1:{evil.port}", "wc-1-1-stormcode")
    finally:
        evil.stop()
    assert heard and heard[0].startswith("Storm-HMAC ") and TOKEN not in heard[0]
