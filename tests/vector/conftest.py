"""The dev cluster fixture for the columnar acceptance tests."""

from tests.cluster.conftest import dev_cluster

__all__ = ["dev_cluster"]
