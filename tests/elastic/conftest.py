"""Fixtures of the elastic tests: the Kafka broker of the Kafka tests and the dev clusters of the cluster tests."""

from __future__ import annotations

from tests.cluster.conftest import dev_cluster  # noqa: F401  (a fixture)
from tests.kafka.conftest import broker, kafka_broker  # noqa: F401  (fixtures)
