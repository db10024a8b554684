"""This module owns pystorm's msgpack framing of the multilang protocol: messages are msgpack maps written back to
back, with no ``end`` line.  :class:`MsgpackSerializer` encodes a message (raising
:class:`~storm_py.multilang.wire.EncodeError` for a value msgpack cannot carry); :class:`MsgpackDecoder` is fed raw
bytes as they arrive and returns the complete messages, raising :class:`~storm_py.multilang.wire.ProtocolError` (the
offending bytes quoted) for anything that is not the protocol, a message over
``topology.multilang.max.message.bytes`` included.  Nothing here touches a process.

The messages every tuple of a shell bolt costs are read and written without msgpack's general code:
:func:`scan` reads, from the head of a buffer, the two messages pystorm writes for every tuple, exactly as it
packs them: ``{"command": "emit", "tuple": [..], "anchors": [id], "need_task_ids": False}`` (its emit on the
default stream, auto-anchored) as a :data:`~storm_py.multilang.wire.ShortEmit` ``(values, anchor id)``, and
``{"command": "ack", "id": id}`` as the id: an id that is the string of a number (as a shell bolt's pending ids are)
as that ``int``, any other as the ``str``.  It stops at the first message of any other shape, value type or key
order, or one cut by the end of the buffer, and leaves it to msgpack's ``Unpacker`` (the decoder may scan again after
it), so a message reads as the same thing either way; only what ``Unpacker`` would decode to exactly those maps is
taken here.  :func:`pack_values` packs a tuple's values when they are all short strings, small ints, ``None`` or
booleans (the same bytes as ``msgpack.Packer(use_bin_type=True)``), and answers None for anything else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgpack

from storm_py.multilang.wire import (
    DEFAULT_MAX_MESSAGE,
    MAX_ID_DIGITS,
    MAX_MESSAGE_KEY,
    QUOTE_LIMIT,
    EncodeError,
    ProtocolError,
    digits,
    quote,
    remembered,
)

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


#: a msgpack map of five entries and the first one's key, ``"id"``
_TUPLE_MAP_ID: Final = b"\x85\xa2id"
#: the same followed by the head of a fixstr of length i (an id of i ASCII characters)
_TUPLE_MAP_IDS: Final = tuple(_TUPLE_MAP_ID + bytes((0xA0 + i,)) for i in range(32))


class MsgpackSerializer:
    """pystorm's msgpack framing: maps written back to back (strings as str, bytes as bin)."""

    name = "msgpack"

    def __init__(self) -> None:
        self._packer = msgpack.Packer(use_bin_type=True)
        self._pack: Callable[[Any], bytes] = self._packer.pack
        self._lenient = msgpack.Packer(use_bin_type=True, default=str)
        #: the packed ``"comp", .., "stream", .., "task", .., "tuple"`` of a tuple map, per source of tuples
        self._middles: dict[tuple[str, str, int], bytes] = {}
        #: the last source's (a bolt's inputs mostly come from one): found by identity, without a lookup
        self._last_source: tuple[str, str, int] = ("", "", 0)
        self._last_middle = b""

    def encode(self, message: Any) -> bytes:
        try:
            data: bytes = self._packer.pack(message)
        except (TypeError, ValueError, OverflowError) as exc:
            self._packer.reset()
            raise EncodeError(f"cannot encode as msgpack: {exc}") from exc
        return data

    def encode_lenient(self, message: Any) -> bytes:
        data: bytes = self._lenient.pack(message)
        return data

    def encode_tuple(self, tid: str, comp: str, stream: str, task: int, values: list[Any]) -> bytes:
        # the map's parts packed one after the other, in the map's order: the same bytes as packing the map
        pack = self._pack
        last = self._last_source
        if comp is last[0] and stream is last[1] and task == last[2]:
            middle = self._last_middle
        else:
            key = (comp, stream, task)
            found = self._middles.get(key)
            if found is None:
                found = remembered(self._middles, key, b"".join(
                    [pack(part) for part in ("comp", comp, "stream", stream, "task", task, "tuple")]))
            middle = self._last_middle = found
            self._last_source = key
        values_packed = pack_values(values) if type(values) is list else None
        if values_packed is not None and len(tid) < 32:  # the common values and an id of ASCII (a number's)
            try:
                tid_ascii = tid.encode("ascii")
            except UnicodeEncodeError:
                pass
            else:
                return b"".join((_TUPLE_MAP_IDS[len(tid_ascii)], tid_ascii, middle, values_packed))
        tid_packed = pack_str(tid)
        if tid_packed is not None and values_packed is not None:  # the common values, packed here
            return b"".join((_TUPLE_MAP_ID, tid_packed, middle, values_packed))
        try:
            return _TUPLE_MAP_ID + (tid_packed or pack(tid)) + middle + (values_packed or pack(values))
        except (TypeError, ValueError, OverflowError) as exc:
            self._packer.reset()
            raise EncodeError(f"cannot encode as msgpack: {exc}") from exc

    def decoder(self, shorthand: bool = False, max_bytes: int = DEFAULT_MAX_MESSAGE) -> MsgpackDecoder:
        return MsgpackDecoder(shorthand, max_bytes)


