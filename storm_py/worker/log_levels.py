"""This module owns a worker's dynamic log levels (Storm's ``set_log_level``): what to set and what to restore.

Nimbus keeps a topology's requested levels as ``{logger: {"target_level", "reset_level", "timeout_epoch"}}``
(``ROOT`` is the root logger; ``timeout_epoch`` is wall-clock seconds, or None for no timeout).
:class:`LogLevels` is the pure core: given that config, ``now`` and the loggers' current levels it returns the
changes to make, remembering each logger's level from before its first change so that an expired or removed
entry puts it back (or to ``reset_level`` when one was given).  :func:`apply` drives Python's ``logging``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

ROOT = "ROOT"
LEVELS = {"ALL": logging.NOTSET, "TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
          "WARN": logging.WARNING, "WARNING": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL,
          "CRITICAL": logging.CRITICAL, "OFF": logging.CRITICAL + 10}


def level_number(name: Any) -> int | None:
    """A level name (Storm's or Python's, any case) as a number; None when unknown."""
    return LEVELS.get(str(name).upper()) if name is not None else None


class LogLevels:
    """Decides level changes from a topology's log config; remembers levels to restore."""

    def __init__(self) -> None:
        self.original: dict[str, int] = {}

    def changes(self, config: Mapping[str, Any], now: float, current: Callable[[str], int]) -> list[tuple[str, int]]:
        """The ``(logger, level)`` changes wanted at ``now``."""
        wanted: dict[str, int] = {}
        reset: dict[str, int] = {}
        for name, entry in config.items():
            if not isinstance(entry, Mapping):
                continue
            target = level_number(entry.get("target_level"))
            back = level_number(entry.get("reset_level"))
            if back is not None:
                reset[name] = back
            timeout = entry.get("timeout_epoch")
            expired = isinstance(timeout, (int, float)) and timeout > 0 and now >= timeout
            if target is not None and not expired:
                wanted[name] = target
        out: list[tuple[str, int]] = []
        for name, level in wanted.items():
            if name not in self.original:
                self.original[name] = current(name)
            if current(name) != level:
                out.append((name, level))
        for name in [n for n in self.original if n not in wanted]:
            level = reset.get(name, self.original.pop(name))
            self.original.pop(name, None)
            if current(name) != level:
                out.append((name, level))
        return out


def _logger(name: str) -> logging.Logger:
    return logging.getLogger() if name == ROOT else logging.getLogger(name)


def apply(levels: LogLevels, config: Mapping[str, Any], now: float) -> list[tuple[str, int]]:
    """Make the changes :meth:`LogLevels.changes` decides on Python's loggers; return them."""
    changes = levels.changes(config, now, lambda name: _logger(name).level)
    for name, level in changes:
        _logger(name).setLevel(level)
    return changes
