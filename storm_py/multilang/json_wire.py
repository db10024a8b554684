"""This module owns Storm's JSON framing of the multilang protocol (Storm's ``JsonSerializer``): every message is
one JSON document followed by a line ``end``.  :class:`JsonSerializer` encodes a message (raising
:class:`~storm_py.multilang.wire.EncodeError` for a value JSON cannot carry); :class:`JsonDecoder` is fed raw bytes
as they arrive and returns the complete messages, raising :class:`~storm_py.multilang.wire.ProtocolError` (the
offending text quoted) for anything that is not the protocol, a message over ``topology.multilang.max.message.bytes``
included.  Nothing here touches a process.

The messages every tuple of a shell bolt costs are read and written without the json module's general code:
:func:`scan_message` reads one message (the text before an ``end`` line) when it is exactly what pystorm writes
for every tuple (its ``json.dumps``, separators ``", "`` and ``": "``, ASCII):
``{"command": "emit", "tuple": [..], "anchors": [id], "need_task_ids": false}`` (auto-anchored, default stream)
as :data:`~storm_py.multilang.wire.ShortEmit` ``(values, anchor id)`` and ``{"command": "ack", "id": id}``
as the id (the string of a number as that ``int``, as :func:`~storm_py.multilang.msgpack_wire.scan` reads it); its
strings must have no escapes or control characters, its values be strings.  Anything else
answers None and is parsed by ``json.loads``, so a message reads as the same thing either way.
:func:`dump_values` writes a tuple's values as the encoder does (separators ``","``) when they are
all strings or ints, and answers None otherwise.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any, Final, NoReturn

from storm_py.multilang.wire import (
    DEFAULT_MAX_MESSAGE,
    MAX_MESSAGE_KEY,
    QUOTE_LIMIT,
    EncodeError,
    ProtocolError,
    digits,
    quote,
    remembered,
)

#: a str as a JSON string (ASCII, as the encoders write it)
_quote_json: Final[Callable[[str], str]] = json.encoder.encode_basestring_ascii


class JsonSerializer:
    """Storm's JSON framing: a document, a newline, ``end``, a newline."""

    name = "json"

    def __init__(self) -> None:
        encoder = json.JSONEncoder(allow_nan=False, separators=(",", ":"))
        self._dumps: Callable[[Any], str] = encoder.encode
        self._default = encoder.default
        self._lenient: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":"), default=str).encode
        #: ``,"comp":..,"stream":..,"task":..,"tuple":`` per source of tuples (a topology has a few)
        self._middles: dict[tuple[str, str, int], str] = {}
        self._values = self._values_encoder()

    def _values_encoder(self) -> Callable[[Any], str]:
        """What ``self._dumps`` does for a tuple's values, without building an encoder per call: the C encoder
        made once (it keeps its circular-reference markers between calls, so it is made again after an error)."""
        make = getattr(json.encoder, "c_make_encoder", None)
        if make is None:
            return self._dumps
        encode = make({}, self._default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False)
        return lambda values: "".join(encode(values, 0))

    def encode(self, message: Any) -> bytes:
        try:
            return (self._dumps(message) + "\nend\n").encode()
        except (TypeError, ValueError) as exc:
            raise EncodeError(f"cannot encode as JSON: {exc}") from exc

    def encode_lenient(self, message: Any) -> bytes:
        return (self._lenient(message) + "\nend\n").encode()

    def encode_tuple(self, tid: str, comp: str, stream: str, task: int, values: list[Any]) -> bytes:
        key = (comp, stream, task)
        middle = self._middles.get(key)
        if middle is None:
            head = self._dumps({"comp": comp, "stream": stream, "task": task})[1:-1]
            middle = remembered(self._middles, key, "," + head + ',"tuple":')
        body = dump_values(values, _quote_json) if type(values) is list else None  # the common values, here
        if body is not None:
            return "".join(('{"id":', _quote_json(tid), middle, body, "}\nend\n")).encode()
        try:
            body = self._values(values)
        except (TypeError, ValueError, RecursionError) as exc:
            self._values = self._values_encoder()
            raise EncodeError(f"cannot encode as JSON: {exc}") from exc
        return ('{"id":' + _quote_json(tid) + middle + body + "}\nend\n").encode()

    def decoder(self, shorthand: bool = False, max_bytes: int = DEFAULT_MAX_MESSAGE) -> JsonDecoder:
        return JsonDecoder(shorthand, max_bytes)


#: the line that ends a JSON message, with the newline before it
_END_LINE: Final = b"\nend\n"
#: the start of a message held this long or longer waits in a buffer searched for its end only where bytes are new
#: (a shorter one is joined with the next read and split again: the common case, a message cut by a read)
LONG_MESSAGE: Final = 1 << 16


