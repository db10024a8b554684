"""Suite-wide setup: the ZooKeeper fixture, and the unit tier (tests/unit: pure cores, seconds) run first."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["tests.zk_fixture", "tests.redis_fixture"]

_UNIT = Path(__file__).parent / "unit"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the unit tier before the process tier (a stable sort: each tier keeps its own order)."""
    items.sort(key=lambda item: 0 if _UNIT in Path(item.path).parents else 1)
