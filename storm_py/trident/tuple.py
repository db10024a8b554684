"""Trident tuples: the values of one operation's output, read by position or by field name.

On the wire a Trident tuple travels as ``[attempt, v1, v2, ...]`` (the batch id first, as every tuple of a
transactional topology); inside a bolt it is a :class:`TridentTuple` over a shared :class:`Schema`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from storm_py.api.tuple import Fields
from storm_py.errors import InvalidTopologyException


class Schema:
    """The field names of one stream and their positions (shared by every tuple of the stream)."""

    __slots__ = ("fields", "index")

    def __init__(self, names: Iterable[str]) -> None:
        self.fields = Fields(list(names))
        self.index = {name: i for i, name in enumerate(self.fields)}

    def positions(self, names: Sequence[str], what: str) -> list[int]:
        """The positions of ``names``; an unknown name is an error naming ``what`` and the known fields."""
        try:
            return [self.index[n] for n in names]
        except KeyError as exc:
            raise InvalidTopologyException(
                f"{what}: no field {exc.args[0]!r} in the stream's fields {list(self.fields)}"
            ) from None

    def __repr__(self) -> str:
        return f"Schema({list(self.fields)!r})"


class TridentTuple:
    """One tuple of a Trident stream: ``values``, ``t[i]``, ``t["name"]``, ``get_value``, ``get_value_by_field``."""

    __slots__ = ("schema", "values")

    def __init__(self, values: list[Any], schema: Schema) -> None:
        self.values = values
        self.schema = schema

    @property
    def fields(self) -> Fields:
        """The tuple's field names."""
        return self.schema.fields

    def get_value(self, i: int) -> Any:
        """The value at position ``i``."""
        return self.values[i]

    def get_value_by_field(self, name: str) -> Any:
        """The value of field ``name``."""
        return self.values[self.schema.index[name]]

    def get_values(self) -> list[Any]:
        """Storm's accessor for :attr:`values`."""
        return self.values

    def select(self, names: Sequence[str]) -> list[Any]:
        """The values of ``names``, in that order."""
        index = self.schema.index
        return [self.values[index[n]] for n in names]

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self.values[self.schema.index[key]]
        return self.values[key]

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TridentTuple):
            return self.values == other.values
        if isinstance(other, list):
            return self.values == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TridentTuple({dict(zip(self.schema.fields, self.values, strict=False))!r})"


def as_names(fields: Fields | Sequence[str] | str | None, what: str) -> list[str]:
    """Field names from a :class:`Fields`, a list of names or one name."""
    if fields is None:
        return []
    if isinstance(fields, str):
        return [fields]
    names = [str(f) for f in fields]
    if len(set(names)) != len(names):
        raise InvalidTopologyException(f"{what}: duplicate field names in {names}")
    return names
