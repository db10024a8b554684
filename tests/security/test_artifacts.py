"""Worker logs cannot fill the disk: rotation by size while a process keeps appending, and cleanup of the
artifacts of workers gone for longer than logviewer.cleanup.age.mins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.supervisor.artifacts import expired, file_limit, maintain

MB = 1024 * 1024
#: About 2 MB/s of output, without end.
CHATTY = ("import sys, time\nwhile True:\n"
          "    sys.stdout.write('x' * 9999 + '\\n'); sys.stdout.flush(); time.sleep(0.005)")


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


def test_a_chatty_worker_stays_under_the_limit(tmp_path: Path) -> None:
    """A process printing without end into worker.log.out (append mode, as the launcher opens it)."""
    root = tmp_path / "workers-artifacts"
    worker = root / "chatty-1-1" / "6700"
    worker.mkdir(parents=True)
    conf = {"logviewer.max.per.worker.logs.size.mb": 0.8}  # 100 KiB per file (four files, a backup each)
    limit = file_limit(conf)
    assert limit == int(0.8 * MB / 8)
    with (worker / "worker.log.out").open("ab") as out:
        writer = subprocess.Popen([sys.executable, "-c", CHATTY], stdout=out)
    try:
        biggest = 0
        for _ in range(40):
            wait_until(lambda: (worker / "worker.log.out").stat().st_size > limit, 10.0, interval=0.01,
                       what="the worker to write past the limit")  # fmt: skip
            maintain(root, conf, live={("chatty-1-1", 6700)}, now=0.0)
            biggest = max(biggest, dir_bytes(worker))
        # between two rounds a file grows past its share; a round brings the directory back near it (the copy
        # holds what the writer added while it was made)
        assert biggest <= 2 * limit + 256 * 1024, biggest
        assert (worker / "worker.log.out.1").stat().st_size > limit
    finally:
        writer.kill()
        writer.wait()
    # The writer's later output landed at the start of the truncated file, not after a hole.
    with (worker / "worker.log.out").open("rb") as f:
        assert f.read(1) in (b"x", b"")


def test_artifacts_of_gone_workers_are_removed_after_the_age(tmp_path: Path) -> None:
    root = tmp_path / "workers-artifacts"
    for topo, port in (("old-1-1", 6700), ("old-1-1", 6701), ("live-1-1", 6700), ("recent-1-1", 6700)):
        (root / topo / str(port)).mkdir(parents=True)
        (root / topo / str(port) / "worker.log").write_text("log\n", encoding="utf-8")
    (root / "elsewhere").mkdir()
    (root / "old-1-1" / "6700" / "link").symlink_to(root / "elsewhere")
    now = SYSTEM_CLOCK.wall()
    hour_ago = now - 3600
    for d in [root / "old-1-1" / "6700", root / "old-1-1" / "6701", root / "live-1-1" / "6700"]:
        for f in [d / "worker.log", d]:
            os.utime(f, (hour_ago, hour_ago))
    conf = {"logviewer.cleanup.age.mins": 30}
    live = {("live-1-1", 6700)}
    assert [p.relative_to(root).as_posix() for p in expired(root, live, 1800, now)] == ["old-1-1/6700", "old-1-1/6701"]
    maintain(root, conf, live, now)
    assert not (root / "old-1-1").exists()  # both gone, then the emptied topology directory
    assert (root / "live-1-1" / "6700" / "worker.log").exists() and (root / "recent-1-1" / "6700").exists()
    assert (root / "elsewhere").exists()  # a link inside a removed directory is removed, not followed
