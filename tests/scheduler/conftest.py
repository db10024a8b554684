"""The cluster tests' fixtures (wheels, dev clusters) for the resource aware scheduler's acceptance test."""

from __future__ import annotations

from tests.cluster.conftest import dev_cluster, wheels

__all__ = ["dev_cluster", "wheels"]
