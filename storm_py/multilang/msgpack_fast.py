"""This module owns the msgpack bytes of the messages every tuple of a shell bolt costs, read and written without
msgpack's general code: pystorm's ``emit`` with one anchor and its ``ack``, and the values of a tuple message.

:func:`scan` reads, from the head of a buffer, the two messages pystorm writes for every tuple, exactly as it
packs them: ``{"command": "emit", "tuple": [..], "anchors": [id], "need_task_ids": False}`` (its emit on the
default stream, auto-anchored) as a :data:`ShortEmit` ``(values, anchor id)``, and ``{"command": "ack", "id":
id}`` as the id: an id that is the string of a number (as a shell bolt's pending ids are) as that ``int``, any
other as the ``str``.  It stops at the first message of any other shape, value type or key order, or one
cut by the end of the buffer, and leaves it to msgpack's ``Unpacker`` (the decoder may scan again after it), so a
message reads as the same thing either way; only what ``Unpacker`` would decode to exactly those maps is taken here.
:func:`pack_values` packs a tuple's values when they are all short strings, small ints, ``None`` or booleans (the
same bytes as ``msgpack.Packer(use_bin_type=True)``), and answers None for anything else.
"""

from __future__ import annotations

from typing import Any, Final

from mypy_extensions import i64

#: the head of pystorm's auto-anchored emit, up to its values: a map of four, ``"command": "emit", "tuple"``
_EMIT: Final = b"\x84\xa7command\xa4emit\xa5tuple"
_EMIT_LEN: Final = len(_EMIT)
#: after the values: ``"anchors"`` and an array of one
_ANCHORS: Final = b"\xa7anchors\x91"
_ANCHORS_LEN: Final = len(_ANCHORS)
#: the emit's end: ``"need_task_ids": false``
_NO_TASK_IDS: Final = b"\xadneed_task_ids\xc2"
_NO_TASK_IDS_LEN: Final = len(_NO_TASK_IDS)
#: pystorm's ack, up to its id: a map of two, ``"command": "ack", "id"``
_ACK: Final = b"\x82\xa7command\xa3ack\xa2id"
_ACK_LEN: Final = len(_ACK)

#: a pystorm emit with one anchor on the default stream, no task ids asked for: ``(values, anchor id)``, the id
#: as its number when it is a pending id's form (see :func:`digits`), else as the string
ShortEmit = tuple[list[Any], int | str]
#: the most digits an id read as its number has (ids count up from 1: far beyond any run; 10**18 < 2**63)
MAX_ID_DIGITS: Final = 18

#: one-byte heads: a fixstr of length i, a fixarray of length i, a positive fixint i
_FIXSTR: Final = tuple(bytes((0xA0 + i,)) for i in range(32))
_FIXARRAY: Final = tuple(bytes((0x90 + i,)) for i in range(16))
_FIXINT: Final = tuple(bytes((i,)) for i in range(128))
#: an array of one fixstr of length i, up to the string's bytes
_ONE_FIXSTR: Final = tuple(bytes((0x91, 0xA0 + i)) for i in range(32))
_NIL: Final = b"\xc0"
_FALSE: Final = b"\xc2"
_TRUE: Final = b"\xc3"


def _read_str(buf: bytes, p: int, end: int) -> tuple[str, int]:
    """The msgpack str (fixstr, str 8 or str 16) at ``p`` and the offset after it; offset -1: not one (another
    type, cut by ``end``, or not UTF-8)."""
    if p >= end:
        return "", -1
    head = buf[p]
    if 0xA0 <= head <= 0xBF:
        start = p + 1
        q = start + head - 0xA0
    elif head == 0xD9:
        if p + 2 > end:
            return "", -1
        start = p + 2
        q = start + buf[p + 1]
    elif head == 0xDA:
        if p + 3 > end:
            return "", -1
        start = p + 3
        q = start + (buf[p + 1] << 8 | buf[p + 2])
    else:
        return "", -1
    if q > end:
        return "", -1
    try:
        return buf[start:q].decode(), q
    except UnicodeDecodeError:
        return "", -1


def digits(buf: bytes, start: i64, end: i64) -> i64:
    """The number ``buf[start:end]`` spells when it is a pending id's form (1 to ``MAX_ID_DIGITS`` ASCII digits,
    no leading zero: the string of a number counted up from 1); -1 otherwise.  (Compiled, on machine ints.)"""
    if end - start <= 0 or end - start > MAX_ID_DIGITS or buf[start] == 0x30:
        return -1
    n: i64 = 0
    i = start
    while i < end:
        b: i64 = buf[i]
        if b < 0x30 or b > 0x39:
            return -1
        n = n * 10 + (b - 0x30)
        i += 1
    return n


