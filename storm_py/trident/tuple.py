"""Trident tuples: the values of one operation's output, read by position or by field name.

On the wire a Trident tuple travels as ``[attempt, v1, v2, ...]`` (the batch id first, as every tuple of a
transactional topology); inside a bolt it is a :class:`TridentTuple`: a list of the values that knows its
stream's :class:`Schema`.  Each schema has its own subclass (``schema.make``) whose constructor is the list's
own, so a processor builds a tuple per input without a Python call, and ``get_value`` is list indexing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from storm_py.api.tuple import Fields
from storm_py.errors import InvalidTopologyException


class Schema:
    """The field names of one stream and their positions (shared by every tuple of the stream)."""

    __slots__ = ("fields", "index", "make")

    def __init__(self, names: Iterable[str]) -> None:
        self.fields = Fields(list(names))
        self.index = {name: i for i, name in enumerate(self.fields)}
        #: ``make(values)``: a :class:`TridentTuple` of this schema over a copy of ``values`` (no Python call)
        self.make: Callable[[Iterable[Any]], TridentTuple] = _tuple_type(self)

    def positions(self, names: Sequence[str], what: str) -> list[int]:
        """The positions of ``names``; an unknown name is an error naming ``what`` and the known fields."""
        try:
            return [self.index[n] for n in names]
        except KeyError as exc:
            raise InvalidTopologyException(
                f"{what}: no field {exc.args[0]!r} in the stream's fields {list(self.fields)}"
            ) from None

    def __reduce__(self) -> tuple[Any, ...]:
        return (Schema, (list(self.fields),))  # the per-schema tuple type is made again, not pickled

    def __repr__(self) -> str:
        return f"Schema({list(self.fields)!r})"


class TridentTuple(list[Any]):
    """One tuple of a Trident stream: ``values``, ``t[i]``, ``t["name"]``, ``get_value``, ``get_value_by_field``.

    It is the list of its values (``values`` is the tuple itself); equal to another Trident tuple or a list
    with the same values; unhashable, as a list.
    """

    __slots__ = ("_schema",)
    #: the schema of a per-schema subclass (``Schema.make``); an instance built directly keeps its own
    schema: ClassVar[Schema]

    def __init__(self, values: Iterable[Any], schema: Schema) -> None:
        super().__init__(values)
        self._schema = schema

    @property
    def values(self) -> list[Any]:
        """The tuple's values (the tuple itself: a list)."""
        return self

    @property
    def fields(self) -> Fields:
        """The tuple's field names."""
        return self._of().fields

    def _of(self) -> Schema:
        return self._schema if type(self) is TridentTuple else type(self).schema

    #: the value at position ``i`` (list indexing, in C)
    get_value = list.__getitem__

    def get_value_by_field(self, name: str) -> Any:
        """The value of field ``name``."""
        return list.__getitem__(self, self._of().index[name])

    def get_values(self) -> list[Any]:
        """Storm's accessor for :attr:`values`."""
        return self

    def select(self, names: Sequence[str]) -> list[Any]:
        """The values of ``names``, in that order."""
        index = self._of().index
        return [list.__getitem__(self, index[n]) for n in names]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return list.__getitem__(self, self._of().index[key])
        return list.__getitem__(self, key)

    def __reduce__(self) -> tuple[Any, ...]:
        return (TridentTuple, (list(self), self._of()))

    def __repr__(self) -> str:
        return f"TridentTuple({dict(zip(self._of().fields, self, strict=False))!r})"


def _tuple_type(schema: Schema) -> type[TridentTuple]:
    """The subclass of :class:`TridentTuple` whose instances belong to ``schema``, constructed as a list."""
    return type("TridentTuple", (TridentTuple,), {"__slots__": (), "schema": schema, "__init__": list.__init__})


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
