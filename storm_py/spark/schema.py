"""A dataset's schema: ordered typed fields, the checks that keep bad rows out, and its fingerprint.

Pure Python (no pyarrow): the sink checks every batch here before anything is written.  A batch is checked a
column at a time (the set of Python types in a column, then ranges), so a clean batch costs a few C-speed passes
(in the compiled build one compiled pass per column, :func:`storm_py.spark.columns.checked_columns`); only a
batch that fails is looked at row by row to name each bad row and why.

Types: ``string``, ``int64``, ``float64``, ``bool``, ``timestamp`` (a :class:`datetime.datetime`; naive values
are taken as UTC), ``binary``.  A type ending in ``?`` (``"string?"``) allows ``None``; other fields require a
value.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from storm_py.errors import StormPyError
from storm_py.spark.columns import COMPILED, INT64_MAX, INT64_MIN, Allowed, checked_columns

TYPES = ("string", "int64", "float64", "bool", "timestamp", "binary")
#: the Python types a column of each type may hold (``int`` in a float64 column is widened)
ALLOWED: dict[str, frozenset[type]] = {
    "string": frozenset({str}),
    "int64": frozenset({int}),
    "float64": frozenset({float, int}),
    "bool": frozenset({bool}),
    "timestamp": frozenset({dt.datetime}),
    "binary": frozenset({bytes}),
}
#: types a partition column may have (their values become directory names)
PARTITION_TYPES = ("string", "int64", "bool")


class SchemaError(StormPyError, ValueError):
    """A schema (or a partition column) is not usable."""

    code = "schema_error"


@dataclass(frozen=True)
class Field:
    """One column: its name, type (one of :data:`TYPES`) and whether it may be null."""

    name: str
    type: str
    nullable: bool = False

    def spec(self) -> str:
        """The type as written in a schema dict (``"string?"`` when nullable)."""
        return self.type + ("?" if self.nullable else "")


class Schema:
    """Ordered fields; :meth:`check_rows` splits a batch into good rows and ``(row, reason)`` rejects."""

    def __init__(self, fields: Sequence[Field]) -> None:
        if not fields:
            raise SchemaError("a dataset schema needs at least one field")
        names = [f.name for f in fields]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise SchemaError(f"schema has duplicate fields: {dup}", fields=dup)
        for f in fields:
            if f.type not in TYPES:
                raise SchemaError(f"field {f.name!r} has unknown type {f.type!r} (one of {', '.join(TYPES)})",
                                  field=f.name)
            if not f.name or f.name.startswith(("_", ".")) or "/" in f.name or "=" in f.name:
                raise SchemaError(f"field name {f.name!r} is not usable (empty, leading '_' or '.', '/' or '=')",
                                  field=f.name)
        if "txid" in names:
            raise SchemaError("'txid' is reserved: the dataset adds it from the directory names", field="txid")
        self.fields = tuple(fields)
        self.names = tuple(names)
        #: the Python types each column may hold, ``None``'s included when nullable
        self._allowed = tuple(ALLOWED[f.type] | ({type(None)} if f.nullable else frozenset()) for f in fields)
        #: the same as three type slots per column, and which columns are int64 (for the compiled pass)
        self._slots = tuple(_slots(a) for a in self._allowed)
        self._int64 = tuple(f.type == "int64" for f in fields)

    @classmethod
    def from_dict(cls, spec: Mapping[str, str]) -> Schema:
        """``{"name": "string", "amount": "float64?", ...}`` in column order."""
        fields = []
        for name, type_ in spec.items():
            if not isinstance(type_, str):
                raise SchemaError(f"field {name!r}: type must be a string like 'int64', got {type_!r}", field=name)
            nullable = type_.endswith("?")
            fields.append(Field(str(name), type_.rstrip("?"), nullable))
        return cls(fields)

    def to_dict(self) -> dict[str, str]:
        """The dict form (what manifests store)."""
        return {f.name: f.spec() for f in self.fields}

    def fingerprint(self) -> str:
        """A stable hash of names, types and nullability, in order."""
        canon = json.dumps([[f.name, f.type, f.nullable] for f in self.fields], separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canon.encode()).hexdigest()[:32]

    def field(self, name: str) -> Field:
        """The field called ``name``."""
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(f"no field {name!r} in the schema (fields: {', '.join(self.names)})", field=name)

    def check_partition_by(self, partition_by: Iterable[str]) -> tuple[str, ...]:
        """The partition columns, each a non-null string, int64 or bool field."""
        cols = tuple(partition_by)
        for name in cols:
            f = self.field(name)
            if f.type not in PARTITION_TYPES or f.nullable:
                raise SchemaError(f"partition column {name!r} must be a non-null {'/'.join(PARTITION_TYPES)} "
                                  f"field, not {f.spec()}", field=name)
        if len(set(cols)) != len(cols):
            raise SchemaError(f"partition columns repeat: {list(cols)}")
        return cols

    def check_rows(self, rows: Sequence[Sequence[Any]]) -> tuple[list[Sequence[Any]], list[tuple[Sequence[Any], str]]]:
        """Split ``rows`` into the rows that fit (in order) and ``(row, reason)`` for those that do not."""
        good, bad, _ = self.check_batch(rows)
        return good, bad

    def check_batch(self, rows: Sequence[Sequence[Any]]) -> tuple[
            list[Sequence[Any]], list[tuple[Sequence[Any], str]], list[list[Any]]]:
        """:meth:`check_rows`, plus the good rows' columns (transposed once, for the writer)."""
        if not rows:
            return [], [], [[] for _ in self.fields]
        width = len(self.fields)
        if COMPILED and type(rows) is list:
            checked = checked_columns(rows, width, self._slots, self._int64)
            if checked is not None:
                return list(rows), [], checked
        if set(map(len, rows)) == {width}:
            columns = transpose(rows, width)
            if all(map(self._column_ok, self.fields, self._allowed, columns)):
                return list(rows), [], columns
        good: list[Sequence[Any]] = []
        bad: list[tuple[Sequence[Any], str]] = []
        for row in rows:
            reason = self.row_problem(row)
            if reason is None:
                good.append(row)
            else:
                bad.append((row, reason))
        return good, bad, transpose(good, width)

    def row_problem(self, row: Sequence[Any]) -> str | None:
        """Why ``row`` does not fit (``None`` when it does)."""
        if len(row) < len(self.fields):
            missing = [f.name for f in self.fields[len(row):]]
            return f"missing fields {missing}: {len(row)} values for {len(self.fields)} fields"
        if len(row) > len(self.fields):
            return f"{len(row)} values for {len(self.fields)} fields {list(self.names)}"
        for f, value in zip(self.fields, row, strict=True):
            problem = value_problem(f, value)
            if problem is not None:
                return problem
        return None

    @staticmethod
    def _column_ok(f: Field, allowed: frozenset[type], col: list[Any]) -> bool:
        if not allowed.issuperset(map(type, col)):
            return False
        if f.type == "int64" and col:
            ints = [v for v in col if v is not None] if f.nullable else col
            return not ints or (min(ints) >= INT64_MIN and max(ints) <= INT64_MAX)
        return True


