"""This module owns reading the schema a user gives a dataset: a ``{field: type}`` dict, a Schema or a pyarrow schema.

It sits above both :mod:`storm_py.spark.schema` (the pure schema) and :mod:`storm_py.spark.arrow` (pyarrow): a
pyarrow schema is converted by the arrow module, imported only then, so a dict or a Schema needs no pyarrow.
"""

from __future__ import annotations

from typing import Any

from storm_py.spark.schema import Schema, plain_schema


def coerce_schema(schema: Any) -> Schema:
    """A :class:`Schema` from a dict, a :class:`Schema`, or a pyarrow schema (converted by the arrow module)."""
    if type(schema).__module__.startswith("pyarrow"):
        from storm_py.spark.arrow import schema_from_arrow

        return schema_from_arrow(schema)
    return plain_schema(schema)


def is_arrow_data(value: Any) -> bool:
    """Whether ``value`` is a pyarrow object (a batch input's ``RecordBatch`` or ``Table``), told without
    importing pyarrow."""
    return type(value).__module__.startswith("pyarrow")
