"""The sink's per-value passes over a batch, written for the compiled build: rows to type-checked columns, and
timestamps to microseconds since the epoch.

Standard library only.  The compiled build compiles this module (``storm_py.build.HOT_MODULES``), where one
typed loop per column costs a fraction of what the C-level ``map`` passes of :mod:`storm_py.spark.schema` and
pyarrow's conversion of ``datetime`` objects cost (pyarrow calls ``utcoffset()`` in Python for every aware
value).  Interpreted, these loops are slower than those passes, so callers take them only when
:data:`COMPILED` says this module runs compiled.  Both functions answer ``None`` when they cannot decide
exactly (a row or value outside their fast path); the caller then takes the general path, so the result never
depends on which build runs.
"""

from __future__ import annotations

import datetime as dt
from importlib.machinery import EXTENSION_SUFFIXES
from typing import Any, Final

#: whether this module runs compiled (a C extension), i.e. whether its loops beat the general path
COMPILED: Final = __file__.endswith(tuple(EXTENSION_SUFFIXES))

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
#: inside this bound an int is a machine word in the compiled code: compared without big-int arithmetic
_SMALL: Final = 2**61
_UTC: Final = dt.UTC
#: ``date(1970, 1, 1).toordinal()``
_EPOCH_DAY: Final = 719163

#: the types one column may hold, as three slots (a type repeated when fewer are allowed): compared by identity,
#: so a subclass (``bool`` in an int64 column, a ``str`` subclass) is not taken
Allowed = tuple[type, type, type]


def checked_columns(rows: list[Any], width: int, allowed: tuple[Allowed, ...],
                    int64: tuple[bool, ...]) -> list[list[Any]] | None:
    """The columns of ``rows`` when every row is a list of ``width`` values whose types are among its column's
    ``allowed`` (exactly, not subclasses) and, in the columns marked ``int64``, every int is in the int64 range;
    ``None`` otherwise (some row is not a list or does not fit: the caller checks row by row)."""
    lists: list[list[Any]] = []
    for r in rows:
        if type(r) is not list or len(r) != width:
            return None
        lists.append(r)
    out: list[list[Any]] = []
    for i in range(width):
        a, b, c = allowed[i]
        col: list[Any] = []
        for row in lists:
            v = row[i]
            t = type(v)
            if t is not a and t is not b and t is not c:
                return None
            col.append(v)
        if int64[i] and not _in_int64(col):
            return None
        out.append(col)
    return out


def _in_int64(col: list[Any]) -> bool:
    for v in col:
        if v is not None:
            n: int = v
            if not -_SMALL < n < _SMALL and not INT64_MIN <= n <= INT64_MAX:
                return False
    return True


def epoch_micros(col: list[Any]) -> list[Any] | None:
    """Microseconds since 1970-01-01 UTC of each ``datetime`` in ``col`` (``None`` stays ``None``), naive
    values taken as UTC; ``None`` for the whole column when a value has another time zone than UTC (the caller
    converts that column the general way)."""
    out: list[Any] = []
    for v in col:
        if v is None:
            out.append(None)
            continue
        d: dt.datetime = v
        tz = d.tzinfo
        if tz is not None and tz is not _UTC:
            return None
        days = d.toordinal() - _EPOCH_DAY
        out.append((((days * 24 + d.hour) * 60 + d.minute) * 60 + d.second) * 1_000_000 + d.microsecond)
    return out
