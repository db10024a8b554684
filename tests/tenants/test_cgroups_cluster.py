"""Workers in cgroups on a real dev cluster (root, this host's cgroups): a worker runs in its own cgroup, a bolt
growing past its 150 MiB is killed by the kernel and its errors name the limit, and the cgroups go with the
topology.  Every cgroup the test's supervisor made is removed at teardown, whatever happened."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.clock import wait_until
from storm_py.config.keys import setting
from storm_py.supervisor.cgroups import HIERARCHY_KEY, ROOT
from tests.cluster.harness import DevClusterProcess, build_wheel

HIERARCHY = Path(str(setting({}, HIERARCHY_KEY)))
MEMORY_ROOT = HIERARCHY / "memory" / ROOT
CPU_ROOT = HIERARCHY / "cpu" / ROOT

HOG = '''"""A bolt keeping 4 MB of every word it gets: it grows until something stops it."""

from typing import Any

from storm_py import Bolt, TopologyBuilder
from storm_py.testing import TestWordSpout


class Hog(Bolt):
    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.kept: list[bytearray] = []

    def execute(self, tup: Any) -> None:
        self.kept.append(bytearray(b"x") * 4_000_000)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def build(conf: Any = None) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("words", TestWordSpout())
    builder.set_bolt("hog", Hog()).shuffle_grouping("words")
    return builder.create_topology()
'''


def _hog_wheel(root: Path) -> Path:
    project = root / "hogs"
    (project / "hogs").mkdir(parents=True)
    (project / "hogs" / "__init__.py").write_text('"""A memory hog."""\n', encoding="utf-8")
    (project / "hogs" / "topology.py").write_text(HOG, encoding="utf-8")
    (project / "pyproject.toml").write_text(
        "[build-system]\nrequires = [\"setuptools>=64\", \"wheel\"]\nbuild-backend = \"setuptools.build_meta\"\n\n"
        "[project]\nname = \"hogs\"\nversion = \"0.1.0\"\n\n[tool.setuptools]\npackages = [\"hogs\"]\n",
        encoding="utf-8")
    return build_wheel(project, root)


def _supervisor_groups() -> set[Path]:
    return {p for root in (MEMORY_ROOT, CPU_ROOT) if root.is_dir() for p in root.iterdir() if p.is_dir()}


def _remove(group: Path) -> None:
    """Kill what still runs in ``group`` and remove it with its children."""
    for child in sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        _empty(child)
        child.rmdir()
    _empty(group)
    group.rmdir()


def _empty(group: Path) -> None:
    for pid in (group / "cgroup.procs").read_text(encoding="ascii").split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_until(lambda: not (group / "cgroup.procs").read_text(encoding="ascii").split(), 30, interval=0.1,
               what=f"the processes of {group} gone")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[DevClusterProcess]:
    """A dev cluster of one supervisor with its workers in cgroups; its cgroups are removed at teardown."""
    before = _supervisor_groups()
    dc = DevClusterProcess(tmp_path / "cluster", supervisors=1, conf={
        "storm.resource.isolation.plugin.enable": True, "storm.cgroup.memory.enforcement.enable": True})
    try:
        dc.start()
        yield dc
    finally:
        dc.stop()
        made = _supervisor_groups() - before
        for group in made:
            _remove(group)
        for root in (MEMORY_ROOT, CPU_ROOT):
            if root.is_dir() and not any(p.is_dir() for p in root.iterdir()):
                root.rmdir()


def test_a_worker_runs_in_its_cgroup_is_killed_by_the_kernel_past_its_limit_and_its_cgroup_goes(
        cluster: DevClusterProcess, tmp_path: Path) -> None:
    wheel = _hog_wheel(tmp_path / "wheels")
    cluster.cli("submit", str(wheel), "hogs.topology:build", "--name", "hog", "-c", "topology.workers=1",
                "-c", "topology.worker.max.heap.size.mb=150")
    artifacts = cluster.workdir / "logs" / "workers-artifacts"
    seen: list[tuple[int, Path]] = []  # (worker pid, its memory cgroup) while it runs

    def in_its_cgroup() -> bool:
        for meta_path in artifacts.glob("hog-*/*/worker.yaml"):
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            for group in MEMORY_ROOT.glob(f"*/{meta['worker-id']}"):
                try:
                    procs = (group / "cgroup.procs").read_text(encoding="ascii").split()
                except OSError:
                    continue  # already gone
                if str(meta["pid"]) in procs:
                    seen.append((int(meta["pid"]), group))
                    return True
        return False

    wait_until(in_its_cgroup, 90, interval=0.05, what="a worker of hog in its cgroup")
    pid, group = seen[0]
    assert (group / "memory.limit_in_bytes").read_text(encoding="ascii").strip() == str(150 * 1024 * 1024)
    assert str(pid) in (CPU_ROOT / group.parent.name / group.name / "cgroup.procs").read_text(encoding="ascii")

    limit = "killed by the kernel: its memory passed the limit of its cgroup"
    named = "topology.worker.max.heap.size.mb = 150 MiB"

    def errors_name_the_limit() -> bool:
        out = cluster.cli("get-errors", "hog", check=False).stdout
        return limit in out and named in out and '"hog"' in out

    wait_until(errors_name_the_limit, 90, interval=0.5, what="the hog's errors naming its cgroup's limit")
    cluster.cli("kill", "hog", "-w", "0")
    workers = group.parent

    def gone() -> bool:
        return not any(p.is_dir() for root in (MEMORY_ROOT, CPU_ROOT) for p in (root / workers.name).glob("*"))

    wait_until(gone, 60, interval=0.25, what="the hog's cgroups removed after its kill")
