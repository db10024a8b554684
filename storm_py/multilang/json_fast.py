"""This module owns the JSON text of the messages every tuple of a shell bolt costs, read and written without the
json module's general code: pystorm's ``emit`` with one anchor and its ``ack``, and the values of a tuple message.

:func:`scan_message` reads one message (the text before an ``end`` line) when it is exactly what pystorm writes
for every tuple (its ``json.dumps``, separators ``", "`` and ``": "``, ASCII):
``{"command": "emit", "tuple": [..], "anchors": [id], "need_task_ids": false}`` (auto-anchored, default stream)
as :data:`~storm_py.multilang.msgpack_fast.ShortEmit` ``(values, anchor id)`` and ``{"command": "ack", "id": id}``
as the id; its strings must be printable ASCII with no escapes, its values strings.  Anything else answers None
and is parsed by ``json.loads`` as before, so a message reads as the same thing either way.
:func:`dump_values` writes a tuple's values as the serializer's encoder does (separators ``","``) when they are
all such strings or ints, and answers None otherwise.
"""

from __future__ import annotations

from typing import Any, Final

#: the head of pystorm's auto-anchored emit up to its first value, the text between values and anchor, its end
_EMIT: Final = b'{"command": "emit", "tuple": ['
_EMIT_LEN: Final = len(_EMIT)
_ANCHORS: Final = b'], "anchors": ["'
_ANCHORS_LEN: Final = len(_ANCHORS)
_END: Final = b'"], "need_task_ids": false}'
_END_LEN: Final = len(_END)
#: pystorm's ack up to its id, and its end
_ACK: Final = b'{"command": "ack", "id": "'
_ACK_LEN: Final = len(_ACK)
_ACK_END: Final = b'"}'
#: the bytes a plain string may hold: printable ASCII but for the quote and the backslash
_NOT_PLAIN: Final = bytes(b for b in range(256) if b < 0x20 or b > 0x7E or b in b'"\\')
_PLAIN: Final = bytes(b for b in range(256) if b not in _NOT_PLAIN)
_QUOTE: Final = 0x22


def _plain(text: bytes) -> bool:
    """Whether ``text`` is printable ASCII with no quote or backslash (a JSON string's text as it is)."""
    return not text.translate(None, _PLAIN)


def scan_message(part: bytes) -> Any:
    """``part`` (one message's text) as a short emit or an ack's id when it is pystorm's; None otherwise."""
    if part[:_ACK_LEN] == _ACK:
        if part[-2:] != _ACK_END:
            return None
        tid = part[_ACK_LEN:-2]
        return tid.decode() if _plain(tid) else None
    if part[:_EMIT_LEN] != _EMIT or part[-_END_LEN:] != _END:
        return None
    values: list[Any] = []
    p = _EMIT_LEN
    end = len(part) - _END_LEN
    if part[p:p + _ANCHORS_LEN] != _ANCHORS:  # at least one value
        while True:
            if p >= end or part[p] != _QUOTE:
                return None
            q = part.find(b'"', p + 1, end)
            if q < 0:
                return None
            text = part[p + 1:q]
            if not _plain(text):
                return None
            values.append(text.decode())
            p = q + 1
            if part[p:p + 2] == b", ":
                p += 2
                continue
            if part[p:p + _ANCHORS_LEN] != _ANCHORS:
                return None
            break
    anchor = part[p + _ANCHORS_LEN:end]
    if not _plain(anchor):
        return None
    return (values, anchor.decode())


def plain_str(s: str) -> bool:
    """Whether ``s`` is written by the JSON encoder as itself between quotes."""
    return s.isascii() and s.isprintable() and '"' not in s and "\\" not in s


def dump_values(values: list[Any]) -> str | None:
    """``values`` as the JSON array the serializer's encoder writes (``","`` between items) when they are all
    printable-ASCII strings without quote or backslash, or ints; None otherwise."""
    parts: list[str] = []
    for v in values:
        t = type(v)
        if t is str:
            if not plain_str(v):
                return None
            parts.append('"' + v + '"')
        elif t is int:
            parts.append(str(v))
        else:
            return None
    return "[" + ",".join(parts) + "]"
