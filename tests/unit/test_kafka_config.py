"""KafkaSpoutConfig checks its options and names the wrong one; translators; the bolt's value encoding."""

from __future__ import annotations

import re

import pytest

from storm_py.kafka import (
    ByTopicRecordTranslator,
    KafkaConfigError,
    KafkaRecord,
    KafkaSpoutConfig,
    SimpleRecordTranslator,
)
from storm_py.kafka.bolt import to_bytes
from storm_py.kafka.client import FETCH_QUEUE_BACKOFF_MS, consumer_config


@pytest.mark.parametrize(("options", "names"), [
    ({"first_poll_offset_strategy": "OLDEST"}, "first_poll_offset_strategy"),
    ({"processing_guarantee": "EXACTLY_ONCE"}, "processing_guarantee"),
    ({"max_uncommitted_offsets": 0}, "max_uncommitted_offsets"),
    ({"max_retries": -1}, "max_retries"),
    ({"offsets_store": "redis"}, "offsets_store"),
    ({"consumer_options": {"enable.auto.commit": True}}, "enable.auto.commit"),
    ({"zk_root": "relative"}, "zk_root"),
    ({"start_offset_time": -3}, "start_offset_time"),
    ({"translator": lambda r: [r.value]}, "translator_fields"),
    ({"records_per_tree": 0}, "records_per_tree"),
    ({"records_per_tree": 2.5}, "records_per_tree must be a whole number"),
])
def test_bad_options_are_refused_naming_the_option(options: dict[str, object], names: str) -> None:
    with pytest.raises(KafkaConfigError, match=names):
        KafkaSpoutConfig("127.0.0.1:9092", ["t"], **options)  # type: ignore[arg-type]


def test_topics_as_names_or_pattern() -> None:
    assert KafkaSpoutConfig("h:1", "clicks").topics == ["clicks"]
    cfg = KafkaSpoutConfig("h:1", re.compile(r"clicks-\d+"))
    assert cfg.wildcard and cfg.matches("clicks-7") and not cfg.matches("clicks-7x")
    with pytest.raises(KafkaConfigError, match="topics"):
        KafkaSpoutConfig("h:1", [])
    with pytest.raises(KafkaConfigError, match="bootstrap_servers"):
        KafkaSpoutConfig("", ["t"])


def test_translators() -> None:
    record = KafkaRecord("a", 1, 5, b"k", b"v")
    assert KafkaSpoutConfig("h:1", ["a"]).record_translator().translate(record) == (
        "default", ["a", 1, 5, b"k", b"v"])
    by_topic = ByTopicRecordTranslator({"a": SimpleRecordTranslator(lambda r: [r.value], ["v"], stream="as")})
    assert by_topic.translate(record) == ("as", [b"v"])
    assert by_topic.streams() == {"as": ["v"]}
    with pytest.raises(ValueError, match="no translator for topic 'b'"):
        by_topic.translate(KafkaRecord("b", 0, 0, None, b""))
    with pytest.raises(ValueError, match="2 values"):
        SimpleRecordTranslator(lambda r: [1, 2], ["one"]).translate(record)


def test_bolt_encodes_keys_and_values() -> None:
    assert to_bytes("wörd") == "wörd".encode()
    assert to_bytes(3) == b"3"
    assert to_bytes(None) is None
    assert to_bytes(b"raw") == b"raw"


def test_the_consumer_never_pauses_fetching_for_librdkafkas_default_second_and_options_cannot_auto_commit() -> None:
    """librdkafka's default fetch.queue.backoff.ms (1 s) left a spout that drains its prefetch queue polling
    nothing for a second at a time (BENCHMARKS.md, Kafka); a user's consumer_options still decide."""
    conf = consumer_config("h:1", "g", {"enable.auto.commit": True, "fetch.wait.max.ms": 7}, "latest")
    assert conf["fetch.queue.backoff.ms"] == FETCH_QUEUE_BACKOFF_MS <= 20
    assert (conf["fetch.wait.max.ms"], conf["enable.auto.commit"], conf["auto.offset.reset"]) == (7, False, "latest")
    assert consumer_config("h:1", "g", {"fetch.queue.backoff.ms": 500}, "earliest")["fetch.queue.backoff.ms"] == 500
