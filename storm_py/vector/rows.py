"""This module owns the rows of a batch tuple as tuples of their own: what a per-tuple component subscribed to a
columnar stream receives.

Each row becomes a :class:`~storm_py.api.tuple.Tuple` with the stream's fields, the row's Python values and the
batch's source, anchored to the batch tuple as if the batch tuple had emitted it: its edge is XORed into the
batch tuple's ack value, so once the batch tuple is acked its tree waits for every row, and a failed row fails
the tree.
"""

from __future__ import annotations

from storm_py.api.tuple import Tuple
from storm_py.runtime.ids import IdSource
from storm_py.vector.batches import row_values


def row_tuples(tup: Tuple, ids: IdSource | None) -> list[Tuple]:
    """The rows of batch tuple ``tup`` as tuples anchored to it (``ids``: the edge ids; ``None``: not anchored,
    as without ackers)."""
    rows = row_values(tup.values[0])
    fields = tup.fields
    comp = tup.source_component
    stream = tup.source_stream
    task = tup.source_task
    root = tup._root
    several = tup._ids
    if ids is None or (root is None and not several):
        return [Tuple(row, fields, comp, stream, task, None) for row in rows]
    out: list[Tuple] = []
    for row in rows:
        edge = ids.next()
        tup._ack_val ^= edge
        if root is not None:
            out.append(Tuple(row, fields, comp, stream, task, None, root, edge))
        else:
            assert several is not None
            out.append(Tuple(row, fields, comp, stream, task, {r: edge for r in several}))
    return out
