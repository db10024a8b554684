"""Window lengths and sliding intervals: :class:`Count` (tuples) and :class:`Duration` (milliseconds)."""

from __future__ import annotations


def _count(value: object, what: str) -> int:
    """``value`` as a non-negative int (a window's length and sliding must be positive: the bolt checks that)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {value!r}")
    if value < 0:
        raise ValueError(f"{what} must not be negative, got {value}")
    return value


class Count:
    """A number of tuples: ``Count(10)`` or ``Count.of(10)``."""

    __slots__ = ("value",)

    def __init__(self, n: int) -> None:
        self.value: int = _count(n, "window count")

    @classmethod
    def of(cls, n: int) -> Count:
        """``Count(n)``."""
        return cls(n)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Count) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("count", self.value))

    def __repr__(self) -> str:
        return f"Count({self.value})"


class Duration:
    """A span of time in ms (``.value``): ``Duration(500)``, ``Duration.seconds(10)``, ``Duration.days(1)``."""

    __slots__ = ("value",)

    def __init__(self, ms: int) -> None:
        self.value: int = _count(ms, "window duration (ms)")

    @classmethod
    def of(cls, ms: int) -> Duration:
        """``Duration(ms)``."""
        return cls(ms)

    @classmethod
    def seconds(cls, s: int) -> Duration:
        """``s`` seconds."""
        return cls(_count(s, "seconds") * 1000)

    @classmethod
    def minutes(cls, m: int) -> Duration:
        """``m`` minutes."""
        return cls(_count(m, "minutes") * 60_000)

    @classmethod
    def hours(cls, h: int) -> Duration:
        """``h`` hours."""
        return cls(_count(h, "hours") * 3_600_000)

    @classmethod
    def days(cls, d: int) -> Duration:
        """``d`` days."""
        return cls(_count(d, "days") * 86_400_000)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("duration", self.value))

    def __repr__(self) -> str:
        return f"Duration({self.value} ms)"