class JsonDecoder:
    """Splits a process's output into messages ended by a line ``end``.

    A message starts with ``{`` (every message a process sends is an object); text that does not (a line printed
    to stdout, say) is not the protocol and fails at once, quoted, rather than when an ``end`` comes.  Blank lines
    between messages are skipped.  The stream is cut on ``\nend\n`` (a JSON document cannot hold a raw newline
    inside a string), and the messages one read completes are parsed by one ``json.loads``.  A message longer than
    ``LONG_MESSAGE`` gathers in a buffer whose new bytes only are searched for the ``end`` line (its cost grows with
    its length, not with its length times the reads it takes), up to ``max_bytes``: a longer one is not the
    protocol.
    """

    def __init__(self, shorthand: bool = False, max_bytes: int = DEFAULT_MAX_MESSAGE) -> None:
        self._rest = b""
        #: the start of a long message (``_rest`` is then empty)
        self._long = bytearray()
        self._max = max_bytes
        self._loads = json.loads
        self._shorthand = shorthand

    def feed(self, data: bytes) -> list[Any]:
        if self._long:
            found = self._feed_long(data)
            if found is None:
                return []
            parts = found
        else:
            parts = (self._rest + data).split(_END_LINE) if self._rest else data.split(_END_LINE)
            if len(data) > self._max:  # one read longer than a message may be (never from a process's pipe)
                for part in parts[:-1]:
                    if len(part) > self._max:
                        self._too_long(part)
        rest = self._rest = parts.pop()
        if rest[:1] != b"{" and rest:
            _check_start(rest, complete=False)
        if len(rest) >= LONG_MESSAGE:
            self._rest = b""
            self._long = bytearray(rest)
            if len(rest) > self._max:
                self._too_long(rest)
        if not parts:
            return []
        short: list[Any] = []
        if self._shorthand:  # pystorm's emits and acks at the head, short; the rest as below
            for part in parts:
                msg = scan_message(part)
                if msg is None:
                    break
                short.append(msg)
            if len(short) == len(parts):
                return short
        return short + self._parse(parts[len(short):]) if short else self._parse(parts)

    def _feed_long(self, data: bytes) -> list[bytes] | None:
        """``data`` added to a long message's start: the text cut at every ``end`` line when one came (the last
        part what follows the last), None while none did."""
        buf = self._long
        start = len(buf) - len(_END_LINE) + 1  # an end line may begin in the last bytes held
        buf += data
        at = buf.find(_END_LINE, start)
        if at < 0:
            if len(buf) > self._max:
                self._too_long(buf)
            return None
        if at > self._max:
            self._too_long(buf)
        self._long = bytearray()
        return bytes(buf).split(_END_LINE)

    def _too_long(self, message: bytes | bytearray) -> NoReturn:
        """Raise for ``message``, longer than the bound (and hold none of it any more)."""
        self._long = bytearray()
        head = bytes(message[:QUOTE_LIMIT + 1])
        raise ProtocolError(f"a message longer than {self._max} bytes ({MAX_MESSAGE_KEY}): {quote(head)}")

    def _parse(self, parts: list[bytes]) -> list[Any]:
        """The messages ``parts`` hold, each the text before an ``end`` line."""
        # many messages: one json.loads of them as one array (a fifth of the cost of one call each), taken when
        # each part is one object and they parse to exactly one object each; anything else is judged message by
        # message below
        if len(parts) > 1 and all(part[:1] == b"{" and part[-1:] == b"}" for part in parts):
            try:
                out: list[Any] = self._loads(b"[" + b",".join(parts) + b"]")
            except (ValueError, RecursionError):
                pass
            else:
                if len(out) == len(parts) and all(type(msg) is dict for msg in out):
                    return out
        out = []
        loads = self._loads
        for part in parts:
            if part[:1] != b"{":
                _check_start(part, complete=True)
            try:
                msg = loads(part)
            except (ValueError, RecursionError) as exc:
                raise ProtocolError(f"not a JSON message: {quote(part)} ({type(exc).__name__}: {exc})") from exc
            out.append(msg)  # an object: it starts with "{"
        return out


def _check_start(text: bytes, complete: bool) -> None:
    """Raise for text where a message should start that cannot start one (blank lines may come first; an
    incomplete ``text`` may be the start of an ``end`` line)."""
    head = text.lstrip()
    if not head or head.startswith(b"{"):
        return
    if head.startswith(b"end\n") or (complete and head.rstrip() == b"end"):
        raise ProtocolError("an 'end' line with no message before it")
    if not complete and b"end".startswith(head):
        return
    line = head.split(b"\n", 1)[0]
    raise ProtocolError(f"not the multilang protocol: {quote(line)}")


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
