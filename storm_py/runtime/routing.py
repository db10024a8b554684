"""Per-task routing tables: for each output stream of a task, its fields, direct flag and target choosers."""

from __future__ import annotations

from typing import Any

from storm_py.api.tuple import Fields
from storm_py.runtime.groupers import Chooser, OneTarget


class StreamRoute:
    """Where one stream of one task goes."""

    __slots__ = ("choosers", "direct", "direct_targets", "emitted", "fields", "one", "single", "stream", "transferred")

    def __init__(
        self, stream: str, fields: Fields, direct: bool, choosers: list[Chooser], direct_targets: set[int]
    ) -> None:
        self.stream = stream
        self.fields = fields
        self.direct = direct
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
