"""A module that does not import (a dependency missing from the wheel)."""

import a_dependency_that_is_not_in_the_wheel  # noqa: F401


def build() -> None:
    raise AssertionError("never reached")
