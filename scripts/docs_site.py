"""The documentation site's build hooks (MkDocs): the README as the home page and BENCHMARKS.md as the benchmarks
page, their links rewritten from the repository's layout to the site's.

The repository keeps one copy of each text: README.md and BENCHMARKS.md live at its root, where a reader of the
repository finds them, and the site takes them from there instead of a second copy under ``docs/``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[1]
#: site page -> the repository file it is made from
GENERATED = {"index.md": "README.md", "benchmarks/index.md": "BENCHMARKS.md"}


def _site_links(page: str, markdown: str) -> str:
    """Links written for the repository's layout, rewritten for ``page``'s place in the site."""
    if page == "index.md":
        return re.sub(r"\]\(docs/", "](", markdown)
    if page == "benchmarks/index.md":
        return re.sub(r"\]\(docs/benchmarks/", "](", markdown)
    if page.startswith("benchmarks/"):
        return markdown.replace("](../../BENCHMARKS.md)", "](index.md)")
    return re.sub(r"\]\(\.\./README\.md", "](index.md", markdown)


def on_files(files: Files, config: Any) -> Files:
    for page, source in GENERATED.items():
        files.append(File.generated(config, page, content=(REPO / source).read_text(encoding="utf-8")))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    return _site_links(page.file.src_uri, markdown)
