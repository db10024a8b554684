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


#: a bare document name anywhere in the text (`NOTES.md`, "see GUIDE.md"): a file of this repository or nothing
_BARE_DOC = re.compile(r"(?<![\w./-])([\w-]+\.(?:md|rst))\b")


def _documents() -> list[Path]:
    docs = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    bench = REPO / "BENCHMARKS.md"
    return docs + ([bench] if bench.exists() else []) + sorted((REPO / "storm_py").rglob("*.py"))


def _all_texts() -> list[Path]:
    """The documents, plus the tests', examples' and benchmarks' sources (this file's patterns aside)."""
    more = [p for d in ("tests", "examples", "bench") for p in sorted((REPO / d).rglob("*.py")) + sorted(
        (REPO / d).rglob("*.md"))]
    return _documents() + [p for p in more if p != Path(__file__).resolve()]


def bare_doc_names_missing(text: str, doc: Path) -> list[str]:
    """Bare document names in ``text`` that name no file beside ``doc``, at the repository's root or in docs/."""
    missing = []
    for m in _BARE_DOC.finditer(text):
        name = m.group(1)
        if not any((base / name).is_file() for base in (doc.parent, REPO, REPO / "docs")):
            missing.append(name)
    return missing


def test_bare_document_names_exist_in_the_repository():
    """A document named without a path (`API.md`, a contract kept elsewhere) must still be a file of this
    repository: the project cites only itself."""
    outside = [
        f"{doc.relative_to(REPO)}: {name}"
        for doc in _all_texts()
        for name in bare_doc_names_missing(doc.read_text(encoding="utf-8"), doc)
    ]
    assert not outside, "documents named that are not in the repository:\n" + "\n".join(outside)


def test_the_bare_name_check_sees_backticks_and_prose():
    doc = REPO / "docs" / "DESIGN.md"
    missing_name = "NO" + "SUCH.md"
    assert bare_doc_names_missing(f"see `{missing_name}` and {missing_name}, not docs/DESIGN.md", doc) == [
        missing_name, missing_name
    ]
    assert bare_doc_names_missing("DESIGN.md, README.md and [x](REFERENCE.md)", doc) == []


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
