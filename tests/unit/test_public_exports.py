"""The top-level package exports every windowing and managed-state name, as ``storm_py.windowing`` and
``storm_py.stateful`` do."""

from __future__ import annotations

import pytest

import storm_py
import storm_py.stateful
import storm_py.windowing

WINDOWING = ["BaseWindowedBolt", "Count", "Duration", "TupleWindow"]
STATEFUL = ["BaseStatefulBolt", "BaseStatefulWindowedBolt", "KeyValueState", "StatefulSpout"]


@pytest.mark.parametrize(("package", "name"), [(storm_py.windowing, n) for n in WINDOWING]
                         + [(storm_py.stateful, n) for n in STATEFUL])
def test_top_level_exports_the_subpackage_name(package: object, name: str) -> None:
    assert name in storm_py.__all__, f"storm_py.__all__ lacks {name}"
    assert getattr(storm_py, name) is getattr(package, name)


def test_tuple_window_imports_from_the_top_level() -> None:
    from storm_py import TupleWindow

    window = TupleWindow(["a"], ["a"], [], None, 5)
    assert list(window) == ["a"] and window.get_end_timestamp() == 5
