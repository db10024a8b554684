"""This module owns storm-jdbc's mappers: :class:`JdbcMapper` / :class:`SimpleJdbcMapper` (a tuple into one row
of an insert) and :class:`JdbcLookupMapper` / :class:`SimpleJdbcLookupMapper` (a tuple into a select's
parameters, each result row into output tuples)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from storm_py.api.components import OutputFieldsDeclarer
from storm_py.api.tuple import Fields, Tuple
from storm_py.jdbc.client import JdbcClient
from storm_py.jdbc.provider import ConnectionProvider
from storm_py.jdbc.types import Column, JdbcError
from storm_py.trident.tuple import TridentTuple


class JdbcMapper:
    """Storm's ``JdbcMapper``: ``get_columns(tup)`` is one row, in the order of the insert's placeholders."""

    def prepare(self) -> None:
        """Called by the bolt's ``prepare``: read what the mapper needs from the database."""

    def get_columns(self, tup: Tuple | TridentTuple) -> list[Column]:
        raise NotImplementedError


def _field_names(tup: Tuple | TridentTuple) -> list[str]:
    return tup.get_fields().to_list() if isinstance(tup, Tuple) else tup.fields.to_list()


def _value(tup: Tuple | TridentTuple, name: str) -> Any:
    """The tuple's field ``name`` (else the one of that name in another case); a missing field names itself."""
    try:
        return tup.get_value_by_field(name)
    except (KeyError, ValueError):
        pass
    names = _field_names(tup)
    if name not in names:
        lowered = [n for n in names if n.lower() == name.lower()]
        if not lowered:
            source = f" from {tup.source_component!r}" if isinstance(tup, Tuple) else ""
            raise JdbcError(f"tuple{source} has no field {name!r} (fields: {names})")
        name = lowered[0]
    return tup.get_value_by_field(name)


class SimpleJdbcMapper(JdbcMapper):
    """Storm's ``SimpleJdbcMapper``: ``SimpleJdbcMapper(table_name, provider)`` reads the table's columns (at the
    latest in the bolt's ``prepare``); ``SimpleJdbcMapper(column_schema)`` takes them as ``Column(name,
    sql_type)``.  Each column's value is the tuple's field of the same name."""

    def __init__(self, table_or_schema: str | Sequence[Column], provider: ConnectionProvider | None = None) -> None:
        self.table_name: str | None = None
        self.provider = provider
        self.schema: list[Column] | None = None
        if isinstance(table_or_schema, str):
            if provider is None:
                raise ValueError(f"SimpleJdbcMapper({table_or_schema!r}) needs a connection provider to read the "
                                 "table's columns")
            self.table_name = table_or_schema
        else:
            schema = list(table_or_schema)
            if not schema or not all(isinstance(c, Column) for c in schema):
                raise ValueError(f"a column schema is a non-empty list of Column, got {table_or_schema!r}")
            self.schema = schema

    def prepare(self) -> None:
        if self.schema is None:
            assert self.provider is not None and self.table_name is not None
            self.provider.prepare()
            self.schema = JdbcClient(self.provider).get_column_schema(self.table_name)

    def column_names(self) -> list[str]:
        self.prepare()
        assert self.schema is not None
        return [c.column_name for c in self.schema]

    def get_columns(self, tup: Tuple | TridentTuple) -> list[Column]:
        if self.schema is None:
            self.prepare()
        assert self.schema is not None
        return [Column(c.column_name, _value(tup, c.column_name), c.sql_type) for c in self.schema]


class JdbcLookupMapper(JdbcMapper):
    """Storm's ``JdbcLookupMapper``: ``get_columns(tup)`` the select's parameters, ``to_tuple(input, columns)``
    the output tuples of one result row, ``declare_output_fields``."""

    def to_tuple(self, input: Tuple | TridentTuple, columns: list[Column]) -> list[list[Any]]:
        raise NotImplementedError

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        raise NotImplementedError


class SimpleJdbcLookupMapper(JdbcLookupMapper):
    """Storm's ``SimpleJdbcLookupMapper(outputFields, queryColumns)``: the parameters are the input's fields named
    by ``query_columns``; each output field comes from the input when it has it, else from the row's column of
    that name (case-insensitive)."""

    def __init__(self, output_fields: Fields | Sequence[str], query_columns: Sequence[Column]) -> None:
        self.output_fields = output_fields if isinstance(output_fields, Fields) else Fields(list(output_fields))
        self.query_columns = list(query_columns)

    def get_columns(self, tup: Tuple | TridentTuple) -> list[Column]:
        return [Column(c.column_name, _value(tup, c.column_name), c.sql_type) for c in self.query_columns]

    def to_tuple(self, input: Tuple | TridentTuple, columns: list[Column]) -> list[list[Any]]:
        names = _field_names(input)
        by_name = {c.column_name.lower(): c.val for c in columns}
        values: list[Any] = []
        for name in self.output_fields:
            if name in names:
                values.append(input.get_value_by_field(name))
            elif name.lower() in by_name:
                values.append(by_name[name.lower()])
            else:
                raise JdbcError(f"output field {name!r} is neither a field of the input nor a column of the row "
                                f"(columns: {[c.column_name for c in columns]})")
        return [values]

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(self.output_fields)
