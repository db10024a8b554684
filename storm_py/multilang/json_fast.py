"""This module owns the JSON text of the messages every tuple of a shell bolt costs, read and written without the
json module's general code: pystorm's ``emit`` with one anchor and its ``ack``, and the values of a tuple message.

:func:`scan_message` reads one message (the text before an ``end`` line) when it is exactly what pystorm writes
for every tuple (its ``json.dumps``, separators ``", "`` and ``": "``, ASCII):
``{"command": "emit", "tuple": [..], "anchors": [id], "need_task_ids": false}`` (auto-anchored, default stream)
as :data:`~storm_py.multilang.msgpack_fast.ShortEmit` ``(values, anchor id)`` and ``{"command": "ack", "id": id}``
as the id (the string of a number as that ``int``, as :func:`~storm_py.multilang.msgpack_fast.scan` reads it); its
strings must have no escapes or control characters, its values be strings.  Anything else
answers None and is parsed by ``json.loads`` as before, so a message reads as the same thing either way.
:func:`dump_values` writes a tuple's values as the serializer's encoder does (separators ``","``) when they are
all strings or ints, and answers None otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from storm_py.multilang.msgpack_fast import digits

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
#: every byte as itself, but a control byte or a quote as a backslash: a string's text translated by it holds no
#: backslash exactly when the text is the string as it is (no escape, no control character, no end of string)
_ESCAPES: Final = bytes(0x5C if (b < 0x20 or b == 0x22) else b for b in range(256))
_QUOTE: Final = 0x22
_BACKSLASH: Final = 0x5C


def _text(raw: bytes) -> str | None:
    """The JSON string whose text between the quotes is ``raw``, when it has no escape, control character or quote
    and is UTF-8; None otherwise."""
    if _BACKSLASH in raw.translate(_ESCAPES):  # an int: bytes.__contains__ of an int is a memchr
        return None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return None


def scan_message(part: bytes) -> Any:
    """``part`` (one message's text) as a short emit or an ack's id when it is pystorm's; None otherwise."""
    if part[:_ACK_LEN] == _ACK:
        if part[-2:] != _ACK_END:
            return None
        n = digits(part, _ACK_LEN, len(part) - 2)
        return n if n >= 0 else _text(part[_ACK_LEN:-2])
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
            value = _text(part[p + 1:q])
            if value is None:
                return None
            values.append(value)
            p = q + 1
            if part[p:p + 2] == b", ":
                p += 2
                continue
            if part[p:p + _ANCHORS_LEN] != _ANCHORS:
                return None
            break
    n = digits(part, p + _ANCHORS_LEN, end)
    if n >= 0:
        return values, n
    anchor = _text(part[p + _ANCHORS_LEN:end])
    return None if anchor is None else (values, anchor)


def dump_values(values: list[Any], quote: Callable[[str], str]) -> str | None:
    """``values`` as the JSON array the serializer's encoder writes (``","`` between items, strings as ``quote``
    writes them) when they are all strings or ints; None otherwise."""
    if len(values) == 1:
        v = values[0]
        if type(v) is str:
            return "[" + quote(v) + "]"
    parts: list[str] = []
    for v in values:
        t = type(v)
        if t is str:
            parts.append(quote(v))
        elif t is int:
            parts.append(str(v))
        else:
            return None
    return "[" + ",".join(parts) + "]"
