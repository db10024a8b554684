from __future__ import annotations

from pathlib import Path

import pytest

from tests.streamparse.projects import quickstart

pytest.importorskip("streamparse")


@pytest.fixture(scope="session")
def wordcount_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """streamparse's quickstart project, made once (tests copy it before changing anything)."""
    return quickstart(tmp_path_factory.mktemp("quickstart"))
