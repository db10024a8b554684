"""Docs and docstrings point only at files that exist inside the repository (a clone is self-contained)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: a relative path in backticks or a markdown link target: `../x/y.md`, (docs/DESIGN.md), `bench/zmq_ceiling.py`
_PATH = re.compile(r"(?:`|\]\()((?:\.\./|\./|/)?[\w.-]+(?:/[\w.-]+)+\.(?:md|py|yaml|yml|toml|cfg|txt|sh))(?:`|\))")
#: the README's template topology project (a user's repository, not this one)
EXAMPLE_PROJECT = "my_topology/"
#: a template path whose file name is the placeholder NAME (a streamparse project's `topologies/NAME.py`)
_TEMPLATE = re.compile(r"(?:^|/)NAME\.")


def _documents() -> list[Path]:
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    bench = REPO / "BENCHMARKS.md"
    return docs + ([bench] if bench.exists() else []) + sorted((REPO / "storm_py").rglob("*.py"))


def test_links_stay_inside_the_repository():
    outside = []
    for doc in _documents():
        text = doc.read_text(encoding="utf-8")
        for m in _PATH.finditer(text):
            target = m.group(1)
            if target.startswith("/"):
                continue  # a path on a deployed host or in a container, not a file of this repository
            if target.startswith(EXAMPLE_PROJECT) or _TEMPLATE.search(target):
                continue
            candidates = [(base / target).resolve() for base in (doc.parent, REPO, REPO / "storm_py")]
            if not any(REPO in c.parents and c.exists() for c in candidates):
                outside.append(f"{doc.relative_to(REPO)}: {target}")
    assert not outside, "links to files outside the repository (or missing):\n" + "\n".join(outside)
