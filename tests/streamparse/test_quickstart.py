"""``storm-py streamparse quickstart`` writes the project ``sparse quickstart`` writes (without Leiningen), and
``storm-py streamparse run`` in it shows the components' log messages by default, as ``sparse run`` does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


def storm_py(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``storm-py ARGS`` as a user types it (no --log-level), root or not, with no LEIN_ROOT."""
    env = {k: v for k, v in os.environ.items() if k != "LEIN_ROOT"}
    return subprocess.run([sys.executable, "-m", "storm_py", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def test_quickstart_writes_the_project_sparse_quickstart_writes(wordcount_project: Path, tmp_path: Path) -> None:
    made = storm_py("streamparse", "quickstart", "wordcount", "-d", str(tmp_path), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert tree(tmp_path / "wordcount") == tree(wordcount_project)
    assert {"project.clj", "config.json", "src/bolts/wordcount.py", "src/spouts/words.py",
            "topologies/wordcount.py", "virtualenvs/wordcount.txt"} <= set(tree(tmp_path / "wordcount"))
    assert "storm-py streamparse run" in made.stdout
    again = storm_py("streamparse", "quickstart", "wordcount", "-d", str(tmp_path), cwd=tmp_path)
    assert again.returncode != 0 and "already exists" in again.stderr


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_run_in_a_quickstart_project_prints_the_count_bolts_log_by_default(tmp_path: Path) -> None:
    assert storm_py("streamparse", "quickstart", "wordcount", cwd=tmp_path).returncode == 0
    run = storm_py("streamparse", "run", "wordcount", "-t", "15", cwd=tmp_path / "wordcount", timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    assert re.search(r"INFO storm_py\.multilang\.count_bolt: .*counted \[1,000\] words", run.stderr), run.stderr[-2000:]
    assert "done: emitted" in run.stdout
