"""docs/REFERENCE.md lists every public name of storm_py: the top-level package's and each subpackage's __all__."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "REFERENCE.md"


def _public_names() -> dict[str, list[str]]:
    """``{package: __all__}`` of storm_py and each of its subpackages that declares one, read from the source."""
    out: dict[str, list[str]] = {}
    for init in [REPO / "storm_py" / "__init__.py", *sorted((REPO / "storm_py").glob("*/__init__.py"))]:
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                and isinstance(node.value, (ast.List, ast.Tuple))
            ):
                package = ".".join(init.parent.relative_to(REPO).parts)
                out[package] = [str(e.value) for e in node.value.elts if isinstance(e, ast.Constant)]
    return out


def test_reference_lists_every_public_name():
    listed = set(re.findall(r"^- \[`(\w+)`\]", REFERENCE.read_text(encoding="utf-8"), re.M))
    public = _public_names()
    assert "storm_py" in public and len(public) > 10
    missing = sorted(f"{package}.{name}" for package, names in public.items() for name in names if name not in listed)
    assert not missing, f"public names docs/REFERENCE.md does not list (add one line each): {missing}"


def test_reference_links_each_name_to_a_module_defining_or_exporting_it():
    wrong = []
    text = REFERENCE.read_text(encoding="utf-8")
    for name, target in re.findall(r"^- \[`(\w+)`\]\(\.\./([\w/.]+\.py)\)", text, re.M):
        source = (REPO / target).read_text(encoding="utf-8")
        if not re.search(rf"^(?:class |def |type )?{name}\b|^\s*(?:class|def) {name}\b", source, re.M):
            wrong.append(f"{name} -> {target}")
    assert not wrong, f"names linked to a module that does not define them: {wrong}"
