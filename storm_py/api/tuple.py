"""Tuples, field lists and message ids: the values flowing through a topology.

A :class:`Tuple` is built once per (emit, target task) on the hot path, so it is a slotted object whose
constructor takes positional arguments only; user-facing accessors are methods and properties on top.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

DEFAULT_STREAM: Final = "default"
SYSTEM_COMPONENT: Final = "__system"
SYSTEM_TASK_ID: Final = -1
TICK_STREAM: Final = "__tick"


class Fields:
    """An ordered list of field names: ``Fields("word", "count")`` or ``Fields(["word", "count"])``."""

    __slots__ = ("_index", "_names")

    def __init__(self, *names: str | Iterable[str]) -> None:
        if len(names) == 1 and not isinstance(names[0], str):
            flat = [str(n) for n in names[0]]
        else:
            flat = [str(n) for n in names]
        index: dict[str, int] = {}
        for i, n in enumerate(flat):
            if n in index:
                raise ValueError(f"duplicate field name {n!r} in {flat}")
            index[n] = i
        self._names = tuple(flat)
        self._index = index

    def __len__(self) -> int:
        return len(self._names)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __getitem__(self, i: int) -> str:
        return self._names[i]

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Fields):
            return self._names == other._names
        if isinstance(other, (list, tuple)):
            return list(self._names) == list(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._names)

    def __repr__(self) -> str:
        return f"Fields({list(self._names)!r})"

    def to_list(self) -> list[str]:
        """The names as a list."""
        return list(self._names)

    def index(self, name: str) -> int:
        """Position of ``name``; ``ValueError`` naming the field when absent."""
        try:
            return self._index[name]
        except KeyError:
            raise ValueError(f"field {name!r} does not exist in {list(self._names)}") from None

    def field_index(self, name: str) -> int:
        """Storm's ``fieldIndex``: the same as :meth:`index`."""
        return self.index(name)

    def contains(self, name: str) -> bool:
        """Whether ``name`` is one of the fields."""
        return name in self._index

    def select(self, fields: Fields | Sequence[str], values: Sequence[Any]) -> list[Any]:
        """The values of ``fields`` picked from ``values`` laid out as these fields."""
        return [values[self.index(f)] for f in fields]


class MessageId:
    """The anchors of a tuple: a map from spout-tuple root id to this tuple's edge id (Storm's ``MessageId``)."""

    __slots__ = ("anchors_to_ids",)

    def __init__(self, anchors_to_ids: dict[int, int] | None = None) -> None:
        self.anchors_to_ids: dict[int, int] = anchors_to_ids or {}

    def get_anchors(self) -> set[int]:
        """The root ids this tuple belongs to."""
        return set(self.anchors_to_ids)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MessageId) and other.anchors_to_ids == self.anchors_to_ids

    def __hash__(self) -> int:
        return hash(frozenset(self.anchors_to_ids.items()))

    def __repr__(self) -> str:
        return f"MessageId({self.anchors_to_ids!r})"


#: A root or edge id: an int.  Annotated ``Any`` on purpose: ids are dict keys and list items far more often
#: than operands, and compiled code (mypyc) would unbox an ``int`` and allocate a new int object at each of
#: those uses; as ``Any`` the int object itself is passed along, as in pure Python.
Id = Any

#: Anchors in their general form: ``None`` (not anchored), ``[root, edge]`` (one spout tuple) or ``{root: edge,
#: ...}`` (several).  A :class:`Tuple` keeps the one-anchor case, the common one, in two slots of its own
#: (no list per tuple); :func:`tuple_anchors` gives any tuple's anchors in this form.
Anchors = list[Id] | dict[Id, Id] | None


def anchor_map(ids: Anchors) -> dict[int, int]:
    """Anchors as a ``{root: edge}`` map."""
    if ids is None:
        return {}
    if type(ids) is list:
        return {ids[0]: ids[1]}
    return dict(ids)


def tuple_anchors(t: Tuple) -> Anchors:
    """The anchors of ``t`` in their general form (see :data:`Anchors`)."""
    return [t._root, t._edge] if t._root is not None else t._ids


