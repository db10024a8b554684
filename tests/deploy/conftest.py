"""The container engine the deployment tests share (Docker where its daemon answers, else podman)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.deploy.containers import Engine, open_engine, unavailable_reason


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    reason = unavailable_reason()
    assert reason is None, reason
    engine = open_engine()
    try:
        yield engine
    finally:
        engine.close()
