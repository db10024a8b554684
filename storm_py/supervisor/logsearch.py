"""This module owns searching log files: Storm's log viewer ``search`` (one file) and ``deepSearch`` (a topology's
worker logs on one host), as plain calls over files the log viewer has already vetted.

A match is reported with its byte offset and up to :data:`CONTEXT_BYTES` bytes before and after it (Storm's
``beforeString``/``matchString``/``afterString``); at most ``num-matches`` are returned per file, and
``nextByteOffset`` says where the following page starts when more matches follow.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Any

#: Bytes of context on each side of a match.
CONTEXT_BYTES = 128
#: Longest search string accepted, in bytes (Storm's limit).
MAX_SEARCH_BYTES = 1024
#: Most matches one request may ask for.
MAX_MATCHES = 1000


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def search_file(path: Path, needle: bytes, start: int, limit: int) -> tuple[list[dict[str, Any]], int | None]:
    """Up to ``limit`` matches of ``needle`` in ``path`` at or after byte ``start``, and the offset of the next
    page (None when no match follows).  The file is opened without following links."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        size = f.seek(0, 2)
        if size == 0 or start >= size:
            return [], None
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            matches: list[dict[str, Any]] = []
            at = mm.find(needle, start)
            while at >= 0 and len(matches) < limit:
                end = at + len(needle)
                matches.append({
                    "byteOffset": at,
                    "beforeString": _text(mm[max(0, at - CONTEXT_BYTES):at]),
                    "matchString": _text(mm[at:end]),
                    "afterString": _text(mm[end:end + CONTEXT_BYTES]),
                })
                at = mm.find(needle, end)
            return matches, (at if at >= 0 else None)
