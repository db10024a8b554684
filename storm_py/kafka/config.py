"""This module owns the Kafka spout's configuration (``KafkaSpoutConfig``) and its record translators.

Options and defaults follow storm-kafka-client's ``KafkaSpoutConfig`` (and storm-kafka's ``SpoutConfig`` for the
ZooKeeper offsets mode), in snake_case. Deliberate differences, for a Python process: ``offset_commit_period_ms``
5000 (not 30000: a smaller replay window), ``max_uncommitted_offsets`` 100000 per partition (not 10 million; a
partition at the limit commits its acked prefix at once instead of waiting for the period), ``poll_timeout_ms`` 20
(not 200: a spout must not block its executor; an empty poll returns at once to let acks in). Every option is
checked here, and an error names the option.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from storm_py.api.tuple import DEFAULT_STREAM
from storm_py.errors import StormPyError
from storm_py.kafka.client import KafkaRecord
from storm_py.kafka.columnar import JSON, RECORD_SCHEMA, is_schema
from storm_py.kafka.offsets import RetryPolicy

DEFAULT_FIELDS = ["topic", "partition", "offset", "key", "value"]
DEAD_LETTER_STREAM = "dead_letter"
DEAD_LETTER_FIELDS = ["topic", "partition", "offset", "key", "value", "error"]

FIRST_POLL_STRATEGIES = ("EARLIEST", "LATEST", "UNCOMMITTED_EARLIEST", "UNCOMMITTED_LATEST")
PROCESSING_GUARANTEES = ("AT_LEAST_ONCE", "AT_MOST_ONCE", "NO_GUARANTEE")
OFFSETS_STORES = ("kafka", "zookeeper")
#: storm-kafka's ``startOffsetTime`` constants
EARLIEST_TIME = -2
LATEST_TIME = -1


class KafkaConfigError(StormPyError):
    """A Kafka spout or bolt option has a value that cannot work (the message names the option)."""

    code = "kafka_config_error"


class RecordTranslator(Protocol):
    """Turns a record into ``(stream, values)``, or None to skip it (it is then acked at once)."""

    def translate(self, record: KafkaRecord) -> tuple[str, list[Any]] | None: ...

    def streams(self) -> dict[str, list[str]]: ...


def default_values(record: KafkaRecord) -> list[Any]:
    """Storm's ``DefaultRecordTranslator``: ``[topic, partition, offset, key, value]``."""
    return [record.topic, record.partition, record.offset, record.key, record.value]


class SimpleRecordTranslator:
    """A function ``record -> values | None`` emitting on one stream with ``fields`` (Storm's namesake)."""

    def __init__(self, func: Callable[[KafkaRecord], Sequence[Any] | None], fields: Sequence[str],
                 stream: str = DEFAULT_STREAM) -> None:
        self.func = func
        self.fields = list(fields)
        self.stream = stream

    def translate(self, record: KafkaRecord) -> tuple[str, list[Any]] | None:
        values = self.func(record)
        if values is None:
            return None
        values = list(values)
        if len(values) != len(self.fields):
            raise ValueError(f"the translator returned {len(values)} values for fields {self.fields}")
        return self.stream, values

    def streams(self) -> dict[str, list[str]]:
        return {self.stream: self.fields}


class ByTopicRecordTranslator:
    """Per-topic translators (each on its own stream), with a fallback for other topics (Storm's namesake)."""

    def __init__(self, by_topic: Mapping[str, RecordTranslator], default: RecordTranslator | None = None) -> None:
        self.by_topic = dict(by_topic)
        self.default = default
        seen: dict[str, list[str]] = {}
        for translator in [*self.by_topic.values(), *([default] if default else [])]:
            for stream, fields in translator.streams().items():
                if stream in seen and seen[stream] != fields:
                    raise KafkaConfigError(f"stream {stream!r} is declared with fields {seen[stream]} and {fields}")
                seen[stream] = fields
        self._streams = seen

    def translate(self, record: KafkaRecord) -> tuple[str, list[Any]] | None:
        translator = self.by_topic.get(record.topic, self.default)
        if translator is None:
            raise ValueError(f"no translator for topic {record.topic!r}")
        return translator.translate(record)

    def streams(self) -> dict[str, list[str]]:
        return dict(self._streams)


