"""Trident's operation interfaces: functions, filters and the three aggregator kinds.

* :class:`BaseFunction` — ``execute(tuple, collector)``; what it emits is appended to the input tuple.
* :class:`BaseFilter` — ``is_keep(tuple)``.
* :class:`CombinerAggregator` — ``init(tuple)``, ``combine(a, b)``, ``zero()``; planned in two phases (a partial
  aggregate before the repartition, the combine after), as Storm does.
* :class:`ReducerAggregator` — ``init()``, ``reduce(curr, tuple)``.
* :class:`BaseAggregator` — ``init(batch_id, collector)``, ``aggregate(state, tuple, collector)``,
  ``complete(state, collector)``.

Every operation may also define ``prepare(conf, context)`` and ``cleanup()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from storm_py.trident.tuple import TridentTuple


class TridentCollector(Protocol):
    """What operations emit through: ``emit(values)`` (no batch id, no stream) and ``report_error``."""

    def emit(self, values: Sequence[Any]) -> None: ...

    def report_error(self, exc: BaseException) -> None: ...


class Operation:
    """The life cycle every Trident operation shares."""

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        """Called once per task before the first batch."""

    def cleanup(self) -> None:
        """Called when the task shuts down."""


class BaseFunction(Operation):
    """Storm's ``BaseFunction``: emits zero or more value lists per input; each is appended to the input."""

    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        """Process one tuple (projected to the operation's input fields)."""
        raise NotImplementedError(f"{type(self).__name__} must implement execute")


class BaseFilter(Operation):
    """Storm's ``BaseFilter``: keeps the tuples for which ``is_keep`` is true."""

    def is_keep(self, tuple: TridentTuple) -> bool:
        """Whether to keep the tuple (projected to the filter's input fields)."""
        raise NotImplementedError(f"{type(self).__name__} must implement is_keep")


class CombinerAggregator(Operation):
    """Storm's ``CombinerAggregator``: ``init`` maps a tuple to a value, ``combine`` merges two, ``zero`` is
    the value of no tuple (an empty batch aggregates to ``zero()``)."""

    def init(self, tuple: TridentTuple) -> Any:
        """The value of one tuple."""
        raise NotImplementedError(f"{type(self).__name__} must implement init")

    def combine(self, a: Any, b: Any) -> Any:
        """Merge two values."""
        raise NotImplementedError(f"{type(self).__name__} must implement combine")

    def zero(self) -> Any:
        """The value of no tuple."""
        raise NotImplementedError(f"{type(self).__name__} must implement zero")


class ReducerAggregator(Operation):
    """Storm's ``ReducerAggregator``: ``reduce`` folds tuples into a value starting from ``init()``."""

    def init(self) -> Any:
        """The starting value."""
        raise NotImplementedError(f"{type(self).__name__} must implement init")

    def reduce(self, curr: Any, tuple: TridentTuple) -> Any:
        """Fold one tuple into ``curr``."""
        raise NotImplementedError(f"{type(self).__name__} must implement reduce")


class BaseAggregator(Operation):
    """Storm's ``BaseAggregator``: a state per batch (per group), emitting through the collector."""

    def init(self, batch_id: Any, collector: TridentCollector) -> Any:
        """The state of a new batch (``batch_id`` is the batch's transaction attempt)."""
        raise NotImplementedError(f"{type(self).__name__} must implement init")

    def aggregate(self, state: Any, tuple: TridentTuple, collector: TridentCollector) -> None:
        """Fold one tuple into ``state`` (mutating it), emitting if needed."""
        raise NotImplementedError(f"{type(self).__name__} must implement aggregate")

    def complete(self, state: Any, collector: TridentCollector) -> None:
        """The batch (group) is complete: emit the result."""
        raise NotImplementedError(f"{type(self).__name__} must implement complete")


def is_filter(op: object) -> bool:
    """Whether ``op`` is a filter (a :class:`BaseFilter` or anything with ``is_keep``)."""
    return isinstance(op, BaseFilter) or callable(getattr(op, "is_keep", None))