def _slots(allowed: frozenset[type]) -> Allowed:
    """``allowed`` (one to three types) as three slots, sorted by name for a stable order."""
    types = sorted(allowed, key=lambda t: t.__name__)
    if not 1 <= len(types) <= 3:
        raise ValueError(f"a column allows one to three Python types, not {types}")
    return (types[0], types[min(1, len(types) - 1)], types[-1])


def transpose(rows: Sequence[Sequence[Any]], width: int) -> list[list[Any]]:
    """Columns of equally wide rows (one C-speed pass per column)."""
    return [list(map(itemgetter(i), rows)) for i in range(width)]


def value_problem(f: Field, value: Any) -> str | None:
    """Why ``value`` cannot be stored in field ``f`` (``None`` when it can)."""
    if value is None:
        return None if f.nullable else f"field {f.name!r}: null in a non-null {f.type} field"
    if type(value) not in ALLOWED[f.type]:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return f"field {f.name!r}: expected {f.type}, got {type(value).__name__} {shown}"
    if f.type == "int64" and not INT64_MIN <= value <= INT64_MAX:
        return f"field {f.name!r}: {value} is outside the int64 range"
    return None


def plain_schema(schema: Any) -> Schema:
    """A :class:`Schema` from a ``{field: type}`` dict or a :class:`Schema` (a pyarrow schema goes through
    :func:`storm_py.spark.resolve.coerce_schema`)."""
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, Mapping):
        return Schema.from_dict(schema)
    raise SchemaError(f"a dataset schema is a {{field: type}} dict or a pyarrow schema, not {type(schema).__name__}")
