"""TLS on the HTTP endpoints (``storm.tls.*``): a throwaway CA from :mod:`storm_py.dev.tls_ca`, clients that
verify, and a port that speaks nothing but TLS."""

from __future__ import annotations

import socket
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py.client import NimbusClient
from storm_py.cluster_state.memory import MemoryStorage
from storm_py.dev.tls_ca import make_dev_tls
from storm_py.drpc.client import DRPCInvocationsClient
from storm_py.drpc.server import DRPCServer
from storm_py.errors import ConfigError
from storm_py.nimbus.daemon import NimbusDaemon
from storm_py.node.tls import client_context, server_context

pytestmark = pytest.mark.timeout(120)

TOKEN = "tls-test-token"


@pytest.fixture(scope="module")
def tls_conf(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return make_dev_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def nimbus(tls_conf: dict[str, Any], tmp_path: Path) -> Iterator[NimbusDaemon]:
    daemon = NimbusDaemon({"nimbus.thrift.port": 0, "nimbus.auth.token": TOKEN, "storm.local.dir": str(tmp_path),
                           **tls_conf}, MemoryStorage())
    daemon.start()
    thread = threading.Thread(target=daemon.run, daemon=True)
    thread.start()
    try:
        yield daemon
    finally:
        daemon.stop()
        thread.join(10)


def client_conf(port: int, **extra: Any) -> dict[str, Any]:
    return {"nimbus.seeds": [f"127.0.0.1:{port}"], "nimbus.auth.token": TOKEN, "storm.nimbus.retry.times": 0,
            **extra}


def test_a_client_verifying_against_the_ca_is_served(nimbus: NimbusDaemon, tls_conf: dict[str, Any]) -> None:
    client = NimbusClient(client_conf(nimbus.port, **tls_conf))
    assert client._base("x").startswith("https://")
    assert client.cluster_summary()["supervisors"] == 0
    # "localhost" is in the certificate too
    request = urllib.request.Request(f"https://localhost:{nimbus.port}/api/v1/nimbus/summary",
                                     headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10, context=client_context(tls_conf)) as reply:
        assert reply.status == 200


def test_plain_http_gets_no_answer(nimbus: NimbusDaemon) -> None:
    with socket.create_connection(("127.0.0.1", nimbus.port), timeout=10) as sock:
        sock.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{nimbus.port}\r\nConnection: close\r\n\r\n".encode())
        received = b""
        try:
            while chunk := sock.recv(4096):
                received += chunk
        except (ConnectionResetError, TimeoutError):
            pass
    assert not received.startswith(b"HTTP/")
    plain = NimbusClient(client_conf(nimbus.port))
    with pytest.raises(Exception, match="cannot reach nimbus"):
        plain.cluster_summary()


def test_an_untrusted_certificate_is_refused(nimbus: NimbusDaemon, tmp_path: Path) -> None:
    other_ca = make_dev_tls(tmp_path / "other")  # a CA that did not sign the server's certificate
    for context in (client_context(other_ca), ssl.create_default_context()):
        with pytest.raises(urllib.error.URLError) as refused:
            urllib.request.urlopen(f"https://127.0.0.1:{nimbus.port}/health", timeout=10, context=context)
        assert isinstance(refused.value.reason, ssl.SSLCertVerificationError)


def test_the_drpc_ports_speak_tls(tls_conf: dict[str, Any]) -> None:
    server = DRPCServer({"nimbus.auth.token": TOKEN, "drpc.port": 0, "drpc.invocations.port": 0,
                         "drpc.http.port": 0, **tls_conf})
    server.start()
    try:
        client = DRPCInvocationsClient("127.0.0.1", server.invocations_port, TOKEN, tls=client_context(tls_conf))
        assert client.fetch("nothing") == []
        client.close()
    finally:
        server.stop()


def test_tls_without_a_certificate_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"storm\.tls\.cert"):
        server_context({"storm.tls.enabled": True, "storm.tls.key": "/nope.pem"})
    with pytest.raises(ConfigError, match=r"storm\.tls\.cert"):
        server_context({"storm.tls.enabled": True, "storm.tls.cert": "/nope.pem", "storm.tls.key": "/nope.pem"})
    assert server_context({}) is None and client_context({}) is None


def test_the_dev_ca_keeps_its_keys_private(tls_conf: dict[str, Any]) -> None:
    key = Path(tls_conf["storm.tls.key"])
    assert key.stat().st_mode & 0o077 == 0 and (key.parent / "ca-key.pem").stat().st_mode & 0o077 == 0
