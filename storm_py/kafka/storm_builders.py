"""This module owns storm-kafka-client's builder-style classes, as Storm's Flux files construct them:
:class:`KafkaSpoutConfigBuilder` (``KafkaSpoutConfig$Builder``), :class:`DefaultTopicSelector`,
:class:`FieldNameBasedTupleToKafkaMapper` and :class:`StormKafkaBolt` (a :class:`KafkaBolt` built with no
arguments and configured by ``withProducerProperties``, ``withTopicSelector`` and ``withTupleToKafkaMapper``).

Kafka's ``StringDeserializer`` for ``key.deserializer``/``value.deserializer`` makes the spout emit text instead of
bytes; ``ByteArrayDeserializer`` keeps bytes.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from storm_py.api.components import OutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import DEFAULT_STREAM, Tuple
from storm_py.kafka.bolt import KafkaBolt, KafkaBoltError
from storm_py.kafka.client import KafkaRecord
from storm_py.kafka.config import (
    DEFAULT_FIELDS,
    KafkaConfigError,
    KafkaSpoutConfig,
    RecordTranslator,
    SimpleRecordTranslator,
    default_values,
)

STRING_DESERIALIZER: Final = "org.apache.kafka.common.serialization.StringDeserializer"
BYTES_DESERIALIZER: Final = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
_DESERIALIZERS: Final = {STRING_DESERIALIZER: True, BYTES_DESERIALIZER: False}


class _Decoding:
    """A translator seeing key and value decoded from UTF-8 where a ``StringDeserializer`` asks for it."""

    def __init__(self, inner: RecordTranslator, key: bool, value: bool) -> None:
        self.inner = inner
        self.key = key
        self.value = value

    def translate(self, record: KafkaRecord) -> tuple[str, list[Any]] | None:
        changes: dict[str, Any] = {}
        if self.key and record.key is not None:
            changes["key"] = record.key.decode("utf-8")
        if self.value and record.value is not None:
            changes["value"] = record.value.decode("utf-8")
        return self.inner.translate(dataclasses.replace(record, **changes) if changes else record)

    def streams(self) -> dict[str, list[str]]:
        return self.inner.streams()


class KafkaSpoutConfigBuilder:
    """Storm's ``KafkaSpoutConfig.Builder``: ``build()`` returns a :class:`KafkaSpoutConfig`."""

    def __init__(self, bootstrap_servers: str, topics: str | Sequence[str] | re.Pattern[str]) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topics = topics
        self.options: dict[str, Any] = {}
        self.consumer_options: dict[str, Any] = {}
        self._decode = {"key": False, "value": False}

    def set_first_poll_offset_strategy(self, strategy: str) -> KafkaSpoutConfigBuilder:
        self.options["first_poll_offset_strategy"] = str(strategy)
        return self

    def set_processing_guarantee(self, guarantee: str) -> KafkaSpoutConfigBuilder:
        self.options["processing_guarantee"] = str(guarantee)
        return self

    def set_offset_commit_period_ms(self, ms: int) -> KafkaSpoutConfigBuilder:
        self.options["offset_commit_period_ms"] = ms
        return self

    def set_max_uncommitted_offsets(self, n: int) -> KafkaSpoutConfigBuilder:
        self.options["max_uncommitted_offsets"] = n
        return self

    def set_poll_timeout_ms(self, ms: int) -> KafkaSpoutConfigBuilder:
        self.options["poll_timeout_ms"] = ms
        return self

    def set_record_translator(self, translator: Any, fields: Sequence[str] | None = None) -> KafkaSpoutConfigBuilder:
        """A :class:`RecordTranslator`, or a function ``record -> values`` with its ``fields``."""
        self.options["translator"] = translator
        if fields is not None:
            self.options["translator_fields"] = list(fields)
        return self

    def set_prop(self, key_or_map: str | Mapping[str, Any], value: Any = None) -> KafkaSpoutConfigBuilder:
        """Consumer properties: ``set_prop(map)`` or ``set_prop(key, value)``."""
        items = dict(key_or_map) if isinstance(key_or_map, Mapping) else {key_or_map: value}
        for key, val in items.items():
            if key == "group.id":
                self.options["group_id"] = str(val)
            elif key == "max.poll.records":
                self.options["max_poll_records"] = int(val)
            elif key in ("key.deserializer", "value.deserializer"):
                if val not in _DESERIALIZERS:
                    raise KafkaConfigError(f"{key} {val!r}: only {STRING_DESERIALIZER} (text) and "
                                           f"{BYTES_DESERIALIZER} (bytes) are supported")
                self._decode[key.partition(".")[0]] = _DESERIALIZERS[val]
            else:
                self.consumer_options[key] = val
        return self

    def build(self) -> KafkaSpoutConfig:
        options = dict(self.options)
        if self._decode["key"] or self._decode["value"]:
            inner = options.pop("translator", None)
            fields = options.pop("translator_fields", None)
            if inner is None:
                inner = SimpleRecordTranslator(default_values, list(DEFAULT_FIELDS))
            elif not hasattr(inner, "translate"):
                if not fields:
                    raise KafkaConfigError("a translator function needs its fields")
                inner = SimpleRecordTranslator(inner, fields, DEFAULT_STREAM)
            options["translator"] = _Decoding(inner, self._decode["key"], self._decode["value"])
        return KafkaSpoutConfig(self.bootstrap_servers, self.topics, consumer_options=dict(self.consumer_options),
                                **options)


