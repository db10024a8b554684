"""``storm-py dev-cluster --tls``: every HTTP endpoint behind the throwaway CA, and nothing for the user to do —
a submit (supervisors fetch the package over TLS), a DRPC call (the topology's spout and bolt talk TLS to the
DRPC server), worker logs read from the log viewers, and the UI's files; plain HTTP gets no answer."""

from __future__ import annotations

import shutil
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.node.tls import client_context
from tests.cluster.harness import REPO, DevClusterProcess

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def tls_cluster(tmp_path: Path) -> Iterator[DevClusterProcess]:
    cluster = DevClusterProcess(tmp_path / "cluster", supervisors=1, tls=True)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def test_a_tls_dev_cluster_runs_drpc_and_serves_logs_with_no_extra_step(tls_cluster: DevClusterProcess,
                                                                         tmp_path: Path) -> None:
    url = tls_cluster.nimbus_url()
    assert url.startswith("https://127.0.0.1:")
    conf = tls_cluster.client_conf()
    project = tmp_path / "project"
    shutil.copytree(REPO / "examples", project / "examples")
    tls_cluster.cli("submit", str(project), "examples.basic_drpc:build", "--name", "exclamation")
    reply = tls_cluster.cli("drpc-client", "exclamation", "hello", "--timeout", "120")
    assert reply.stdout.splitlines() == ["hello!"]
    logs = tls_cluster.cli("logs", "exclamation", "-c", f"storm.log.dir={tmp_path / 'elsewhere'}").stdout
    assert "==> " in logs and " on https://" in logs

    context = client_context(conf)
    with urllib.request.urlopen(url + "/index.html", timeout=30, context=context) as page:
        assert page.status == 200
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        try:
            answer = sock.recv(100)
        except (ConnectionResetError, TimeoutError):
            answer = b""
    assert not answer.startswith(b"HTTP/")
    with pytest.raises(urllib.error.URLError) as untrusted:
        urllib.request.urlopen(url + "/health", timeout=30, context=ssl.create_default_context())
    assert isinstance(untrusted.value.reason, ssl.SSLCertVerificationError)
