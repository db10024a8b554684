"""KafkaBolt: writes tuples to a topic and acks each input only once the broker confirmed its record.

The topic is a name or a function of the tuple (Storm's ``TopicSelector``); key and value come from two fields
(Storm's ``FieldNameBasedTupleToKafkaMapper``); strings are encoded as UTF-8, other non-bytes values as their
``str``.  Delivery reports are served in the bolt's own thread: after every ``execute`` (without waiting) and on
tick tuples (every :data:`TICK_SECS`), so the last inputs of a burst are acked even when no more tuples come.
A delivery error, or a tuple that cannot be produced (missing field, bad topic), fails the input and is reported.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from storm_py.api.components import Bolt, OutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.errors import StormPyError
from storm_py.kafka.client import KafkaClientError, KafkaProducerClient

log = logging.getLogger(__name__)

#: tick tuples serve delivery reports this often when no tuples arrive (seconds)
TICK_SECS = 0.1
#: records queued but unconfirmed beyond which ``execute`` waits for deliveries
MAX_IN_FLIGHT = 100_000


class KafkaBoltError(StormPyError):
    """A tuple could not be written to Kafka (the message names the topic and the cause)."""

    code = "kafka_bolt_error"


def to_bytes(value: Any) -> bytes | None:
    """A key or value as bytes: bytes as is, str as UTF-8, None as None, anything else as its str."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return str(value).encode("utf-8")


class KafkaBolt(Bolt):
    """Storm's ``KafkaBolt``: ``topic`` a name or ``tup -> name``; key/value from fields."""

    def __init__(self, bootstrap_servers: str, topic: str | Callable[[Tuple], str], key_field: str | None = "key",
                 value_field: str = "value", **producer_options: Any) -> None:
        if not isinstance(bootstrap_servers, str) or not bootstrap_servers.strip():
            raise KafkaBoltError(f"bootstrap_servers must be a 'host:port,...' string, got {bootstrap_servers!r}")
        if not (isinstance(topic, str) and topic) and not callable(topic):
            raise KafkaBoltError(f"topic must be a topic name or a function of the tuple, got {topic!r}")
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.key_field = key_field
        self.value_field = value_field
        self.producer_options: Mapping[str, Any] = {k.replace("_", "."): v for k, v in producer_options.items()}
        self.delivered = 0
        self.delivery_errors = 0

    def get_component_configuration(self) -> dict[str, Any] | None:
        return {"topology.tick.tuple.freq.secs": TICK_SECS}

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.producer = KafkaProducerClient(self.bootstrap_servers, self.producer_options)

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self.producer.poll(0)
            return
        try:
            topic = self.topic if isinstance(self.topic, str) else self.topic(tup)
            key = to_bytes(tup.get_value_by_field(self.key_field)) if self.key_field else None
            value = to_bytes(tup.get_value_by_field(self.value_field))
            self.producer.produce(topic, key, value, self._on_delivery(tup))
        except (KafkaClientError, KeyError, ValueError, TypeError) as err:
            self._failed(tup, f"cannot write tuple from {tup.source_component} to Kafka: {err}")
            return
        if len(self.producer) > MAX_IN_FLIGHT:
            self.producer.poll(0.1)
        else:
            self.producer.poll(0)

    def _on_delivery(self, tup: Tuple) -> Callable[[str | None, str, int, int], None]:
        def delivered(error: str | None, topic: str, partition: int, offset: int) -> None:
            self._delivered(tup, error, topic)

        return delivered

    def _delivered(self, tup: Tuple, error: str | None, topic: str) -> None:
        if error is None:
            self.delivered += 1
            self.collector.ack(tup)
        else:
            self.delivery_errors += 1
            self._failed(tup, f"delivery to topic {topic!r} failed: {error}")

    def _failed(self, tup: Tuple, message: str) -> None:
        err = KafkaBoltError(message)
        log.warning("kafka bolt: %s", message)
        self.collector.report_error(err)
        self.collector.fail(tup)

    def cleanup(self) -> None:
        left = self.producer.flush(5.0)
        if left:
            log.warning("kafka bolt: %d records were not confirmed at shutdown (their inputs time out and replay)",
                        left)
