"""The Stream API's functional interfaces (Storm's ``org.apache.storm.streams.operations``): the bases users may
extend, the aggregator and state-updater contracts, the tuple mappers, :class:`Pair`, and :func:`as_function`, the
one place a user's callable or interface object is checked and turned into a plain function.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from storm_py.api.tuple import Tuple

# ----------------------------------------------------------------------------------------- interface contracts


@runtime_checkable
class HasApply(Protocol):
    """Storm's ``Function``, ``BiFunction``, ``Reducer``, ``ValueJoiner`` and mappers: ``apply``."""

    def apply(self, *args: Any) -> Any: ...


@runtime_checkable
class HasTest(Protocol):
    """Storm's ``Predicate``: ``test``."""

    def test(self, value: Any) -> Any: ...


@runtime_checkable
class HasAccept(Protocol):
    """Storm's ``Consumer``: ``accept``."""

    def accept(self, value: Any) -> None: ...


@runtime_checkable
class Aggregator(Protocol):
    """Storm's ``CombinerAggregator``: what ``aggregate`` and ``aggregate_by_key`` take."""

    def init(self) -> Any: ...

    def apply(self, accumulator: Any, value: Any) -> Any: ...

    def merge(self, acc1: Any, acc2: Any) -> Any: ...

    def result(self, accumulator: Any) -> Any: ...


@runtime_checkable
class Updater(Protocol):
    """Storm's ``StateUpdater``: what ``update_state_by_key`` takes."""

    def init(self) -> Any: ...

    def apply(self, state: Any, value: Any) -> Any: ...


#: the method each kind of interface object is called through, in preference to ``__call__``
_METHODS: dict[str, type] = {"apply": HasApply, "test": HasTest, "accept": HasAccept}


def as_function(obj: object, method: str, operation: str, what: str) -> Callable[..., Any]:
    """``obj`` as a plain function: its ``method`` when it has one, else ``obj`` itself when callable.

    Raises ``TypeError`` naming ``operation`` and ``what`` (``"function"``, ``"predicate"``, ...) otherwise.
    """
    if not isinstance(obj, type) and isinstance(obj, _METHODS[method]):
        bound: Callable[..., Any] = getattr(obj, method)
        return bound
    if callable(obj):
        return obj
    raise TypeError(f"{operation}: the {what} must be callable or have a {method}() method, got {obj!r}")


def as_aggregator(obj: object, operation: str) -> Aggregator:
    """``obj`` checked as a ``CombinerAggregator`` (``init``, ``apply``, ``merge``, ``result``)."""
    if isinstance(obj, type) or not isinstance(obj, Aggregator):
        raise TypeError(
            f"{operation}: the aggregator must have init(), apply(acc, value), merge(acc1, acc2) and result(acc)"
            f" (a CombinerAggregator), got {obj!r}"
        )
    return obj


def as_updater(obj: object, operation: str) -> Updater:
    """``obj`` checked as a ``StateUpdater`` (``init``, ``apply``)."""
    if isinstance(obj, type) or not isinstance(obj, Updater):
        raise TypeError(
            f"{operation}: the state updater must have init() and apply(state, value) (a StateUpdater), got {obj!r}"
        )
    return obj


# ----------------------------------------------------------------------------------------- bases for users


class Function:
    """Storm's ``Function``: ``apply(value)``."""

    def apply(self, value: Any) -> Any:
        """The result for ``value``."""
        raise NotImplementedError

    def __call__(self, value: Any) -> Any:
        return self.apply(value)


class PairFunction(Function):
    """Storm's ``PairFunction``: ``apply(value)`` returns a pair."""


class FlatMapFunction(Function):
    """Storm's ``FlatMapFunction``: ``apply(value)`` returns an iterable."""


class PairFlatMapFunction(Function):
    """Storm's ``PairFlatMapFunction``: ``apply(value)`` returns an iterable of pairs."""


class Predicate:
    """Storm's ``Predicate``: ``test(value)``."""

    def test(self, value: Any) -> bool:
        """Whether ``value`` passes."""
        raise NotImplementedError

    def __call__(self, value: Any) -> bool:
        return self.test(value)


class Consumer:
    """Storm's ``Consumer``: ``accept(value)``."""

    def accept(self, value: Any) -> None:
        """Consume ``value``."""
        raise NotImplementedError

    def __call__(self, value: Any) -> None:
        self.accept(value)


class BiFunction:
    """Storm's ``BiFunction``: ``apply(a, b)``."""

    def apply(self, a: Any, b: Any) -> Any:
        """The result for ``a`` and ``b``."""
        raise NotImplementedError

    def __call__(self, a: Any, b: Any) -> Any:
        return self.apply(a, b)


class Reducer(BiFunction):
    """Storm's ``Reducer``: ``apply(a, b)`` of two values of one type."""


class ValueJoiner:
    """Storm's ``ValueJoiner``: ``apply(value1, value2)``."""

    def apply(self, value1: Any, value2: Any) -> Any:
        """The joined value."""
        raise NotImplementedError

    def __call__(self, value1: Any, value2: Any) -> Any:
        return self.apply(value1, value2)


class PairValueJoiner(ValueJoiner):
    """Storm's default joiner: the two values as a pair."""

    def apply(self, value1: Any, value2: Any) -> Any:
        return (value1, value2)


class IdentityFunction(Function):
    """Storm's ``IdentityFunction``: the value itself."""

    def apply(self, value: Any) -> Any:
        return value