class DefaultTranslator:
    """Storm's ``DefaultRecordTranslator``: fields ``topic, partition, offset, key, value`` on ``default``."""

    def translate(self, record: KafkaRecord) -> tuple[str, list[Any]] | None:
        return DEFAULT_STREAM, [record.topic, record.partition, record.offset, record.key, record.value]

    def streams(self) -> dict[str, list[str]]:
        return {DEFAULT_STREAM: list(DEFAULT_FIELDS)}


def _positive(name: str, value: Any, allow_zero: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise KafkaConfigError(f"{name} must be a {'non-negative' if allow_zero else 'positive'} number, got {value!r}")


def _choice(name: str, value: Any, choices: Sequence[str]) -> str:
    if value not in choices:
        raise KafkaConfigError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return str(value)


@dataclass
class KafkaSpoutConfig:
    """What a Kafka spout reads and how.

    Args:
        bootstrap_servers: ``"host:port,..."``.
        topics: topic names, or a compiled regex matched against the whole topic name.
        group_id: the consumer group offsets are committed under (default: ``storm-py.<topology>.<component>``).
        first_poll_offset_strategy: where a partition starts when this topology has no commit for it.
        processing_guarantee: ``AT_LEAST_ONCE`` (tracked, acked prefix committed), ``AT_MOST_ONCE`` (committed
            before emitting, untracked), ``NO_GUARANTEE`` (untracked, fetched offsets committed periodically).
        offset_commit_period_ms: how often acked offsets are committed.
        max_uncommitted_offsets: per partition, how many emitted offsets may wait for their commit before the
            partition takes no new records (retries always go through); a partition at the limit commits its
            acked prefix at once rather than at the next period.
        retry_initial_delay_ms, retry_delay_multiplier, retry_max_delay_ms, max_retries: the backoff of failed
            tuples; past ``max_retries`` (None: forever) a record goes to stream ``dead_letter`` and counts done.
        poll_timeout_ms: the longest one poll waits.
        max_poll_records: records per poll (and the most one ``next_tuple`` emits).
        records_per_tree: AT_LEAST_ONCE only: how many consecutive records of one partition may share one tuple
            tree (one message id, one acker entry, one ``ack``).  1, the default, tracks every record on its own
            as storm-kafka-client does.  Larger trees cut the tracking cost per record (``BENCHMARKS.md``); a tree
            that fails or times out sends each of its records again at once as a tree of its own, without
            counting a retry against any of them, and halves its partition's tree size (each acked tree doubles
            it back), so retries, backoff and the dead-letter stream stay per record.  The price: the records of
            a failed tree that had been processed are processed again, and ``topology.max.spout.pending``
            counts trees.
        translator: ``record -> list | None``, or a :class:`RecordTranslator` (e.g. per-topic streams).
        translator_fields: the fields of a function translator's values; translator_stream: its stream.
        dead_letter_on_translator_error: a record the translator cannot handle goes to ``dead_letter`` at once
            (True) or is retried like a failed tuple (False).
        partition_refresh_period_ms: how often the topic's partitions are listed (new ones are picked up).
        consumer_options: more librdkafka consumer properties (``enable.auto.commit`` is refused); they override
            the spout's own ``fetch.wait.max.ms`` 100 and ``fetch.queue.backoff.ms`` 10 (librdkafka's 1,000 left a
            spout that drains its prefetch queue with nothing to poll for a second at a time).
        offsets_store: ``"kafka"`` or ``"zookeeper"`` (storm-kafka's znodes ``<zk_root>/<zk_id>/partition_<n>``).
        zk_root, zk_id: the ZooKeeper offsets path (``zk_id`` defaults to the group id).
        ignore_zk_offsets: for a *new topology id*, start from ``start_offset_time`` instead of the znode.
        start_offset_time: -2 earliest, -1 latest, or a timestamp in ms.
        max_offset_behind: at start, a stored offset further behind ``start_offset_time`` than this is skipped
            (logged at WARN, counted); None: never.
        metrics_time_bucket_secs: the metrics' reporting interval.
        columnar: emit one Arrow record batch per poll per partition on ``translator_stream`` (a columnar stream
            of :data:`~storm_py.kafka.columnar.RECORD_SCHEMA`), with ``(topic, partition, first_offset,
            last_offset)`` as its message id; guarantees, commits, ``max_uncommitted_offsets`` (in records),
            retries and the dead-letter stream (one batch with an ``error`` column) apply per batch.
        batch_translator: columnar only: ``RecordBatch -> RecordBatch | Table`` applied to each batch before it
            is emitted, or ``"json"`` (each value one JSON object, read into ``batch_schema``'s columns).
        batch_schema: the ``pyarrow.Schema`` of the translated batches (required with ``batch_translator``).
    """

    bootstrap_servers: str
    topics: Sequence[str] | re.Pattern[str]
    group_id: str | None = None
    first_poll_offset_strategy: str = "UNCOMMITTED_EARLIEST"
    processing_guarantee: str = "AT_LEAST_ONCE"
    offset_commit_period_ms: int = 5000
    max_uncommitted_offsets: int = 100_000
    retry_initial_delay_ms: float = 0
    retry_delay_multiplier: float = 2.0
    retry_max_delay_ms: float = 10_000
    max_retries: int | None = None
    poll_timeout_ms: float = 20
    max_poll_records: int = 500
    records_per_tree: int = 1
    translator: Callable[[KafkaRecord], Sequence[Any] | None] | RecordTranslator | None = None
    translator_fields: Sequence[str] | None = None
    translator_stream: str = DEFAULT_STREAM
    dead_letter_on_translator_error: bool = True
    partition_refresh_period_ms: int = 2000
    consumer_options: Mapping[str, Any] = field(default_factory=dict)
    offsets_store: str = "kafka"
    zk_root: str = "/kafka-spout"
    zk_id: str | None = None
    ignore_zk_offsets: bool = False
    start_offset_time: int = EARLIEST_TIME
    max_offset_behind: int | None = None
    metrics_time_bucket_secs: int = 60
    columnar: bool = False
    batch_translator: Callable[[Any], Any] | str | None = None
    batch_schema: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.bootstrap_servers, str) or not self.bootstrap_servers.strip():
            raise KafkaConfigError(
                f"bootstrap_servers must be a 'host:port,...' string, got {self.bootstrap_servers!r}")
        if isinstance(self.topics, str):
            self.topics = [self.topics]
        if not isinstance(self.topics, re.Pattern):
            self.topics = list(self.topics)
            if not self.topics or not all(isinstance(t, str) and t for t in self.topics):
                raise KafkaConfigError(
                    f"topics must be a non-empty list of names or a compiled regex, got {self.topics!r}")
        _choice("first_poll_offset_strategy", self.first_poll_offset_strategy, FIRST_POLL_STRATEGIES)
        _choice("processing_guarantee", self.processing_guarantee, PROCESSING_GUARANTEES)
        _choice("offsets_store", self.offsets_store, OFFSETS_STORES)
        _positive("offset_commit_period_ms", self.offset_commit_period_ms)
        _positive("max_uncommitted_offsets", self.max_uncommitted_offsets)
        _positive("retry_initial_delay_ms", self.retry_initial_delay_ms, allow_zero=True)
        _positive("retry_delay_multiplier", self.retry_delay_multiplier)
        _positive("retry_max_delay_ms", self.retry_max_delay_ms, allow_zero=True)
        _positive("poll_timeout_ms", self.poll_timeout_ms, allow_zero=True)
        _positive("max_poll_records", self.max_poll_records)
        _positive("records_per_tree", self.records_per_tree)
        if not isinstance(self.records_per_tree, int):
            raise KafkaConfigError(f"records_per_tree must be a whole number, got {self.records_per_tree!r}")
        _positive("partition_refresh_period_ms", self.partition_refresh_period_ms)
        _positive("metrics_time_bucket_secs", self.metrics_time_bucket_secs)
        if self.max_retries is not None:
            _positive("max_retries", self.max_retries, allow_zero=True)
        if self.max_offset_behind is not None:
            _positive("max_offset_behind", self.max_offset_behind, allow_zero=True)
        if not isinstance(self.start_offset_time, int) or self.start_offset_time < -2:
            raise KafkaConfigError(f"start_offset_time must be -2 (earliest), -1 (latest) or a timestamp in ms, "
                                   f"got {self.start_offset_time!r}")
        if str(self.consumer_options.get("enable.auto.commit", "false")).lower() == "true":
            raise KafkaConfigError("consumer_options: enable.auto.commit is not allowed; the spout commits offsets")
        if not self.zk_root.startswith("/"):
            raise KafkaConfigError(f"zk_root must be an absolute path, got {self.zk_root!r}")
        if callable(self.translator) and not hasattr(self.translator, "translate") and not self.translator_fields:
            raise KafkaConfigError("a translator function needs translator_fields (the fields of its values)")
        self._check_columnar()

    def _check_columnar(self) -> None:
        if not isinstance(self.columnar, bool):
            raise KafkaConfigError(f"columnar must be True or False, got {self.columnar!r}")
        if self.columnar:
            for name, set_ in (("translator", self.translator is not None),
                               ("translator_fields", self.translator_fields is not None),
                               ("records_per_tree", self.records_per_tree > 1)):
                if set_:
                    raise KafkaConfigError(f"columnar=True and {name} cannot be used together (a columnar spout "
                                           f"emits batches: use batch_translator)")
        elif self.batch_translator is not None or self.batch_schema is not None:
            raise KafkaConfigError("batch_translator and batch_schema need columnar=True")
        if self.batch_translator is not None:
            if self.batch_translator != JSON and not callable(self.batch_translator):
                raise KafkaConfigError(f"batch_translator must be a callable (RecordBatch -> RecordBatch | Table) "
                                       f"or 'json', got {self.batch_translator!r}")
            if self.batch_schema is None:
                raise KafkaConfigError("batch_translator needs batch_schema (the pyarrow.Schema of its output)")
        if self.batch_schema is not None:
            if not is_schema(self.batch_schema) or not len(self.batch_schema):
                raise KafkaConfigError(f"batch_schema must be a non-empty pyarrow.Schema, got {self.batch_schema!r}")
            if self.batch_translator is None:
                raise KafkaConfigError("batch_schema is the schema of batch_translator's output: set batch_translator")

    # --------------------------------------------------------------------------------------------- derived
    @property
    def wildcard(self) -> bool:
        """Whether topics are given by a pattern (storm-kafka then adds the topic to the znode path)."""
        return isinstance(self.topics, re.Pattern)

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` is one this spout reads."""
        if isinstance(self.topics, re.Pattern):
            return self.topics.fullmatch(topic) is not None
        return topic in self.topics

    def record_translator(self) -> RecordTranslator:
        """The translator as a :class:`RecordTranslator`."""
        tr = self.translator
        if tr is None:
            return DefaultTranslator()
        if hasattr(tr, "translate") and hasattr(tr, "streams"):
            return tr
        assert callable(tr) and self.translator_fields
        return SimpleRecordTranslator(tr, self.translator_fields, self.translator_stream)

    def stream_schema(self) -> Any:
        """Columnar: the schema of the records' stream (``batch_schema``, else the record schema)."""
        return self.batch_schema if self.batch_schema is not None else RECORD_SCHEMA

    def retry_policy(self) -> RetryPolicy:
        """The backoff of failed tuples."""
        return RetryPolicy(self.retry_initial_delay_ms / 1000.0, float(self.retry_delay_multiplier),
                           self.retry_max_delay_ms / 1000.0, self.max_retries)

    def describe_topics(self) -> str:
        """The topics for messages: names or the pattern."""
        if isinstance(self.topics, re.Pattern):
            return f"pattern {self.topics.pattern!r}"
        return ", ".join(self.topics)
