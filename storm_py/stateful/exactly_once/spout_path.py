"""This module owns the per-call path of a :class:`~storm_py.stateful.api.spout.StatefulSpout` under
exactly_once: :class:`UntrackedSpoutCollector`, the collector the spout emits through (no tuple trees: the
checkpoint, not the acker, decides what is replayed), and :class:`PollGate`, which stands for the wrapper's
``next_tuple`` (it looks at the checkpoint spout's decision every poll interval, and otherwise calls the spout's
own ``next_tuple`` straight away).  A compiled build compiles this module: both run for every tuple a spout emits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from storm_py.api.tuple import DEFAULT_STREAM
from storm_py.runtime.spout_executor import SpoutCollector


class UntrackedSpoutCollector(SpoutCollector):
    """A spout task's own collector whose emits carry no message id (no tuple tree), whatever the spout gives."""

    __slots__ = ()

    def __init__(self, parent: SpoutCollector) -> None:
        super().__init__(parent._ex, parent._task, parent._spout)

    def emit(self, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> list[int]:
        return super().emit(values, None, stream)

    def emit_batch(self, batch: Sequence[Sequence[Any]], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> int:
        return super().emit_batch(batch, None, stream)

    def emit_direct(
        self, task_id: int, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM
    ) -> None:
        super().emit_direct(task_id, values, None, stream)


class PollGate:
    """A stateful spout's ``next_tuple``: ``poll(now)`` once ``now()`` reaches ``next_poll`` (the poll sets the
    next one, and says whether to go on), then the spout's own ``spout_next_tuple`` once it is set (the spout
    started)."""

    def __init__(self, now: Callable[[], float], poll: Callable[[float], bool]) -> None:
        self.now = now
        self.poll = poll
        self.next_poll = float("-inf")
        self.spout_next_tuple: Callable[[], None] | None = None

    def next_tuple(self) -> None:
        now = self.now()
        if now >= self.next_poll and not self.poll(now):
            return
        run = self.spout_next_tuple
        if run is not None:
            run()
