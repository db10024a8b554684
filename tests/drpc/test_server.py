"""The DRPC server as a real process (``storm-py drpc``): DRPCClient and HTTP round trips, the CLI client, and
bad input answered with clear errors while the server keeps serving."""

from __future__ import annotations

import json
import selectors
import socket
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from storm_py import BasicBolt, Config, LocalCluster
from storm_py.api.components import OutputFieldsDeclarer
from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.drpc import DRPCClient, DRPCExecutionException, DRPCInvocationsClient, LinearDRPCTopologyBuilder
from storm_py.drpc.errors import BUSY, FAILED_REQUEST, SERVER_SHUTDOWN, SERVER_TIMEOUT, TOO_LARGE, UNAUTHORIZED
from tests.cluster.harness import storm_py_command
from tests.drpc.conftest import TOKEN, DRPCServerProcess


@contextmanager
def answering(server: DRPCServerProcess, function: str, answer: Callable[[str], str | None],
              token: str = TOKEN) -> Iterator[list[str]]:
    """A thread playing the topology: fetches ``function``'s requests and returns ``answer(args)`` (None: fail)."""
    stop = threading.Event()
    seen: list[str] = []
    client = DRPCInvocationsClient("127.0.0.1", server.invocations_port, token)

    def run() -> None:
        while not stop.is_set():
            for inv in client.fetch(function, 100, 0.2):
                seen.append(inv.args)
                value = answer(inv.args)
                if value is None:
                    client.fail(inv.id, f"cannot do {inv.args!r}")
                else:
                    client.result(inv.id, value)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(10)
        client.close()


def http(server: DRPCServerProcess, method: str, path: str, body: bytes | None = None,
         token: str | None = TOKEN) -> tuple[int, bytes]:
    req = urllib.request.Request(f"http://127.0.0.1:{server.http_port}{path}", data=body, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def pending(server: DRPCServerProcess) -> int:
    return int(json.loads(http(server, "GET", "/status")[1])["pending"])


def test_client_and_http_round_trips_and_the_cli_client(drpc_server: Callable[..., DRPCServerProcess]) -> None:
    server = drpc_server()
    with answering(server, "echo", lambda a: f"echo:{a}"):
        with DRPCClient("127.0.0.1", server.port, timeout_secs=30, token=TOKEN) as client:
            assert client.execute("echo", "hello") == "echo:hello"
            assert client.execute("echo", "") == "echo:"
            assert client.execute("echo", "ünïcode ✓") == "echo:ünïcode ✓"
        assert http(server, "GET", "/drpc/echo/hello%20world") == (200, b"echo:hello world")
        assert http(server, "GET", "/drpc/echo") == (200, b"echo:")
        assert http(server, "POST", "/drpc/echo", b"body args") == (200, b"echo:body args")
        conf = server.workdir / "client.yaml"
        conf.write_text(f"drpc.servers: ['127.0.0.1:{server.port}']\nnimbus.auth.token: {TOKEN}\n", encoding="utf-8")
        proc = subprocess.run([*storm_py_command(), "drpc-client", "echo", "a b", "c", "--config", str(conf)],
                              capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines() == ["echo:a b", "echo:c"]


def test_http_arguments_are_the_rest_of_the_path(drpc_server: Callable[..., DRPCServerProcess]) -> None:
    """Storm's ``GET /drpc/reach/foo.com/blog/1``: the arguments hold slashes, plain or percent-encoded."""
    server = drpc_server()
    with answering(server, "echo", lambda a: f"echo:{a}") as seen:
        assert http(server, "GET", "/drpc/echo/foo.com/blog/1") == (200, b"echo:foo.com/blog/1")
        assert http(server, "GET", "/drpc/echo/foo.com%2Fblog%2F1") == (200, b"echo:foo.com/blog/1")
        assert http(server, "GET", "/drpc/echo/a/b%20c/d") == (200, b"echo:a/b c/d")
    assert seen == ["foo.com/blog/1", "foo.com/blog/1", "a/b c/d"]


def test_health_is_status_only_and_the_pending_count_needs_the_token(
    drpc_server: Callable[..., DRPCServerProcess],
) -> None:
    server = drpc_server()
    for port in (server.port, server.invocations_port, server.http_port):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as resp:
            assert set(json.loads(resp.read())) == {"status", "server"}
    assert http(server, "GET", "/status", token=None)[0] == 401
    assert pending(server) == 0


def test_no_token_or_a_wrong_token_is_refused_on_every_port(drpc_server: Callable[..., DRPCServerProcess]) -> None:
    server = drpc_server()
    for token in (None, "wrong-token"):
        with DRPCClient("127.0.0.1", server.port, timeout_secs=10, token=token) as client:
            with pytest.raises(DRPCExecutionException, match=r"refused the request.*token") as err:
                client.execute("echo", "x")
            assert err.value.type == UNAUTHORIZED
        status, body = http(server, "GET", "/drpc/echo/x", token=token)
        assert status == 401 and b"nimbus.auth.token" in body
        topology = DRPCInvocationsClient("127.0.0.1", server.invocations_port, token)
        with pytest.raises(DRPCExecutionException, match="token") as err:
            topology.fetch("echo")
        assert err.value.type == UNAUTHORIZED
        topology.close()
    assert pending(server) == 0
    with answering(server, "echo", lambda a: a), DRPCClient("127.0.0.1", server.port, 10, TOKEN) as client:
        assert client.execute("echo", "still serving") == "still serving"


def test_an_oversized_request_is_refused_unread(drpc_server: Callable[..., DRPCServerProcess]) -> None:
    server = drpc_server({"drpc.max.request.bytes": 4096})
    with DRPCClient("127.0.0.1", server.port, 10, TOKEN) as client:
        with pytest.raises(DRPCExecutionException, match="over 4096") as err:
            client.execute("echo", "x" * 10_000)
        assert err.value.type == TOO_LARGE
    status, body = http(server, "POST", "/drpc/echo", b"y" * 10_000)
    assert status == 413 and b"over 4096" in body
    status, body = http(server, "GET", "/drpc/" + "f" * 300 + "/x")
    assert status == 400 and b"function name" in body
    with answering(server, "echo", lambda a: a), DRPCClient("127.0.0.1", server.port, 10, TOKEN) as client:
        assert client.execute("echo", "small") == "small"


def _raw_requests(port: int, paths: list[str]) -> list[tuple[int, bytes]]:
    """Send every request at once on its own connection (one thread, non-blocking); ``(status, body)`` each."""
    sel = selectors.DefaultSelector()
    replies: dict[int, bytearray] = {}
    for i, path in enumerate(paths):
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
                     "Connection: close\r\n\r\n".encode())
        sock.setblocking(False)
        replies[i] = bytearray()
        sel.register(sock, selectors.EVENT_READ, i)
    open_socks = len(paths)
    while open_socks:
        events = sel.select(timeout=60)
        assert events, "the server stopped answering"
        for key, _ in events:
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            chunk = sock.recv(65536)
            if chunk:
                replies[key.data] += chunk
            else:
                sel.unregister(sock)
                sock.close()
                open_socks -= 1
    out = []
    for i in range(len(paths)):
        head, _, body = bytes(replies[i]).partition(b"\r\n\r\n")
        out.append((int(head.split()[1]) if head else 0, body))
    return out


def _rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))


