"""This module owns storm-jdbc's value types: :class:`Types` (``java.sql.Types``' names and values),
:class:`Column` and :class:`JdbcError`."""

from __future__ import annotations

from typing import Any

from storm_py.errors import StormPyError


class JdbcError(StormPyError):
    """A database refused or could not run a statement, or a connection setting is wrong (the message carries the
    database's own words)."""

    code = "jdbc_error"


class Types:
    """``java.sql.Types``: the SQL type codes a :class:`Column` documents."""

    BIT = -7
    TINYINT = -6
    SMALLINT = 5
    INTEGER = 4
    BIGINT = -5
    FLOAT = 6
    REAL = 7
    DOUBLE = 8
    NUMERIC = 2
    DECIMAL = 3
    CHAR = 1
    VARCHAR = 12
    LONGVARCHAR = -1
    DATE = 91
    TIME = 92
    TIMESTAMP = 93
    BINARY = -2
    VARBINARY = -3
    BOOLEAN = 16
    OTHER = 1111


_UNSET = object()


class Column:
    """Storm's ``Column``: ``Column(column_name, sql_type)`` (a schema column) or ``Column(column_name, val,
    sql_type)`` (a value).  ``sql_type`` documents the column; the value goes to the driver as it is."""

    __slots__ = ("column_name", "sql_type", "val")

    def __init__(self, column_name: str, val: Any = _UNSET, sql_type: Any = _UNSET) -> None:
        if sql_type is _UNSET:
            # Column(name, sql_type): the two-argument form is a schema column
            sql_type, val = (None, None) if val is _UNSET else (val, None)
        elif val is _UNSET:
            val = None
        if not isinstance(column_name, str) or not column_name:
            raise ValueError(f"a column's name must be a non-empty string, got {column_name!r}")
        self.column_name = column_name
        self.val = val
        self.sql_type: int | None = sql_type

    def get_column_name(self) -> str:
        return self.column_name

    def get_val(self) -> Any:
        return self.val

    def get_sql_type(self) -> int | None:
        return self.sql_type

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Column):
            return NotImplemented
        return (self.column_name, self.val, self.sql_type) == (other.column_name, other.val, other.sql_type)

    def __hash__(self) -> int:
        return hash((self.column_name, self.sql_type))

    def __repr__(self) -> str:
        return f"Column({self.column_name!r}, {self.val!r}, {self.sql_type!r})"
