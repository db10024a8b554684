"""storm_py.kafka: Kafka spouts and bolt with storm-kafka / storm-kafka-client semantics (``docs/REFERENCE.md``).

* :class:`KafkaSpout` (:class:`KafkaSpoutConfig`): at-least-once reading with per-partition offset managers,
  retries with backoff, a dead-letter stream, offsets committed to Kafka or kept in ZooKeeper.
* :class:`KafkaBolt`: writes tuples, acking each input once the broker confirmed it.
* :class:`TransactionalKafkaSpout` and :class:`OpaqueKafkaSpout`: partitioned spouts for
  ``TransactionalTopologyBuilder``.
* :class:`KafkaTridentSpoutOpaque` and :class:`KafkaTridentSpoutTransactional`: the same as Trident spouts
  (``TridentTopology.new_stream``).

Needs the ``kafka`` extra (``pip install 'storm_py[kafka]'``).  The Kafka client is imported only by
:mod:`storm_py.kafka.client`.
"""

from storm_py.kafka.bolt import KafkaBolt, KafkaBoltError
from storm_py.kafka.client import KafkaClientError, KafkaRecord
from storm_py.kafka.config import (
    DEAD_LETTER_FIELDS,
    DEAD_LETTER_STREAM,
    DEFAULT_FIELDS,
    ByTopicRecordTranslator,
    KafkaConfigError,
    KafkaSpoutConfig,
    RecordTranslator,
    SimpleRecordTranslator,
)
from storm_py.kafka.spout import KafkaMessageId, KafkaSpout, KafkaSpoutError
from storm_py.kafka.storm_builders import (
    DefaultTopicSelector,
    FieldNameBasedTupleToKafkaMapper,
    KafkaSpoutConfigBuilder,
)
from storm_py.kafka.transactional import OpaqueKafkaSpout, TransactionalKafkaSpout
from storm_py.kafka.trident import KafkaTridentSpoutOpaque, KafkaTridentSpoutTransactional

__all__ = [
    "DEAD_LETTER_FIELDS",
    "DEAD_LETTER_STREAM",
    "DEFAULT_FIELDS",
    "ByTopicRecordTranslator",
    "DefaultTopicSelector",
    "FieldNameBasedTupleToKafkaMapper",
    "KafkaBolt",
    "KafkaBoltError",
    "KafkaClientError",
    "KafkaConfigError",
    "KafkaMessageId",
    "KafkaRecord",
    "KafkaSpout",
    "KafkaSpoutConfig",
    "KafkaSpoutConfigBuilder",
    "KafkaSpoutError",
    "KafkaTridentSpoutOpaque",
    "KafkaTridentSpoutTransactional",
    "OpaqueKafkaSpout",
    "RecordTranslator",
    "SimpleRecordTranslator",
    "TransactionalKafkaSpout",
]
