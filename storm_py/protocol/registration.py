"""This module owns serialization registration by config: ``topology.kryo.register`` and its Python-named alias
``topology.codec.register`` turn classes named ``module:Class`` into codec extension types in every worker.

An entry is either a class name or a one-entry map ``{class name: serializer name}`` (Storm's two forms).  A
class alone is carried by its own ``to_bytes(self) -> bytes`` and ``from_bytes(cls, data)`` when it has both,
otherwise by its fields (its ``__dict__``, whose values the codec must carry; Storm's field serializer).  A
serializer is a class built without arguments whose ``to_bytes(obj)`` and ``from_bytes(data)`` do the work.
Classes get extension codes from :data:`FIRST_CODE` on, in the order of their names, so every worker of a
topology assigns the same codes (as Storm numbers its registrations in name order).  There is no fallback for
an unregistered class: the codec refuses it by name (docs/DESIGN.md says why pickle is not offered).

A class or serializer that does not import fails the submit, unless ``topology.skip.missing.kryo.registrations``
is true (Storm's key): then its registration is skipped with a warning naming it, at submit and in every worker.
A skipped class keeps its place in the numbering, so the other classes get the same codes wherever it is missing.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from storm_py.config.keys import setting
from storm_py.errors import ConfigError
from storm_py.protocol.codec import EXT_CODE_MAX, pack_value, register_ext, unpack_value

log = logging.getLogger(__name__)

REGISTER_KEYS: Final = ("topology.kryo.register", "topology.codec.register")
FALLBACK_KEY: Final = "topology.fall.back.on.java.serialization"
SKIP_MISSING_KEY: Final = "topology.skip.missing.kryo.registrations"
#: the first extension code given to a registered class (the lower codes are storm_py's own)
FIRST_CODE: Final = 32


@dataclass(frozen=True)
class Registration:
    """One class and how the codec carries it."""

    name: str
    code: int
    cls: type
    to_bytes: Callable[[Any], bytes]
    from_bytes: Callable[[bytes], Any]


def _find(name: str, key: str) -> Any:
    """The object named ``module:Name`` or ``module.Name``: ``ConfigError`` for a name of neither form,
    ``ImportError`` or ``AttributeError`` when there is no such object."""
    module, sep, attr = name.partition(":")
    if not sep:
        module, _, attr = name.rpartition(".")
    if not module or not attr:
        raise ConfigError(f"{key}: {name!r} is not a class name of the form 'module:Class'", key=key)
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def load(name: str, key: str) -> Any:
    """The object named ``module:Name`` (``module.Name`` is accepted too); a clear error when there is none."""
    try:
        return _find(name, key)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{key}: unknown class {name!r} ({exc})", key=key, name=name) from exc


def _load_or_skip(name: str, registered: str, key: str, skip: bool) -> Any | None:
    """``load(name)``, or ``None`` (logged, naming ``registered``) when it does not import and ``skip`` is set."""
    if not skip:
        return load(name, key)
    try:
        return _find(name, key)
    except (ImportError, AttributeError) as exc:
        what = "class" if name == registered else f"serializer {name!r} of the class"
        log.warning("%s: the %s %r does not import (%s); its registration is skipped, as %s is true",
                    key, what, registered, exc, SKIP_MISSING_KEY)
        return None


def entries(conf: Mapping[str, Any]) -> dict[str, str | None]:
    """``{class name: serializer name or None}`` of both keys, sorted by class name."""
    out: dict[str, str | None] = {}
    for key in REGISTER_KEYS:
        value = conf.get(key)
        if value is None:
            continue
        items = [value] if isinstance(value, dict) else value
        if not isinstance(items, list):
            raise ConfigError(f"{key} must be a list of class names or {{class: serializer}} maps", key=key)
        for item in items:
            if isinstance(item, str):
                out.setdefault(item, None)
            elif isinstance(item, dict) and all(isinstance(k, str) for k in item):
                for cls_name, ser in item.items():
                    if ser is not None and not isinstance(ser, str):
                        raise ConfigError(f"{key}: the serializer of {cls_name!r} must be a class name", key=key)
                    out[cls_name] = ser
            else:
                raise ConfigError(f"{key}: entry {item!r} is neither a class name nor a {{class: serializer}} map",
                                  key=key)
    return dict(sorted(out.items()))


def registrations(conf: Mapping[str, Any]) -> list[Registration]:
    """Resolve the registrations of ``conf``: load each class and pick how it is carried (pure but for imports)."""
    if conf.get(FALLBACK_KEY):
        raise ConfigError(
            f"{FALLBACK_KEY} is not supported: storm_py never pickles on the wire; register the classes with "
            f"{REGISTER_KEYS[0]} instead", key=FALLBACK_KEY)
    found = entries(conf)
    if FIRST_CODE + len(found) - 1 > EXT_CODE_MAX:
        raise ConfigError(f"{REGISTER_KEYS[0]}: at most {EXT_CODE_MAX - FIRST_CODE + 1} classes can be registered")
    skip = bool(setting(conf, SKIP_MISSING_KEY))
    out = []
    for i, (name, ser_name) in enumerate(found.items()):
        key = REGISTER_KEYS[0]
        cls = _load_or_skip(name, name, key, skip)
        if cls is None:
            continue
        if not isinstance(cls, type):
            raise ConfigError(f"{key}: {name!r} is not a class", key=key, name=name)
        if ser_name is not None:
            ser_cls = _load_or_skip(ser_name, name, key, skip)
            if ser_cls is None:
                continue
            ser = ser_cls()
            out.append(Registration(name, FIRST_CODE + i, cls, ser.to_bytes, ser.from_bytes))
        elif callable(getattr(cls, "to_bytes", None)) and callable(getattr(cls, "from_bytes", None)):
            own: Any = cls
            out.append(Registration(name, FIRST_CODE + i, cls, own.to_bytes, own.from_bytes))
        elif getattr(cls, "__dictoffset__", 0):  # its instances have a __dict__
            out.append(Registration(name, FIRST_CODE + i, cls, _fields_to_bytes, _fields_from_bytes(cls)))
        else:
            raise ConfigError(f"{key}: the codec cannot carry {name!r}: it has no fields (__dict__) and no "
                              f"to_bytes/from_bytes; name a serializer for it", key=key, name=name)
    return out


def apply(conf: Mapping[str, Any]) -> list[Registration]:
    """Register the classes of ``conf`` with the codec (a worker calls this before its tasks start)."""
    regs = registrations(conf)
    for reg in regs:
        try:
            register_ext(reg.code, reg.cls, reg.to_bytes, reg.from_bytes)
        except Exception as exc:
            raise ConfigError(f"{REGISTER_KEYS[0]}: the codec cannot carry {reg.name!r}: {exc}",
                              key=REGISTER_KEYS[0], name=reg.name) from exc
    return regs


def _fields_to_bytes(obj: Any) -> bytes:
    return pack_value(vars(obj))


def _fields_from_bytes(cls: Any) -> Callable[[bytes], Any]:
    def rebuild(data: bytes) -> Any:
        obj = cls.__new__(cls)
        obj.__dict__.update(unpack_value(data))
        return obj

    return rebuild
