"""Fixtures of the cluster tests: wheels built once per session, dev clusters stopped at teardown."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.harness import APPS, DevClusterProcess, build_wheel, word_count_project


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The test topologies as wheels: ``wordcount`` (examples/word_count.py), ``ackcheck``, ``badapps``."""
    out = tmp_path_factory.mktemp("wheels")
    return {
        "wordcount": build_wheel(word_count_project(out), out),
        "ackcheck": build_wheel(APPS / "ackcheck", out),
        "badapps": build_wheel(APPS / "badapps", out),
    }


def zk_root_conf(request: pytest.FixtureRequest) -> dict[str, Any]:
    """State roots of one test on the shared ZooKeeper."""
    name = "".join(c if c.isalnum() else "_" for c in request.node.name)[:50]
    base = f"/tests/{name}-{uuid.uuid4().hex[:8]}"
    return {"storm.zookeeper.root": f"{base}/storm", "transactional.zookeeper.root": f"{base}/transactional"}


@pytest.fixture
def dev_cluster(tmp_path: Path) -> Iterator[Callable[..., DevClusterProcess]]:
    """Start dev clusters (``storm-py dev-cluster``) under this test's tmp dir; all stopped at teardown."""
    started: list[DevClusterProcess] = []

    def start(name: str = "cluster", **kw: Any) -> DevClusterProcess:
        cluster = DevClusterProcess(tmp_path / name, **kw)
        started.append(cluster)
        cluster.start()
        return cluster

    yield start
    for cluster in reversed(started):
        cluster.stop()
