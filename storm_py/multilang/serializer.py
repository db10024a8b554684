"""This module owns the multilang wire formats: Storm's JSON framing and pystorm's msgpack framing.

JSON (Storm's ``JsonSerializer``): every message is one JSON document followed by a line ``end``.  msgpack
(pystorm's): messages are msgpack maps written back to back, with no ``end`` line.  Encoders turn one message
into bytes and raise :class:`EncodeError` for a value the format cannot carry; decoders are fed raw bytes as
they arrive and return the complete messages, raising :class:`ProtocolError` (with the offending text quoted) for
anything that is not the protocol, a message longer than ``topology.multilang.max.message.bytes`` included (a
decoder holds no more of one than that).  Nothing here touches a process.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any, Final, NoReturn, Protocol, TypeVar

import msgpack

from storm_py.config.keys import KEYS
from storm_py.errors import ConfigError, ShellProcessError
from storm_py.multilang.json_fast import dump_values, scan_message
from storm_py.multilang.msgpack_fast import pack_str, pack_values, scan

#: Storm's class name for the JSON serializer, accepted as a synonym of ``"json"``
STORM_JSON_CLASS: Final = "org.apache.storm.multilang.JsonSerializer"
#: how much of a bad line or message an error quotes
QUOTE_LIMIT: Final = 200
#: the key bounding one message a process writes, and its default (a decoder made without a bound takes it)
MAX_MESSAGE_KEY: Final = "topology.multilang.max.message.bytes"
DEFAULT_MAX_MESSAGE: Final[int] = KEYS[MAX_MESSAGE_KEY].default
#: a str as a JSON string (ASCII, as the encoders write it)
_quote_json: Final[Callable[[str], str]] = json.encoder.encode_basestring_ascii


class ProtocolError(ShellProcessError):
    """The process wrote something that is not the multilang protocol."""

    code = "multilang_protocol_error"


class EncodeError(ShellProcessError):
    """A message holds a value the serializer cannot carry."""

    code = "multilang_encode_error"


def quote(data: bytes | str) -> str:
    """``data`` as a short quoted string for an error message."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if len(text) > QUOTE_LIMIT:
        text = text[:QUOTE_LIMIT] + "..."
    return repr(text)


class Decoder(Protocol):
    """Turns bytes read from a process into messages."""

    def feed(self, data: bytes) -> list[Any]:
        """The messages completed by ``data`` (possibly none)."""
        ...


class Serializer(Protocol):
    """One wire format: how to encode a message and how to decode a stream of them."""

    name: str

    def encode(self, message: Any) -> bytes:
        """One message as bytes, framing included."""
        ...

    def encode_lenient(self, message: Any) -> bytes:
        """Like :meth:`encode`, with values the format cannot carry written as their ``str`` (the handshake's conf)."""
        ...

    def encode_tuple(self, tid: str, comp: str, stream: str, task: int, values: list[Any]) -> bytes:
        """A tuple message ``{"id", "comp", "stream", "task", "tuple"}`` as bytes (what a shell bolt sends per
        input: the same as :meth:`encode` of that map, cheaper)."""
        ...

    def decoder(self, shorthand: bool = False, max_bytes: int = DEFAULT_MAX_MESSAGE) -> Decoder:
        """A fresh decoder for one process's output; ``shorthand``: pystorm's emits and acks may come out as
        :func:`storm_py.multilang.msgpack_fast.scan` gives them instead of as maps (a shell bolt's process);
        ``max_bytes``: the longest message it takes (a longer one is a :class:`ProtocolError`)."""
        ...


T = TypeVar("T")

#: how many sources of tuples (component, stream, task) a serializer keeps the packed middle of a tuple message for
MAX_SOURCES: Final = 1024


def _remembered(middles: dict[tuple[str, str, int], T], key: tuple[str, str, int], middle: T) -> T:
    """Keep ``middle`` for ``key`` (all of them dropped first once ``MAX_SOURCES`` are kept) and return it."""
    if len(middles) >= MAX_SOURCES:
        middles.clear()
    middles[key] = middle
    return middle


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
            middle = _remembered(self._middles, key, "," + head + ',"tuple":')
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
                found = _remembered(self._middles, key, b"".join(
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

    With ``shorthand``, pystorm's emits and acks come out as :func:`storm_py.multilang.msgpack_fast.scan` gives
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


def serializer_for(name: Any, component_id: str) -> Serializer:
    """The serializer ``topology.multilang.serializer`` names; raise naming the component for anything else."""
    if name in (None, "json", STORM_JSON_CLASS):
        return JsonSerializer()
    if name == "msgpack":
        return MsgpackSerializer()
    raise ConfigError(
        f"topology.multilang.serializer of {component_id!r} must be 'json', 'msgpack' or {STORM_JSON_CLASS!r}, "
        f"got {name!r}", key="topology.multilang.serializer", component=component_id,
    )
