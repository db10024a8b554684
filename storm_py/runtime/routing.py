"""Per-task routing tables: for each output stream of a task, its fields, direct flag and target choosers, and
for a columnar stream how its batches are split (:class:`~storm_py.vector.routing.ColumnarRoute`)."""

from __future__ import annotations

from typing import Any

from storm_py.api.tuple import Fields
from storm_py.runtime.groupers import Chooser, OneTarget
from storm_py.vector.routing import ColumnarRoute


class StreamRoute:
    """Where one stream of one task goes."""

    __slots__ = ("choosers", "columnar", "direct", "direct_targets", "emitted", "fields", "offpath", "one", "single",
                 "stream", "transferred")

    def __init__(
        self, stream: str, fields: Fields, direct: bool, choosers: list[Chooser], direct_targets: set[int],
        columnar: ColumnarRoute | None = None,
    ) -> None:
        self.stream = stream
        self.fields = fields
        self.direct = direct
        #: how batches of a columnar stream are split (``None``: a stream of tuples)
        self.columnar = columnar
        #: an emit on the stream leaves the per-tuple path: a direct or a columnar stream (decided here, once,
        #: so the per-tuple emit tests one flag, as it tested ``direct`` alone)
        self.offpath = direct or columnar is not None
        self.choosers = choosers
        self.direct_targets = direct_targets
        self.single: Chooser | None = choosers[0] if len(choosers) == 1 else None
        #: the single chooser when it picks exactly one target per tuple
        self.one: OneTarget | None = self.single if isinstance(self.single, OneTarget) else None
        #: tuples this task emitted on the stream, and sent (one per target task): the per-stream statistics
        self.emitted = 0
        self.transferred = 0

    def choose(self, task: int, values: list[Any]) -> list[int]:
        """Target tasks for one tuple (all non-direct subscribers)."""
        single = self.single
        if single is not None:
            return single.choose(task, values)
        out: list[int] = []
        for c in self.choosers:
            out.extend(c.choose(task, values))
        return out