def _read_id(buf: bytes, p: int, end: int) -> tuple[int | str, int]:
    """The id (a msgpack str) at ``p``, as its number when it is a pending id's form (:func:`digits`), else as the
    str; and the offset after it (-1: not a str, see :func:`_read_str`)."""
    if p < end:
        head = buf[p]
        q = p + 1 + head - 0xA0
        if 0xA0 < head <= 0xA0 + MAX_ID_DIGITS and q <= end:
            n = digits(buf, p + 1, q)
            if n >= 0:
                return n, q
    return _read_str(buf, p, end)


def _read_values(buf: bytes, p: int, end: int) -> tuple[list[Any], int]:
    """The fixarray at ``p`` of strs, small ints, nil and booleans, and the offset after it; -1: not one."""
    if p >= end:
        return [], -1
    head = buf[p]
    if not 0x90 <= head <= 0x9F:
        return [], -1
    values: list[Any] = []
    q = p + 1
    for _ in range(head - 0x90):
        if q >= end:
            return [], -1
        b = buf[q]
        if b < 0x80:
            values.append(b)
            q += 1
        elif b >= 0xE0:
            values.append(b - 0x100)
            q += 1
        elif b == 0xC0:
            values.append(None)
            q += 1
        elif b == 0xC2:
            values.append(False)
            q += 1
        elif b == 0xC3:
            values.append(True)
            q += 1
        else:
            s, q = _read_str(buf, q, end)
            if q < 0:
                return [], -1
            values.append(s)
    return values, q


def scan(buf: bytes, out: list[Any], p: int = 0) -> int:
    """Append to ``out`` the pystorm emits (as :data:`ShortEmit`) and acks (as their id) at the head of ``buf``
    (from offset ``p``); return where the first message that is neither (or is cut short) starts: ``len(buf)``
    when all were."""
    end = len(buf)
    while p < end:
        head = buf[p]
        if head == 0x84 and buf[p:p + _EMIT_LEN] == _EMIT:
            values, q = _read_values(buf, p + _EMIT_LEN, end)
            if q < 0 or buf[q:q + _ANCHORS_LEN] != _ANCHORS:
                return p
            anchor, q = _read_id(buf, q + _ANCHORS_LEN, end)
            if q < 0 or buf[q:q + _NO_TASK_IDS_LEN] != _NO_TASK_IDS:
                return p
            out.append((values, anchor))
            p = q + _NO_TASK_IDS_LEN
        elif head == 0x82 and buf[p:p + _ACK_LEN] == _ACK:
            tid, q = _read_id(buf, p + _ACK_LEN, end)
            if q < 0:
                return p
            out.append(tid)
            p = q
        else:
            return p
    return p


def _utf8(s: str) -> bytes | None:
    """``s`` in UTF-8; None when it cannot be (a lone surrogate: the ``Packer`` then reports it)."""
    try:
        return s.encode()
    except UnicodeEncodeError:
        return None


def pack_str(s: str) -> bytes | None:
    """``s`` as a msgpack str when it is under 256 bytes of UTF-8; None otherwise."""
    data = _utf8(s)
    if data is None:
        return None
    n = len(data)
    if n < 32:
        return _FIXSTR[n] + data
    if n < 256:
        return b"\xd9" + _FIXINT[n] + data if n < 128 else b"\xd9" + bytes((n,)) + data
    return None


def pack_values(values: list[Any]) -> bytes | None:
    """``values`` as a msgpack array when it holds at most 15 strs under 256 bytes, ints 0-127, None or booleans
    (the bytes ``msgpack.Packer(use_bin_type=True)`` writes); None for anything else."""
    n = len(values)
    if n == 1:  # the common tuple: one short string, one concatenation
        v0 = values[0]
        if type(v0) is str:
            data = _utf8(v0)
            if data is None:
                return None
            if len(data) < 32:
                return _ONE_FIXSTR[len(data)] + data
    elif n > 15:
        return None
    parts = [_FIXARRAY[n]]
    for v in values:
        t = type(v)
        if t is str:
            packed = pack_str(v)
            if packed is None:
                return None
            parts.append(packed)
        elif t is int:
            if not 0 <= v < 128:
                return None
            parts.append(_FIXINT[v])
        elif v is None:
            parts.append(_NIL)
        elif v is True:
            parts.append(_TRUE)
        elif v is False:
            parts.append(_FALSE)
        else:
            return None
    return b"".join(parts)
