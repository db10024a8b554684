"""storm-kafka-client's Trident spouts: ``KafkaTridentSpoutOpaque`` and ``KafkaTridentSpoutTransactional``.

They are this package's opaque and transactional Kafka spouts (:mod:`storm_py.kafka.transactional`: one
Kafka client owner, the same config, the same per-partition batch metadata ``{"topic", "partition",
"first_offset", "next_offset"}``, at most ``max_poll_records`` records per partition per batch), handed to
``TridentTopology.new_stream``, whose streams carry ``topic, partition, offset, key, value`` (the attempt the
transactional spouts put first stays out of Trident tuples).  The stream's txid keys the metadata
(``/transactional/<txid>/user/<partition>/``); ``parallelism_hint`` on the stream spreads the partitions over
that many emitter tasks.
"""

from __future__ import annotations

from storm_py.kafka.transactional import OpaqueKafkaSpout, TransactionalKafkaSpout


class KafkaTridentSpoutOpaque(OpaqueKafkaSpout):
    """An opaque Trident spout over Kafka: each batch continues from the last committed offsets; a partition
    that cannot be read emits nothing for the batch (use with an opaque state for exactly-once counts)."""


class KafkaTridentSpoutTransactional(TransactionalKafkaSpout):
    """A transactional Trident spout over Kafka: a replayed txid carries exactly the records of its first
    attempt (use with a transactional or opaque state for exactly-once counts)."""
