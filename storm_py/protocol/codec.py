"""The wire codec: msgpack bodies behind a one-byte format version, plus a registry of extension types.

Every message that leaves a process is ``bytes([CODEC_VERSION]) + msgpack(value)``.  Nothing is ever pickled.

Values that round-trip unchanged: ``None``, ``bool``, ``int`` (signed 64-bit up to unsigned 64-bit, so random
tuple ids fit), ``float`` (as float64), ``str``, ``bytes``, ``list`` and ``dict``.  Conversions to know about:

* ``tuple`` is sent as an array and comes back as a ``list``;
* ``bytearray`` and ``memoryview`` are sent as binary and come back as ``bytes``;
* ``dict`` keys should be scalars (``None``, ``bool``, ``int``, ``float``, ``str``, ``bytes``): a tuple key is
  sent as an array and cannot be used as a key again, so decoding such a frame raises :class:`CodecError`.

Anything else raises :class:`~storm_py.errors.CodecError` naming the type, unless the class was registered
with :func:`register_ext`; registered values are carried as msgpack extension types and are found at any
depth.

The codec detects frames that are structurally wrong (empty, wrong version, truncated, trailing bytes, invalid
msgpack, invalid UTF-8, unknown extension code).  It carries no checksum: a flipped bit that still decodes to
valid msgpack is not detected, because the byte streams under it (TCP, in-process queues) are already
reliable.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import msgpack

from storm_py.errors import CodecError, caused_by

log = logging.getLogger(__name__)

#: The format version carried as the first byte of every frame.
CODEC_VERSION: Final = 1

#: The lowest and highest extension code an application may register (msgpack reserves the negative codes).
EXT_CODE_MIN: Final = 0
EXT_CODE_MAX: Final = 127

_HEADER = bytes([CODEC_VERSION])

# Classes msgpack packs natively; a subclass of one of them would be packed as its base and never reach the
# extension registry, so such classes cannot be registered.
_NATIVE_TYPES: tuple[type, ...] = (bool, int, float, str, bytes, bytearray, memoryview, list, tuple, dict)

T = TypeVar("T")


@dataclass(frozen=True)
class _Ext:
    code: int
    cls: type
    to_bytes: Callable[[Any], bytes]
    from_bytes: Callable[[bytes], Any]


_registry_lock = threading.Lock()
_ext_by_code: dict[int, _Ext] = {}
_ext_by_cls: dict[type, _Ext] = {}


def _type_name(cls: type) -> str:
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def register_ext(code: int, cls: type[T], to_bytes: Callable[[T], bytes], from_bytes: Callable[[bytes], T]) -> None:
    """Carry instances of exactly ``cls`` as msgpack extension type ``code`` (0..127).

    ``to_bytes(obj)`` must return ``bytes``; ``from_bytes(data)`` rebuilds the object.  To carry structured
    content, use :func:`pack_value` / :func:`unpack_value` inside them.  Registering the same class under the
    same code again replaces the functions; a code or class already taken by another registration raises
    :class:`CodecError`.  Subclasses of ``cls`` are not covered (register them separately).
    """
    if type(code) is not int or not EXT_CODE_MIN <= code <= EXT_CODE_MAX:
        raise CodecError(
            f"ext type code must be an int in {EXT_CODE_MIN}..{EXT_CODE_MAX}, got {code!r}", code_value=code
        )
    if not isinstance(cls, type):
        raise CodecError(f"ext type {code} must be registered for a class, got {cls!r}", ext_code=code)
    if issubclass(cls, _NATIVE_TYPES):
        raise CodecError(
            f"cannot register {_type_name(cls)} as ext type {code}: msgpack encodes its base type natively",
            ext_code=code,
            type=_type_name(cls),
        )
    ext = _Ext(code, cls, to_bytes, from_bytes)
    with _registry_lock:
        by_code = _ext_by_code.get(code)
        if by_code is not None and by_code.cls is not cls:
            raise CodecError(
                f"ext type code {code} is already registered for {_type_name(by_code.cls)}",
                ext_code=code,
                type=_type_name(cls),
            )
        by_cls = _ext_by_cls.get(cls)
        if by_cls is not None and by_cls.code != code:
            raise CodecError(
                f"{_type_name(cls)} is already registered as ext type {by_cls.code}",
                ext_code=code,
                type=_type_name(cls),
            )
        _ext_by_code[code] = ext
        _ext_by_cls[cls] = ext
    log.debug("registered ext type %d for %s", code, _type_name(cls))


def unregister_ext(code: int) -> None:
    """Remove the registration of extension ``code`` (no-op when it is not registered)."""
    with _registry_lock:
        ext = _ext_by_code.pop(code, None)
        if ext is not None:
            _ext_by_cls.pop(ext.cls, None)


def registered_ext_codes() -> dict[int, type]:
    """A snapshot of the registry: extension code -> class."""
    with _registry_lock:
        return {code: ext.cls for code, ext in _ext_by_code.items()}


def _default(obj: Any) -> msgpack.ExtType:
    """msgpack's ``default`` hook: turn a registered value into an ExtType, refuse anything else."""
    cls = type(obj)
    ext = _ext_by_cls.get(cls)
    if ext is None:
        if isinstance(obj, int):  # msgpack hands over the ints it cannot pack
            raise CodecError(
                f"cannot encode int {obj}: outside msgpack's range (-2**63 .. 2**64-1)", type=_type_name(cls)
            )
        raise CodecError(
            f"cannot encode a value of type {_type_name(cls)} (not a msgpack type and not registered: name it in "
            f"topology.kryo.register or call register_ext)",
            type=_type_name(cls),
        )
    try:
        data = ext.to_bytes(obj)
    except Exception as exc:
        raise caused_by(CodecError(
            f"to_bytes of ext type {ext.code} ({_type_name(cls)}) failed: {exc}", ext_code=ext.code
        ), exc) from exc
    if type(data) is not bytes:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise CodecError(
                f"to_bytes of ext type {ext.code} ({_type_name(cls)}) returned {_type_name(type(data))}, not bytes",
                ext_code=ext.code,
            )
        data = bytes(data)
    return msgpack.ExtType(ext.code, data)