class PrintConsumer(Consumer):
    """Storm's ``PrintConsumer``: ``print(value)``."""

    def accept(self, value: Any) -> None:
        print(value)  # printing is this consumer's job


class CombinerAggregator:
    """Storm's ``CombinerAggregator``: ``init``, ``apply(acc, value)``, ``merge(acc1, acc2)``, ``result(acc)``."""

    def init(self) -> Any:
        """A fresh accumulator."""
        raise NotImplementedError

    def apply(self, accumulator: Any, value: Any) -> Any:
        """``accumulator`` with ``value`` added."""
        raise NotImplementedError

    def merge(self, acc1: Any, acc2: Any) -> Any:
        """Two partial accumulators combined."""
        raise NotImplementedError

    def result(self, accumulator: Any) -> Any:
        """What is emitted for ``accumulator`` (the accumulator itself by default)."""
        return accumulator

    @staticmethod
    def of(initial_value: Any, accumulator: Any, combiner: Any) -> CombinerAggregator:
        """An aggregator from a start value (deep-copied for each start), an accumulator and a combiner."""
        return _FunctionsAggregator(initial_value, as_function(accumulator, "apply", "aggregate", "accumulator"),
                                    as_function(combiner, "apply", "aggregate", "combiner"))


class _FunctionsAggregator(CombinerAggregator):
    def __init__(self, initial: Any, accumulate: Callable[[Any, Any], Any], combine: Callable[[Any, Any], Any]):
        self.initial = initial
        self.accumulate = accumulate
        self.combine = combine

    def init(self) -> Any:
        return copy.deepcopy(self.initial)

    def apply(self, accumulator: Any, value: Any) -> Any:
        return self.accumulate(accumulator, value)

    def merge(self, acc1: Any, acc2: Any) -> Any:
        return self.combine(acc1, acc2)


class StateUpdater:
    """Storm's ``StateUpdater``: ``init()`` and ``apply(state, value) -> state``."""

    def init(self) -> Any:
        """The state of a key before its first value."""
        raise NotImplementedError

    def apply(self, state: Any, value: Any) -> Any:
        """The new state."""
        raise NotImplementedError

    @staticmethod
    def of(initial_value: Any, function: Any) -> StateUpdater:
        """An updater from a start state (deep-copied for each key) and ``function(state, value)``."""
        return _FunctionUpdater(initial_value, as_function(function, "apply", "update_state_by_key", "function"))


class _FunctionUpdater(StateUpdater):
    def __init__(self, initial: Any, function: Callable[[Any, Any], Any]) -> None:
        self.initial = initial
        self.function = function

    def init(self) -> Any:
        return copy.deepcopy(self.initial)

    def apply(self, state: Any, value: Any) -> Any:
        return self.function(state, value)


# ----------------------------------------------------------------------------------------- pairs and mappers


class Pair(tuple[Any, Any]):
    """A ``(first, second)`` 2-tuple: ``Pair.of("a", 1) == ("a", 1)``."""

    __slots__ = ()

    @staticmethod
    def of(first: Any, second: Any) -> Pair:
        """The pair ``(first, second)``."""
        return Pair((first, second))

    @property
    def first(self) -> Any:
        """The key."""
        return self[0]

    @property
    def second(self) -> Any:
        """The value."""
        return self[1]

    value1 = first
    value2 = second

    def get_first(self) -> Any:
        """The key."""
        return self[0]

    def get_second(self) -> Any:
        """The value."""
        return self[1]


def _index(i: object, what: str) -> int:
    if isinstance(i, bool) or not isinstance(i, int):
        raise TypeError(f"{what}: a tuple index must be an int, got {i!r}")
    return i


class ValueMapper(Function):
    """``t[i]`` of a spout tuple."""

    def __init__(self, index: int) -> None:
        self.index = _index(index, "ValueMapper")

    def apply(self, value: Tuple) -> Any:
        return value.values[self.index]


class PairValueMapper(Function):
    """``(t[key_index], t[value_index])`` of a spout tuple: ``new_stream`` gives a ``PairStream``."""

    def __init__(self, key_index: int, value_index: int) -> None:
        self.key_index = _index(key_index, "PairValueMapper")
        self.value_index = _index(value_index, "PairValueMapper")

    def apply(self, value: Tuple) -> Any:
        values = value.values
        return (values[self.key_index], values[self.value_index])


class ValuesMapper(Function):
    """``[t[i] for i in indices]`` of a spout tuple."""

    def __init__(self, *indices: int) -> None:
        self.indices = [_index(i, "ValuesMapper") for i in indices]

    def apply(self, value: Tuple) -> Any:
        values = value.values
        return [values[i] for i in self.indices]


class TupleValueMapper(Function):
    """``(t[i1], ..., t[iN])`` of a spout tuple (Storm's ``TupleValueMappers``' results)."""

    def __init__(self, indices: list[int]) -> None:
        self.indices = indices

    def apply(self, value: Tuple) -> Any:
        values = value.values
        return tuple(values[i] for i in self.indices)


class TupleValueMappers:
    """Storm's ``TupleValueMappers.of(i1, ..., iN)`` (2 <= N <= 10)."""

    @staticmethod
    def of(*indices: int) -> TupleValueMapper:
        """A mapper to the N-tuple of those fields."""
        if not 2 <= len(indices) <= 10:
            raise ValueError(f"TupleValueMappers.of takes 2 to 10 indices, got {len(indices)}")
        return TupleValueMapper([_index(i, "TupleValueMappers.of") for i in indices])
