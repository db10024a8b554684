"""storm_py's source files parsed once per test run, for the tests that read the code itself."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "storm_py"


@functools.cache
def parsed_sources() -> tuple[tuple[str, str, ast.Module], ...]:
    """``(repo-relative path, text, tree)`` of every module of storm_py, in path order."""
    out = []
    for p in sorted(PACKAGE.rglob("*.py")):
        text = p.read_text(encoding="utf-8")
        out.append((str(p.relative_to(REPO)), text, ast.parse(text)))
    return tuple(out)
