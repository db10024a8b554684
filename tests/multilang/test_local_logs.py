"""``storm-py local`` shows what shell components log at INFO, with the command's default --log-level."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.multilang.local_topologies import SENTENCES

ROOT = Path(__file__).resolve().parents[2]


def test_storm_py_local_shows_a_shell_components_log_at_info_by_default() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "storm_py", "local", "tests.multilang.local_topologies:sentences", "--ttl", "5"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"storm_py.multilang.sentences: all {SENTENCES} sentences acked" in run.stderr, run.stderr[-2000:]
    assert "done: emitted" in run.stdout
