"""Shared fixtures of the Flux tests: the folder of Storm's example files and a writer for small definitions."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "configs"


@pytest.fixture
def configs() -> Path:
    return CONFIGS


@pytest.fixture
def on_path() -> Iterator[None]:
    """tests/flux first on sys.path: Storm's ``resource: true`` includes name ``/configs/...``."""
    sys.path.insert(0, str(HERE))
    try:
        yield
    finally:
        sys.path.remove(str(HERE))


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        return path

    return _write


WORDS = '''
name: "t"
spouts:
  - id: "spout-1"
    className: "org.apache.storm.testing.TestWordSpout"
bolts:
  - id: "bolt-1"
    className: "org.apache.storm.testing.TestWordCounter"
streams:
  - from: "spout-1"
    to: "bolt-1"
    grouping:
      type: FIELDS
      args: ["word"]
'''
