"""This module owns the pure SQL text work of storm-jdbc: Storm's ``?`` placeholders rewritten to a driver's
paramstyle (a ``?`` inside a quoted literal, a quoted identifier or a comment stays), and the insert statement
built from a table's column names."""

from __future__ import annotations

from collections.abc import Sequence


def rewrite_placeholders(query: str, paramstyle: str) -> str:
    """``query`` with each bare ``?`` in ``paramstyle`` (DB-API: ``qmark``, ``format``, ``pyformat``, ``numeric``,
    ``named``); for the ``format`` styles every ``%`` is doubled (the driver reads them everywhere)."""
    return _rewrite(query, paramstyle)[0]


def count_placeholders(query: str) -> int:
    """How many bare ``?`` ``query`` holds."""
    return _rewrite(query, "qmark")[1]


def _rewrite(query: str, paramstyle: str) -> tuple[str, int]:
    if paramstyle not in ("qmark", "format", "pyformat", "numeric", "named"):
        raise ValueError(f"unknown DB-API paramstyle {paramstyle!r}")
    out: list[str] = []
    i, n, count = 0, len(query), 0
    percent = paramstyle in ("format", "pyformat")
    while i < n:
        ch = query[i]
        if ch in ("'", '"'):
            end = _closing(query, i + 1, ch)
            out.append(_escaped(query[i:end], percent))
            i = end
            continue
        if query.startswith("--", i):
            end = query.find("\n", i)
            end = n if end < 0 else end
            out.append(_escaped(query[i:end], percent))
            i = end
            continue
        if query.startswith("/*", i):
            end = query.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(_escaped(query[i:end], percent))
            i = end
            continue
        if ch == "?":
            count += 1
            out.append({"qmark": "?", "format": "%s", "pyformat": "%s", "numeric": f":{count}",
                        "named": f":p{count}"}[paramstyle])
        elif ch == "%" and percent:
            out.append("%%")
        else:
            out.append(ch)
        i += 1
    return "".join(out), count


def _escaped(text: str, percent: bool) -> str:
    return text.replace("%", "%%") if percent else text


def _closing(query: str, start: int, quote: str) -> int:
    """The index just past the quote closing a literal or identifier opened before ``start`` (doubled quotes are
    escapes)."""
    i = start
    while True:
        j = query.find(quote, i)
        if j < 0:
            return len(query)
        if query.startswith(quote * 2, j):
            i = j + 2
            continue
        return j + 1


def insert_query(table_name: str, column_names: Sequence[str]) -> str:
    """Storm's insert built from a table's columns: ``INSERT INTO t (a,b) VALUES (?,?)``."""
    if not column_names:
        raise ValueError(f"an insert into {table_name!r} needs at least one column")
    return f"INSERT INTO {table_name} ({','.join(column_names)}) VALUES ({','.join('?' * len(column_names))})"
