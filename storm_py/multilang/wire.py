"""This module owns the multilang wire's contract, whichever framing carries it (:mod:`storm_py.multilang.json_wire`,
:mod:`storm_py.multilang.msgpack_wire`): the :class:`Serializer` and :class:`Decoder` protocols, the errors a
framing raises (:class:`ProtocolError` for what is not the protocol, quoted by :func:`quote`; :class:`EncodeError`
for a value it cannot carry), the bound on one message (``topology.multilang.max.message.bytes``), and the
shorthand both decoders may read pystorm's per-tuple emit and ack as (:data:`ShortEmit`, a pending id as its number:
:func:`digits`).
"""

from __future__ import annotations

from typing import Any, Final, Protocol, TypeVar

from mypy_extensions import i64

from storm_py.config.keys import KEYS
from storm_py.errors import ShellProcessError

#: how much of a bad line or message an error quotes
QUOTE_LIMIT: Final = 200
#: the key bounding one message a process writes, and its default (a decoder made without a bound takes it)
MAX_MESSAGE_KEY: Final = "topology.multilang.max.message.bytes"
DEFAULT_MAX_MESSAGE: Final[int] = KEYS[MAX_MESSAGE_KEY].default

#: a pystorm emit with one anchor on the default stream, no task ids asked for: ``(values, anchor id)``, the id
#: as its number when it is a pending id's form (see :func:`digits`), else as the string
ShortEmit = tuple[list[Any], int | str]
#: the most digits an id read as its number has (ids count up from 1: far beyond any run; 10**18 < 2**63)
MAX_ID_DIGITS: Final = 18


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
        :func:`storm_py.multilang.msgpack_wire.scan` gives them instead of as maps (a shell bolt's process);
        ``max_bytes``: the longest message it takes (a longer one is a :class:`ProtocolError`)."""
        ...


T = TypeVar("T")

#: how many sources of tuples (component, stream, task) a serializer keeps the packed middle of a tuple message for
MAX_SOURCES: Final = 1024


def remembered(middles: dict[tuple[str, str, int], T], key: tuple[str, str, int], middle: T) -> T:
    """Keep ``middle`` for ``key`` (all of them dropped first once ``MAX_SOURCES`` are kept) and return it."""
    if len(middles) >= MAX_SOURCES:
        middles.clear()
    middles[key] = middle
    return middle

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