def tuple_roots(t: Tuple) -> Sequence[int] | dict[int, int]:
    """The spout-tuple roots ``t`` is anchored to (iterable, without edges; empty when not anchored)."""
    return (t._root,) if t._root is not None else (t._ids or ())


class Tuple:
    """One tuple as a bolt sees it: values plus where it came from.

    ``t[0]``, ``t["word"]``, ``len(t)``, ``get_value(i)``, ``get_value_by_field(name)``, ``is_tick()``.

    Anchors come as ``ids`` (see :data:`Anchors`) or, for one spout tuple, as ``root`` and ``edge`` (what the
    runtime passes: no list is built).  Kept as ``_root``/``_edge`` for one anchor, ``_ids`` for several.
    """

    __slots__ = (
        "_ack_val", "_edge", "_ids", "_root", "fields", "source_component", "source_stream", "source_task", "values",
    )

    def __init__(
        self,
        values: list[Any],
        fields: Fields,
        source_component: str,
        source_stream: str,
        source_task: int,
        ids: Anchors,
        root: Id = None,
        edge: Id = None,
    ) -> None:
        self.values = values
        self.fields = fields
        self.source_component = source_component
        self.source_stream = source_stream
        self.source_task = source_task
        several: dict[Id, Id] | None = None
        if ids is None:  # what the runtime passes (a single anchor comes as root and edge)
            pass
        elif type(ids) is list:  # one anchor as a pair
            root, edge = ids
        elif len(ids) == 1:
            ((root, edge),) = ids.items()  # type: ignore[union-attr]
        elif ids:
            several = ids  # type: ignore[assignment]
        #: the one spout tuple this tuple is anchored to and its edge id (``None`` otherwise)
        self._root = root
        self._edge = edge
        #: ``{root: edge}`` when anchored to several spout tuples (``None`` otherwise)
        self._ids = several
        self._ack_val: int = 0  # XOR of the edges emitted anchored to this tuple (below 2**62: a machine int)

    @property
    def message_id(self) -> MessageId:
        """The tuple's :class:`MessageId` (empty when the tuple is not anchored to any spout tuple)."""
        return MessageId(anchor_map(tuple_anchors(self)))

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self.values[self.fields.index(key)]
        return self.values[key]

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.values)

    def __repr__(self) -> str:
        return (
            f"Tuple(source={self.source_component}:{self.source_task}, stream={self.source_stream}, "
            f"values={self.values!r})"
        )

    def get_value(self, i: int) -> Any:
        """The value at position ``i``."""
        return self.values[i]

    def get_value_by_field(self, name: str) -> Any:
        """The value of field ``name``."""
        return self.values[self.fields.index(name)]

    def get_values(self) -> list[Any]:
        """All values."""
        return self.values

    def get_fields(self) -> Fields:
        """The fields of the stream this tuple travels on."""
        return self.fields

    def contains(self, name: str) -> bool:
        """Whether the tuple has a field ``name``."""
        return self.fields.contains(name)

    def select(self, fields: Fields | Sequence[str]) -> list[Any]:
        """The values of ``fields``."""
        return self.fields.select(fields, self.values)

    def is_tick(self) -> bool:
        """Whether this is a tick tuple (component ``__system``, stream ``__tick``)."""
        return self.source_component == SYSTEM_COMPONENT and self.source_stream == TICK_STREAM

    # Storm-style aliases
    def get_source_component(self) -> str:
        """The component that emitted this tuple."""
        return self.source_component

    def get_source_stream_id(self) -> str:
        """The stream this tuple was emitted on."""
        return self.source_stream

    def get_source_task(self) -> int:
        """The task that emitted this tuple."""
        return self.source_task


def make_tick_tuple(freq_secs: float) -> Tuple:
    """A tick tuple as Storm sends it: from ``__system``, task -1, stream ``__tick``, values ``[freq]``."""
    return Tuple([freq_secs], TICK_FIELDS, SYSTEM_COMPONENT, TICK_STREAM, SYSTEM_TASK_ID, None)


TICK_FIELDS = Fields("rate_secs")
