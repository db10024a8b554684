"""BENCHMARKS.md stays one page of current figures: short, every section with the command that reproduces it."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "BENCHMARKS.md"
#: a command that reproduces a figure: a bench script, a timed test or a build script, as it is run
_COMMAND = re.compile(r"python(?: -P)? bench/[\w/]+\.py|python -m pytest (?:-\S+ )*tests/[\w/]+\.py|scripts/[\w-]+\.sh")


def sections(text: str) -> dict[str, str]:
    """The page's ``## `` sections by title."""
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_page_is_short() -> None:
    assert len(PAGE.read_text(encoding="utf-8").splitlines()) < 400


def test_every_section_with_figures_names_its_command() -> None:
    missing = [
        title for title, body in sections(PAGE.read_text(encoding="utf-8")).items()
        if "|" in body and not _COMMAND.search(body)
    ]
    assert not missing, f"sections of BENCHMARKS.md with figures and no bench command: {missing}"


def test_every_section_with_figures_links_its_history_and_the_history_exists() -> None:
    for title, body in sections(PAGE.read_text(encoding="utf-8")).items():
        if "|" not in body:
            continue
        links = re.findall(r"\]\((docs/benchmarks/[\w-]+\.md)\)", body)
        assert links, f"{title}: no link to its history under docs/benchmarks/"
        assert all((REPO / link).is_file() for link in links), f"{title}: {links}"


def test_the_command_check_sees_a_section_without_one() -> None:
    page = "## A\n| x | y |\n\n    python bench/a.py\n## B\n| x | y |\n"
    assert [t for t, b in sections(page).items() if not _COMMAND.search(b)] == ["B"]
