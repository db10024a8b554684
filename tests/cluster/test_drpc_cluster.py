"""Acceptance: DRPC topologies (storm-starter's reach and exclamation) packaged as a wheel, submitted to a
`storm-py dev-cluster`, answering through `storm-py drpc-client` and the DRPC server's HTTP endpoint."""

from __future__ import annotations

import shutil
import urllib.request
from pathlib import Path

import pytest

from tests.cluster.harness import REPO, build_wheel

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(300)]


def drpc_project(root: Path) -> Path:
    """A project packaging examples/reach.py and examples/basic_drpc.py as modules of ``examples``."""
    project = root / "drpcexamples"
    (project / "examples").mkdir(parents=True)
    for name in ("reach.py", "basic_drpc.py"):
        shutil.copy(REPO / "examples" / name, project / "examples" / name)
    (project / "examples" / "__init__.py").write_text('"""storm_py examples."""\n', encoding="utf-8")
    (project / "pyproject.toml").write_text(
        "[build-system]\nrequires = [\"setuptools>=64\", \"wheel\"]\nbuild-backend = \"setuptools.build_meta\"\n\n"
        "[project]\nname = \"drpcexamples\"\nversion = \"0.1.0\"\n\n[tool.setuptools]\npackages = [\"examples\"]\n",
        encoding="utf-8",
    )
    return project


def test_remote_drpc_topologies_answer_through_drpc_client_and_http(dev_cluster, tmp_path: Path) -> None:
    wheel = build_wheel(drpc_project(tmp_path), tmp_path)
    cluster = dev_cluster(supervisors=1)
    conf = cluster.client_conf()
    assert conf["drpc.servers"] == ["127.0.0.1"]
    assert f"drpc: 127.0.0.1:{conf['drpc.port']} (HTTP: http://127.0.0.1:{conf['drpc.http.port']}/drpc)" in (
        cluster.output())
    cluster.cli("submit", str(wheel), "examples.reach:build", "--name", "reach")
    cluster.cli("submit", str(wheel), "examples.basic_drpc:build", "--name", "exclamation")
    # a request waits at the server until the topology's spout fetches it: no polling needed
    reach = cluster.cli("drpc-client", "reach", "foo.com/blog/1", "engineering.twitter.com/blog/5", "nobody.com",
                        "--timeout", "120")
    assert reach.stdout.splitlines() == ["16", "14", "0"]
    assert cluster.cli("drpc-client", "exclamation", "hello").stdout.splitlines() == ["hello!"]
    req = urllib.request.Request(f"http://127.0.0.1:{conf['drpc.http.port']}/drpc/exclamation/hello%20world")
    req.add_header("Authorization", f"Bearer {conf['nimbus.auth.token']}")
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert (resp.status, resp.read()) == (200, b"hello world!")
    post = urllib.request.Request(f"http://127.0.0.1:{conf['drpc.http.port']}/drpc/reach", data=b"foo.com/blog/1",
                                  method="POST")
    post.add_header("Authorization", f"Bearer {conf['nimbus.auth.token']}")
    with urllib.request.urlopen(post, timeout=60) as resp:
        assert resp.read() == b"16"
    refused = cluster.cli("drpc-client", "exclamation", "x", "-c", "nimbus.auth.token=wrong", check=False)
    assert refused.returncode != 0 and "token" in refused.stderr