@pytest.mark.slow
def test_a_thousand_concurrent_requests_are_bounded_and_the_server_keeps_serving(
    drpc_server: Callable[..., DRPCServerProcess],
) -> None:
    server = drpc_server({"drpc.max.pending.requests": 100})
    assert server.proc is not None
    rss: list[int] = []
    with answering(server, "square", lambda a: str(int(a) ** 2)):
        for _ in range(2):
            replies = _raw_requests(server.http_port, [f"/drpc/square/{i}" for i in range(1000)])
            answered = [i for i, (status, body) in enumerate(replies) if status == 200]
            busy = [i for i, (status, body) in enumerate(replies) if status == 503]
            assert len(answered) + len(busy) == 1000, {s for s, _ in replies}
            assert all(replies[i][1] == str(i * i).encode() for i in answered)
            assert all(json.loads(replies[i][1])["error"] == BUSY.upper() for i in busy)
            assert all(b"drpc.max.pending.requests" in replies[i][1] for i in busy)
            assert len(answered) >= 100
            wait_until(lambda: pending(server) == 0, 10, what="no request left pending")
            rss.append(_rss_kib(server.proc.pid))
        assert rss[1] <= rss[0] * 1.2 + 10_240, f"the server grew from {rss[0]} KiB to {rss[1]} KiB"
        with DRPCClient("127.0.0.1", server.port, 10, TOKEN) as client:
            assert client.execute("square", "12") == "144"


def test_a_request_nobody_answers_times_out_and_a_failed_one_fails(
    drpc_server: Callable[..., DRPCServerProcess],
) -> None:
    server = drpc_server({"drpc.request.timeout.secs": 1})
    with DRPCClient("127.0.0.1", server.port, 30, TOKEN) as client:
        with pytest.raises(DRPCExecutionException, match="timed out after 1s: no topology fetched it") as err:
            client.execute("nobody", "x")
        assert err.value.type == SERVER_TIMEOUT
        silent = DRPCInvocationsClient("127.0.0.1", server.invocations_port, TOKEN)
        fetched: list[Any] = []
        thread = threading.Thread(target=lambda: fetched.extend(silent.fetch("silent", 1, 5.0)))
        thread.start()
        with pytest.raises(DRPCExecutionException, match="fetched it but never returned"):
            client.execute("silent", "x")
        thread.join(10)
        assert len(fetched) == 1 and not silent.result(fetched[0].id, "too late")
        silent.close()
        assert http(server, "GET", "/drpc/nobody/x")[0] == 504
        with answering(server, "picky", lambda a: a if a == "ok" else None):
            assert client.execute("picky", "ok") == "ok"
            with pytest.raises(DRPCExecutionException, match="'picky' failed: cannot do 'bad'") as err:
                client.execute("picky", "bad")
            assert err.value.type == FAILED_REQUEST
            status, body = http(server, "GET", "/drpc/picky/bad")
            assert status == 400 and json.loads(body)["error"] == "FAILED_REQUEST"
    assert pending(server) == 0


