"""This module owns storm_py's version: a leaf every daemon can read without importing the package's API."""

from __future__ import annotations

from typing import Final

__version__: Final = "0.1.0"
