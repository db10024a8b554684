"""The fixtures of the columnar Kafka tests: the Kafka tests' broker and the Spark tests' session."""

from tests.kafka.conftest import broker, kafka_broker  # noqa: F401 (fixtures)
from tests.spark.conftest import spark  # noqa: F401 (fixture)
