"""The worker's memory under attack by its multilang processes: three bolts' processes each write 64 MiB that the
worker must not hold (a stderr line, a JSON message without its end, a msgpack bin declared 2 GiB long); the
worker's peak resident memory stays within a few MiB of the same topology's without the attacks, and each attack
is its component's error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.multilang.local_topologies import ATTACKS

ROOT = Path(__file__).resolve().parents[2]
#: a wrapper whose only child is the command: its children's peak resident memory is the command's (and what the
#: command waited for: the components' processes), in KiB
_PEAK = ("import resource, subprocess, sys; run = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
         "sys.stdout.write(run.stdout); sys.stderr.write(run.stderr); "
         "print('peak', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(run.returncode)")
LIMITS = ["-c", "topology.multilang.max.message.bytes=1048576", "-c", "topology.multilang.max.stderr.line.bytes=65536"]


def _run(function: str, markers: Path) -> tuple[int, str]:
    """``storm-py local`` of ``function`` for a few seconds: its peak memory (KiB) and its output."""
    markers.mkdir()
    run = subprocess.run(
        [sys.executable, "-c", _PEAK, sys.executable, "-m", "storm_py", "local",
         f"tests.multilang.local_topologies:{function}", "--ttl", "6", *LIMITS],
        cwd=ROOT, capture_output=True, text=True, timeout=180, env={**os.environ, "HOSTILE_MARKERS": str(markers)},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    peak = int(run.stdout.rsplit("peak ", 1)[1])
    return peak, run.stdout


@pytest.mark.slow
def test_attacks_by_multilang_processes_leave_the_workers_memory_bounded(tmp_path: Path) -> None:
    base, quiet = _run("unattacked", tmp_path / "quiet")
    peak, out = _run("attacked", tmp_path / "attacked")
    assert "last error" not in quiet
    for name, _, _ in ATTACKS:
        assert f"last error of {name}: " in out, out[-3000:]
    assert "longer than 65536 bytes (topology.multilang.max.stderr.line.bytes)" in out
    assert out.count("longer than 1048576 bytes (topology.multilang.max.message.bytes)") == 2
    # 3 x 64 MiB written; held: at most a message's and a line's bound, and a pipe read, per process
    assert peak - base < 24 * 1024, f"peak {peak // 1024} MiB under attack, {base // 1024} MiB without"
