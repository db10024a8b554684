"""The log viewer against links planted in workers-artifacts: nothing outside it is ever served."""

from __future__ import annotations

from pathlib import Path

import pytest

from storm_py.node.http_api import BadRequestError, NotFoundError
from storm_py.supervisor.logviewer import LogFiles


@pytest.fixture
def files(tmp_path: Path) -> LogFiles:
    root = tmp_path / "workers-artifacts"
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "worker.log").write_text("SECRET\n", encoding="utf-8")
    (secret / "6700").mkdir()
    (secret / "6700" / "worker.log").write_text("SECRET\n", encoding="utf-8")
    good = root / "wc-1-1" / "6700"
    good.mkdir(parents=True)
    (good / "worker.log").write_text("hello\n", encoding="utf-8")
    (root / "wc-1-1" / "6701").mkdir()
    (root / "wc-1-1" / "6701" / "worker.log").symlink_to(secret / "worker.log")  # a file link
    (root / "wc-1-1" / "6702").symlink_to(secret / "6700")  # a port directory link
    (root / "evil-1-1").symlink_to(secret)  # a topology directory link
    (good / "worker.log.err").symlink_to("/etc/passwd")
    return LogFiles(root)


def test_links_are_refused_and_never_listed(files: LogFiles) -> None:
    assert files.read("wc-1-1/6700/worker.log")["data"] == "hello\n"
    for rel in ("wc-1-1/6701/worker.log", "wc-1-1/6702/worker.log", "evil-1-1/6700/worker.log",
                "wc-1-1/6700/worker.log.err"):  # fmt: skip
        with pytest.raises((BadRequestError, NotFoundError)) as info:
            files.read(rel)
        assert "SECRET" not in str(info.value) and "root:" not in str(info.value)
    assert [f["file"] for f in files.files("wc-1-1")] == ["wc-1-1/6700/worker.log"]
    assert files.files("evil-1-1") == []


@pytest.mark.parametrize("rel", ["../outside/worker.log", "wc-1-1/../../outside/worker.log", "/etc/passwd",
                                 "wc-1-1/6700/../../../outside/worker.log", "wc-1-1/6700/passwd"])  # fmt: skip
def test_paths_leaving_the_directory_are_refused(files: LogFiles, rel: str) -> None:
    with pytest.raises(BadRequestError):
        files.read(rel)
