"""This module owns :class:`AnchoredCollector`, the collector a user's basic bolt wrapped by either guarantee's bolt
(checkpoint forwarder or aligned executor) emits through when that bolt runs it itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from storm_py.api.components import OutputCollector
from storm_py.api.tuple import DEFAULT_STREAM, Tuple


class AnchoredCollector:
    """The collector a wrapped :class:`BasicBolt` emits through: every emit anchored to the current input."""

    def __init__(self, collector: OutputCollector) -> None:
        self._collector = collector
        self.input: Tuple | None = None

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> list[int]:
        return self._collector.emit(values, self.input, stream)

    def emit_direct(self, task_id: int, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        self._collector.emit_direct(task_id, values, anchors=self.input, stream=stream)

    def report_error(self, exc: BaseException) -> None:
        self._collector.report_error(exc)