#: what the ``Unpacker`` raises for bytes that are not msgpack or are too long (``BufferFull``, ``FormatError``,
#: ``StackError``, ``ExtraData``, a declared length over its bounds), or for a map key it cannot hash
_UNPACK_ERRORS: Final = (ValueError, TypeError, msgpack.UnpackException)


class MsgpackDecoder:
    """Unpacks back-to-back msgpack objects; anything but a map is not the protocol.

    With ``shorthand``, pystorm's emits and acks come out as :func:`storm_py.multilang.msgpack_wire.scan` gives
    them (a ``(values, anchor id)`` tuple, an id) rather than as maps, read without the ``Unpacker``.  A message of
    another shape goes through the ``Unpacker``; the messages after it are read by ``scan`` again when the next
    one is pystorm's emit or ack, otherwise the ``Unpacker`` reads the rest of that read too.  Every read while the
    ``Unpacker`` holds part of a message goes through it whole.  The ``Unpacker`` holds at most ``max_bytes`` (of the
    message it waits for the end of, whatever length its head declares): more is not the protocol.
    """

    def __init__(self, shorthand: bool = False, max_bytes: int = DEFAULT_MAX_MESSAGE) -> None:
        self._max = max_bytes
        self._unpacker = self._new_unpacker()
        self._recent = b""
        self._shorthand = shorthand
        #: bytes fed to the unpacker in all, and whether it holds part of a message (its position is short of it)
        self._fed = 0
        self._holding = False

    def feed(self, data: bytes) -> list[Any]:
        keep = 4 * QUOTE_LIMIT  # the last bytes read, quoted by an error
        self._recent = data[-keep:] if len(data) >= keep else (self._recent + data)[-keep:]
        out: list[Any] = []
        if not self._shorthand or self._holding:
            return self._unpack(data, out)
        end = len(data)
        p = scan(data, out)
        while p < end:
            # a message of another shape at p (or one cut short): the unpacker reads it; if pystorm's emits and
            # acks come next, they are read here again (the unpacker, holding the rest, is replaced), otherwise
            # the unpacker reads the rest too
            unpacker = self._unpacker
            told = unpacker.tell()
            try:
                unpacker.feed(data[p:] if p else data)
                self._fed += end - p
                msg = unpacker.unpack()
            except msgpack.OutOfData:
                self._holding = True
                return out
            except _UNPACK_ERRORS as exc:
                raise self._refused(exc) from exc
            out.append(self._checked(msg))
            q = p + unpacker.tell() - told
            if q == end:
                return out
            p = scan(data, out, q)
            if p == q:
                return self._unpack(b"", out)
            self._unpacker = self._new_unpacker()
            self._fed = 0
        return out

    def _unpack(self, data: bytes, out: list[Any]) -> list[Any]:
        """Feed ``data`` to the unpacker and append every message it completes to ``out``."""
        unpacker = self._unpacker
        try:
            if data:
                unpacker.feed(data)
                self._fed += len(data)
            for msg in unpacker:
                out.append(self._checked(msg))
        except _UNPACK_ERRORS as exc:
            raise self._refused(exc) from exc
        if self._shorthand:
            self._holding = unpacker.tell() != self._fed
        return out

    def _new_unpacker(self) -> msgpack.Unpacker:
        return msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=self._max)

    def _refused(self, exc: Exception) -> ProtocolError:
        """The error for what the ``Unpacker`` refused (the unpacker, holding part of it, is dropped)."""
        self._unpacker = self._new_unpacker()
        self._fed = 0
        self._holding = False
        if isinstance(exc, msgpack.BufferFull) or "exceeds max" in str(exc):
            return ProtocolError(f"a message longer than {self._max} bytes ({MAX_MESSAGE_KEY}): "
                                 f"{quote(self._recent)}")
        return ProtocolError(f"not msgpack: {quote(self._recent)} ({type(exc).__name__}: {exc})")

    def _checked(self, msg: Any) -> dict[str, Any]:
        """``msg`` if it is a map (every message is); otherwise it is not the protocol."""
        if not isinstance(msg, dict):
            raise ProtocolError(f"not the multilang protocol (a msgpack {type(msg).__name__}): {quote(self._recent)}")
        return msg

