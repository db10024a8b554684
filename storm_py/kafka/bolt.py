"""KafkaBolt: writes tuples to a topic and acks each input only once the broker confirmed its record.

The topic is a name or a function of the tuple (Storm's ``TopicSelector``); key and value come from two fields
(Storm's ``FieldNameBasedTupleToKafkaMapper``); strings are encoded as UTF-8, other non-bytes values as their
``str``.  Delivery reports are served in the bolt's own thread: after every ``execute`` (without waiting) and on
tick tuples (every :data:`TICK_SECS`), so the last inputs of a burst are acked even when no more tuples come.
A delivery error, or a tuple that cannot be produced (missing field, bad topic), fails the input and is reported.

With :meth:`KafkaBolt.with_transactional_id_prefix` the bolt is an exactly-once sink under
``topology.state.guarantee: exactly_once`` (:mod:`storm_py.kafka.tx_producer`): each input is acked at once and its
record produced in the Kafka transaction of its checkpoint, when that commits.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from storm_py.api.components import Bolt, OutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.clock import SYSTEM_CLOCK, Clock
from storm_py.errors import StormPyError
from storm_py.kafka.client import KafkaClientError, KafkaProducerClient, KafkaTransactionalProducer
from storm_py.kafka.tx_producer import TransactionalOutput
from storm_py.stateful.state.key_value import KeyValueState

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
        self.transactional_id_prefix: str | None = None
        self.tx: TransactionalOutput | None = None
        self.clock: Clock = SYSTEM_CLOCK

    def with_transactional_id_prefix(self, prefix: str) -> KafkaBolt:
        """Make the bolt transactional: task ``i`` produces with ``transactional.id`` ``f"{prefix}-{i}"``, one
        transaction per checkpoint (needs ``topology.state.guarantee: exactly_once`` and a topic name)."""
        if not isinstance(prefix, str) or not prefix:
            raise KafkaBoltError(f"a transactional id prefix must be a non-empty string, got {prefix!r}")
        if not isinstance(self.topic, str):
            raise KafkaBoltError("a transactional KafkaBolt needs a topic name (its marker lives on partition 0)")
        self.transactional_id_prefix = prefix
        return self

    def takes_part_in_checkpoints(self) -> bool:
        return self.transactional_id_prefix is not None

    def requires_exactly_once(self) -> bool:
        return self.transactional_id_prefix is not None

    def get_component_configuration(self) -> dict[str, Any] | None:
        return {"topology.tick.tuple.freq.secs": TICK_SECS}

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.component_id = context.get_this_component_id()
        exactly_once = conf.get("topology.state.guarantee") == "exactly_once"
        if self.transactional_id_prefix is None:
            if exactly_once:
                log.warning("kafka bolt %s: no transactional id prefix, so its output stays at-least-once under "
                            "topology.state.guarantee exactly_once (duplicates possible after a rollback)",
                            self.component_id)
            self.producer = KafkaProducerClient(self.bootstrap_servers, self.producer_options)
            return
        if not exactly_once:
            raise KafkaBoltError(f"bolt {self.component_id!r}: a transactional KafkaBolt needs "
                                 "topology.state.guarantee exactly_once")
        tx_id = f"{self.transactional_id_prefix}-{context.get_this_task_index()}"
        producer = KafkaTransactionalProducer(self.bootstrap_servers, tx_id, self.producer_options)
        producer.init_transactions(30.0)  # fences a previous incarnation of this task
        self.producer = producer
        assert isinstance(self.topic, str)
        self.tx = TransactionalOutput(producer, self.topic, self._report, self.clock)

    def _report(self, message: str) -> None:
        err = KafkaBoltError(f"bolt {self.component_id!r}: {message}")
        log.warning("%s", err.message)
        self.collector.report_error(err)

    def init_state(self, state: KeyValueState) -> None:
        assert self.tx is not None
        self.tx.restore(state)

    def pre_prepare(self, txid: int) -> None:
        assert self.tx is not None
        self.tx.seal(txid)

    def pre_commit(self, txid: int) -> None:
        assert self.tx is not None
        self.tx.commit(txid)

    def pre_rollback(self) -> None:
        assert self.tx is not None
        self.tx.rollback()

    def execute(self, tup: Tuple) -> None:
        if self.tx is not None:
            self._execute_transactional(tup)
            return
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

    def _execute_transactional(self, tup: Tuple) -> None:
        assert self.tx is not None
        if tup.is_tick():
            self.tx.write_due()
            return
        try:
            topic = self.topic if isinstance(self.topic, str) else self.topic(tup)
            key = to_bytes(tup.get_value_by_field(self.key_field)) if self.key_field else None
            value = to_bytes(tup.get_value_by_field(self.value_field))
        except (KeyError, ValueError, TypeError) as err:
            self._report(f"cannot write tuple from {tup.source_component} to Kafka (left out): {err}")
        else:
            self.tx.add((topic, key, value))
        self.collector.ack(tup)

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
        if isinstance(self.producer, KafkaTransactionalProducer):
            self.producer.close()
        left = self.producer.flush(5.0)
        if left:
            log.warning("kafka bolt: %d records were not confirmed at shutdown (their inputs time out and replay)",
                        left)
