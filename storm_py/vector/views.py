"""This module owns the views of a batch as the data-frame libraries' frames: pandas and Polars."""

from __future__ import annotations

import importlib
from typing import Any

import pyarrow as pa


def _library(name: str) -> Any:
    """The module ``name``, or an ``ImportError`` naming the package to install."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise ImportError(f"{name} is not installed: install the package {name!r} (pip install {name}) to view "
                          "batches as its data frames") from err


def as_pandas(batch: pa.RecordBatch | pa.Table) -> Any:
    """``batch`` as a ``pandas.DataFrame`` (without copying where Arrow allows it)."""
    _library("pandas")
    return batch.to_pandas()


def as_polars(batch: pa.RecordBatch | pa.Table) -> Any:
    """``batch`` as a ``polars.DataFrame`` (without copying where Arrow allows it)."""
    polars = _library("polars")
    return polars.from_arrow(batch)