def spout_config_from_builder(builder: KafkaSpoutConfigBuilder) -> KafkaSpoutConfig:
    """Storm's ``new KafkaSpoutConfig(builder)``: the builder's config."""
    if not isinstance(builder, KafkaSpoutConfigBuilder):
        raise KafkaConfigError(f"a KafkaSpoutConfig is built from a KafkaSpoutConfig$Builder, got {builder!r}")
    return builder.build()


class DefaultTopicSelector:
    """Storm's ``DefaultTopicSelector``: every tuple goes to one topic."""

    def __init__(self, topic: str) -> None:
        self.topic = topic

    def get_topic(self, tup: Tuple) -> str:
        return self.topic


class FieldNameBasedTupleToKafkaMapper:
    """Storm's ``FieldNameBasedTupleToKafkaMapper``: the key and the message from two fields."""

    def __init__(self, key_field: str = "key", message_field: str = "message") -> None:
        self.key_field = key_field
        self.message_field = message_field


class StormKafkaBolt(KafkaBolt):
    """Storm's ``KafkaBolt``, built with no arguments and configured by its ``with...`` methods; the Flux builder
    calls :meth:`check_configured` once the methods ran."""

    def __init__(self) -> None:  # KafkaBolt.__init__ runs in check_configured, once servers and topic are known
        self._producer_properties: dict[str, Any] = {}
        self._topic: str | Callable[[Tuple], str] | None = None
        self._mapper = FieldNameBasedTupleToKafkaMapper()

    def with_producer_properties(self, properties: Mapping[str, Any]) -> StormKafkaBolt:
        self._producer_properties = dict(properties)
        return self

    def with_topic_selector(self, selector: str | DefaultTopicSelector | Callable[[Tuple], str]) -> StormKafkaBolt:
        self._topic = selector.topic if isinstance(selector, DefaultTopicSelector) else selector
        return self

    def with_tuple_to_kafka_mapper(self, mapper: FieldNameBasedTupleToKafkaMapper) -> StormKafkaBolt:
        self._mapper = mapper
        return self

    def check_configured(self) -> None:
        """Complete the bolt; :class:`KafkaBoltError` when it has no servers or no topic."""
        options = dict(self._producer_properties)
        servers = options.pop("bootstrap.servers", None)
        if not servers:
            raise KafkaBoltError("the Kafka bolt has no 'bootstrap.servers' (withProducerProperties)")
        if self._topic is None:
            raise KafkaBoltError("the Kafka bolt has no topic (withTopicSelector)")
        KafkaBolt.__init__(self, str(servers), self._topic, self._mapper.key_field, self._mapper.message_field)
        self.producer_options = options

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        if not hasattr(self, "bootstrap_servers"):
            self.check_configured()
        super().prepare(conf, context, collector)