def test_stopping_the_server_answers_waiting_clients_with_shutting_down(
    drpc_server: Callable[..., DRPCServerProcess],
) -> None:
    server = drpc_server()
    errors: list[DRPCExecutionException] = []
    statuses: list[int] = []

    def call() -> None:
        with DRPCClient("127.0.0.1", server.port, 30, TOKEN) as client:
            try:
                client.execute("waits", "x")
            except DRPCExecutionException as err:
                errors.append(err)

    threads = [threading.Thread(target=call), threading.Thread(target=lambda: statuses.append(
        http(server, "GET", "/drpc/waits/y")[0]))]
    for t in threads:
        t.start()
    wait_until(lambda: pending(server) == 2, 10, what="two waiting requests")
    assert server.stop() == 0
    for t in threads:
        t.join(10)
    assert [e.type for e in errors] == [SERVER_SHUTDOWN] and "shut down" in errors[0].message
    assert statuses == [503]


HELD = threading.Event()


class HoldOrEcho(BasicBolt):
    """Answers ``[id, args]`` with the args, except ``hang``, which it keeps forever (acked, never answered)."""

    def execute(self, tup: Any, collector: Any) -> None:
        if tup.values[1] == "hang":
            HELD.set()
            return
        collector.emit([tup.values[0], tup.values[1]])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "result"])


def test_a_remote_topology_serves_requests_and_killing_it_mid_request_fails_that_request(
    drpc_server: Callable[..., DRPCServerProcess],
) -> None:
    server = drpc_server({"drpc.request.timeout.secs": 60})
    builder = LinearDRPCTopologyBuilder("hold")
    builder.add_bolt(HoldOrEcho(), 2)
    conf = Config()
    conf.update({"drpc.servers": ["127.0.0.1"], "drpc.invocations.port": server.invocations_port,
                 "nimbus.auth.token": TOKEN})
    HELD.clear()
    errors: list[DRPCExecutionException] = []
    with LocalCluster() as cluster, DRPCClient("127.0.0.1", server.port, 60, TOKEN) as client:
        cluster.submit_topology("hold", conf, builder.create_remote_topology())
        assert client.execute("hold", "fine") == "fine"
        assert http(server, "GET", "/drpc/hold/also%20fine") == (200, b"also fine")

        def call() -> None:
            with DRPCClient("127.0.0.1", server.port, 60, TOKEN) as other:
                try:
                    other.execute("hold", "hang")
                except DRPCExecutionException as err:
                    errors.append(err)

        thread = threading.Thread(target=call)
        thread.start()
        assert HELD.wait(30), "the topology never got the request"
        started = SYSTEM_CLOCK.now()
        cluster.kill_topology("hold", wait_secs=0)
        thread.join(30)
        assert SYSTEM_CLOCK.now() - started < 30
    assert [e.type for e in errors] == [FAILED_REQUEST]
    assert "stopped before it completed" in errors[0].message
    assert pending(server) == 0
    with answering(server, "hold", lambda a: a), DRPCClient("127.0.0.1", server.port, 10, TOKEN) as client:
        assert client.execute("hold", "served again") == "served again"


def test_a_client_idle_past_the_connection_timeout_reconnects_instead_of_failing(
    drpc_server: Callable[..., DRPCServerProcess],
) -> None:
    from storm_py.node.http_api import closed_by_peer as _closed_by_peer

    server = drpc_server({"drpc.connection.timeout.secs": 0.5})
    with answering(server, "echo", lambda a: a), DRPCClient("127.0.0.1", server.port, 10, TOKEN) as client:
        assert client.execute("echo", "first") == "first"
        sock = client._conn._conn.sock if client._conn._conn is not None else None
        assert sock is not None
        wait_until(lambda: _closed_by_peer(sock), 10, what="the server to close the idle connection")
        assert client.execute("echo", "after idling") == "after idling"


def test_a_server_without_a_token_generates_one_that_the_cli_client_reads(
    drpc_server: Callable[..., DRPCServerProcess],
) -> None:
    server = drpc_server({"nimbus.auth.token": None})
    path = server.workdir / "storm-py.token"
    assert f"token: {path}" in server.output()
    assert path.stat().st_mode & 0o777 == 0o600
    token = path.read_text(encoding="utf-8").strip()
    assert len(token) >= 32
    with DRPCClient("127.0.0.1", server.port, 10, None) as client, pytest.raises(DRPCExecutionException,
                                                                                  match="token"):
        client.execute("echo", "x")
    with answering(server, "echo", lambda a: a.upper(), token=token):
        conf = server.workdir / "client.yaml"
        conf.write_text(f"drpc.servers: ['127.0.0.1:{server.port}']\n", encoding="utf-8")
        proc = subprocess.run([*storm_py_command(), "drpc-client", "echo", "quiet", "--config", str(conf)],
                              capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines() == ["QUIET"]
