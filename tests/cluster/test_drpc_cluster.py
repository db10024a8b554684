"""Acceptance: DRPC topologies (storm-starter's reach and exclamation) packaged as a wheel, submitted to a
`storm-py dev-cluster`, answering through `storm-py drpc-client` and the DRPC server's HTTP endpoint."""

from __future__ import annotations

import shutil
import urllib.request
from pathlib import Path

import pytest

from storm_py.clock import wait_until
from tests.cluster.harness import REPO, build_wheel

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(300)]


def drpc_project(root: Path) -> Path:
    """A project packaging examples/reach.py, basic_drpc.py and trident_word_count.py as modules of ``examples``."""
    project = root / "drpcexamples"
    (project / "examples").mkdir(parents=True)
    for name in ("reach.py", "basic_drpc.py", "trident_word_count.py"):
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


def test_the_trident_word_count_answers_its_drpc_query_through_drpc_client_and_http(
    dev_cluster, tmp_path: Path
) -> None:
    """The Trident tutorial's query on a cluster: ``words "cat the dog jumped"`` answers Storm's ``[[6]]``."""
    wheel = build_wheel(drpc_project(tmp_path), tmp_path)
    cluster = dev_cluster(supervisors=1)
    conf = cluster.client_conf()
    cluster.cli("submit", str(wheel), "examples.trident_word_count:build_remote", "--name", "twc",
                "-c", "topology.workers=1", "-c", "topology.max.spout.pending=3")
    answers: list[str] = []

    def counted() -> bool:  # the query may run before the last sentence's batch committed: ask until it has
        answers.append(cluster.cli("drpc-client", "words", "cat the dog jumped", "--timeout", "60").stdout)
        return answers[-1].splitlines() == ["[[6]]"]

    wait_until(counted, 120, interval=0.5, what="the exact count answered")
    assert set(answers) <= {"[[0]]\n", "[[1]]\n", "[[2]]\n", "[[3]]\n", "[[4]]\n", "[[5]]\n", "[[6]]\n"}
    assert cluster.cli("drpc-client", "words", "the", "moon").stdout.splitlines() == ["[[5]]", "[[1]]"]
    req = urllib.request.Request(f"http://127.0.0.1:{conf['drpc.http.port']}/drpc/words/cat%20the%20dog%20jumped")
    req.add_header("Authorization", f"Bearer {conf['nimbus.auth.token']}")
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert (resp.status, resp.read()) == (200, b"[[6]]")
    post = urllib.request.Request(f"http://127.0.0.1:{conf['drpc.http.port']}/drpc/words", data=b"to be",
                                  method="POST")
    post.add_header("Authorization", f"Bearer {conf['nimbus.auth.token']}")
    with urllib.request.urlopen(post, timeout=60) as resp:
        assert resp.read() == b"[[5]]"
    cluster.cli("kill", "twc", "-w", "0")
