"""wait_until takes any predicate a Python user would write: truthiness decides, in the pure and compiled builds."""
import pytest

from storm_py.clock import wait_until
from storm_py.errors import WaitTimeoutError


def test_a_predicate_returning_a_non_empty_list_holds():
    calls: list[int] = []

    def seen() -> list[int]:
        calls.append(1)
        return calls if len(calls) >= 3 else []

    wait_until(seen, 5, interval=0.001, what="three calls")
    assert len(calls) == 3


def test_a_falsy_predicate_times_out_naming_what_it_waited_for():
    with pytest.raises(WaitTimeoutError, match="the empty list"):
        wait_until(lambda: [], 0.05, interval=0.001, what="the empty list")
