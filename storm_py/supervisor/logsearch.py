"""This module owns searching log files: Storm's log viewer ``search`` (one file) and ``deepSearch`` (a topology's
worker logs on one host), as plain calls over files the log viewer has already vetted.

A match is reported with its byte offset and up to :data:`CONTEXT_BYTES` bytes before and after it (Storm's
``beforeString``/``matchString``/``afterString``); at most ``num-matches`` are returned per file, and
``nextByteOffset`` says where the following page starts when more matches follow.

A file is read in chunks of :data:`CHUNK_BYTES` with plain reads, never mapped: the supervisor rotates a log by
truncating it in place (:mod:`storm_py.supervisor.artifacts`), and a mapped file shrinking under a search kills
the process (``SIGBUS``); a read just ends early.  The search stops at the size the file had when it began.
A whole reply is bounded too: every match is charged its JSON size to a :class:`ReplyBudget`
(``logviewer.max.search.reply.bytes``), and the search stops, with ``nextByteOffset`` at the first match left
out, when the next one would overdraw it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Bytes of context on each side of a match.
CONTEXT_BYTES = 128
#: Longest search string accepted, in bytes (Storm's limit).
MAX_SEARCH_BYTES = 1024
#: Most matches one request may ask for (per file).
MAX_MATCHES = 1000
#: Bytes read from a log at a time.
CHUNK_BYTES = 1 << 20


class ReplyBudget:
    """The bytes of matches one reply may still carry; the first match is always granted, so a page moves on."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0
        self._refused = False

    def take(self, cost: int) -> bool:
        """Charge ``cost`` bytes if they fit (or nothing was charged yet); False, and exhausted, if not."""
        if self.spent and self.spent + cost > self.limit:
            self._refused = True
            return False
        self.spent += cost
        return True

    def exhausted(self) -> bool:
        """Whether a match was refused: the reply is full."""
        return self._refused


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _match(buf: bytes, at: int, needle: bytes, offset: int, link: Callable[[int], str]) -> dict[str, Any]:
    end = at + len(needle)
    return {
        "byteOffset": offset,
        "beforeString": _text(buf[max(0, at - CONTEXT_BYTES):at]),
        "matchString": _text(buf[at:end]),
        "afterString": _text(buf[end:end + CONTEXT_BYTES]),
        "logviewerURL": link(offset),
    }


def search_file(
    path: Path, needle: bytes, start: int, limit: int, budget: ReplyBudget, link: Callable[[int], str],
) -> tuple[list[dict[str, Any]], int | None]:
    """Up to ``limit`` matches of ``needle`` in ``path`` at or after byte ``start`` (fewer when ``budget`` runs
    out), and the offset of the next page (None when no match follows); ``link(offset)`` is a match's
    ``logviewerURL``.  The file is opened without following links and read in chunks."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb", buffering=0) as f:
        size = f.seek(0, 2)
        if size == 0 or start >= size or not needle:
            return [], None
        base = f.seek(max(0, start - CONTEXT_BYTES))  # the file offset of buf[0]
        left = size - base  # bytes still to read of the file as it was
        buf = b""
        pos = start - base  # where in buf the next match may begin
        matches: list[dict[str, Any]] = []
        while True:
            at = buf.find(needle, pos)
            if at >= 0 and (left == 0 or at + len(needle) + CONTEXT_BYTES <= len(buf)):
                if len(matches) >= limit:
                    return matches, base + at
                match = _match(buf, at, needle, base + at, link)
                if not budget.take(len(json.dumps(match)) + 2):  # and the ", " before it
                    return matches, base + at
                matches.append(match)
                pos = at + len(needle)
                continue
            if left == 0:
                return matches, None
            # read on, keeping the context of the earliest match still possible
            earliest = at if at >= 0 else max(pos, len(buf) - len(needle) + 1)
            keep = max(0, earliest - CONTEXT_BYTES)
            buf, base, pos = buf[keep:], base + keep, earliest - keep
            chunk = f.read(min(CHUNK_BYTES, left))
            left = left - len(chunk) if chunk else 0  # shrunk under us (rotated): what was read is all there is
            buf += chunk
