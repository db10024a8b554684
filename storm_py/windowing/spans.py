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

    def __init__(self, value: int) -> None:
        self.value: int = _count(value, "window count")

    @classmethod
    def of(cls, value: int) -> Count:
        """``Count(value)``."""
        return cls(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Count) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("count", self.value))

    def __repr__(self) -> str:
        return f"Count({self.value})"


class Duration:
    """A span of time in ms (``.value``): ``Duration(500)``, ``Duration.seconds(10)``, ``Duration.days(1)``."""

    __slots__ = ("value",)

    def __init__(self, millis: int) -> None:
        self.value: int = _count(millis, "window duration (ms)")

    @classmethod
    def of(cls, millis: int) -> Duration:
        """``Duration(millis)``."""
        return cls(millis)

    @classmethod
    def seconds(cls, secs: int) -> Duration:
        """``secs`` seconds."""
        return cls(_count(secs, "seconds") * 1000)

    @classmethod
    def minutes(cls, mins: int) -> Duration:
        """``mins`` minutes."""
        return cls(_count(mins, "minutes") * 60_000)

    @classmethod
    def hours(cls, hours: int) -> Duration:
        """``hours`` hours."""
        return cls(_count(hours, "hours") * 3_600_000)

    @classmethod
    def days(cls, days: int) -> Duration:
        """``days`` days."""
        return cls(_count(days, "days") * 86_400_000)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("duration", self.value))

    def __repr__(self) -> str:
        return f"Duration({self.value} ms)"