def _ext_hook(code: int, data: bytes) -> Any:
    """msgpack's ``ext_hook``: rebuild a registered value from its extension payload."""
    ext = _ext_by_code.get(code)
    if ext is None:
        raise CodecError(f"corrupted frame: unknown ext type code {code}", ext_code=code)
    try:
        return ext.from_bytes(data)
    except Exception as exc:
        raise caused_by(
            CodecError(f"from_bytes of ext type {code} ({_type_name(ext.cls)}) failed: {exc}", ext_code=code), exc
        ) from exc


def _new_packer() -> msgpack.Packer:
    return msgpack.Packer(default=_default, use_bin_type=True, autoreset=True, datetime=False)


# One packer pool per thread.  A packer is taken out while it packs, so an ext type's ``to_bytes`` that calls
# ``encode`` again gets a fresh packer instead of writing into the buffer of the one in use.
_local = threading.local()

_UNPACK_KW: dict[str, Any] = {
    "use_list": True,
    "raw": False,
    "strict_map_key": False,
    "ext_hook": _ext_hook,
}


def _encode_failed(obj: Any, exc: Exception) -> CodecError:
    text = str(exc)
    if isinstance(exc, OverflowError):
        return CodecError(f"cannot encode: an int is outside msgpack's 64-bit range ({text})")
    if "recursion" in text or "depth" in text:
        return CodecError(f"cannot encode: value nested too deeply or self-referencing ({text})")
    return CodecError(f"cannot encode a value of type {_type_name(type(obj))}: {text}")


def encode(obj: Any) -> bytes:
    """Encode ``obj`` as one frame: the version byte followed by its msgpack body."""
    try:
        pool: list[msgpack.Packer] = _local.pool
    except AttributeError:
        pool = _local.pool = []
    packer = pool.pop() if pool else _new_packer()
    try:
        body: bytes = packer.pack(obj)
        return _HEADER + body
    except CodecError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise caused_by(_encode_failed(obj, exc), exc) from exc
    finally:
        pool.append(packer)


def _decode_failed(data: bytes | bytearray | memoryview, exc: Exception) -> CodecError:
    size = len(data)
    text = str(exc) or type(exc).__name__
    if isinstance(exc, msgpack.ExtraData):
        return CodecError(
            f"corrupted frame: {len(exc.extra)} unexpected bytes after the message ({size} bytes in all)",
            size=size,
        )
    if "incomplete" in text:
        return CodecError(f"truncated frame: the message ends early ({size} bytes): {text}", size=size)
    if "exceeds max_" in text:
        return CodecError(
            f"truncated or corrupted frame: a container claims more items than the frame has bytes "
            f"({size} bytes): {text}",
            size=size,
        )
    if isinstance(exc, UnicodeDecodeError):
        return CodecError(f"corrupted frame: a string is not valid UTF-8 ({size} bytes): {text}", size=size)
    if isinstance(exc, TypeError):
        return CodecError(f"corrupted frame: unusable map key ({size} bytes): {text}", size=size)
    return CodecError(f"corrupted frame: not valid msgpack ({size} bytes): {text}", size=size)


def decode(data: bytes | bytearray | memoryview) -> Any:
    """Decode one frame made by :func:`encode`; a bad frame raises :class:`CodecError` saying why."""
    if not data:
        raise CodecError("empty frame: no version byte", size=0)
    version = data[0]
    if version != CODEC_VERSION:
        raise CodecError(
            f"unsupported codec version {version} (this build reads version {CODEC_VERSION})",
            version=version,
            expected=CODEC_VERSION,
        )
    try:
        return msgpack.unpackb(memoryview(data)[1:], **_UNPACK_KW)
    except CodecError:
        raise
    except Exception as exc:  # msgpack raises ValueError/TypeError subclasses and a few others on bad input
        raise caused_by(_decode_failed(data, exc), exc) from exc


def pack_value(obj: Any) -> bytes:
    """The bare msgpack body of ``obj`` (no version byte, ext types included), for ``to_bytes`` helpers."""
    try:
        result: bytes = msgpack.packb(obj, default=_default, use_bin_type=True, datetime=False)
    except CodecError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise caused_by(_encode_failed(obj, exc), exc) from exc
    return result


def unpack_value(data: bytes | bytearray | memoryview) -> Any:
    """Inverse of :func:`pack_value`, for ``from_bytes`` helpers."""
    try:
        return msgpack.unpackb(data, **_UNPACK_KW)
    except CodecError:
        raise
    except Exception as exc:
        raise caused_by(_decode_failed(data, exc), exc) from exc
