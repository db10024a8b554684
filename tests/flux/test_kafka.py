"""Storm's Kafka Flux file against a real broker: ``kafka_spout.yaml`` with its translator given in Python (the only
class it names that storm_py has no equivalent of) reads sentences through storm-kafka-client's builder, splits
them in a shell bolt and counts them; a Kafka bolt built Storm's way writes them to a second topic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.dev.kafka import KafkaBrokerProcess
from storm_py.flux import FluxError, build, parse_file
from storm_py.kafka import KafkaSpout, KafkaSpoutConfigBuilder
from tests.flux.conftest import CONFIGS
from tests.kafka.conftest import Broker

pytestmark = pytest.mark.timeout(180)

SENTENCES = ["the cow jumped over the moon", "an apple a day keeps the doctor away", "four score and seven years ago"]

BOLT = """
  - id: "kafka-bolt"
    className: "org.apache.storm.kafka.bolt.KafkaBolt"
    configMethods:
      - name: "withProducerProperties"
        args: [{"bootstrap.servers": "%(servers)s"}]
      - name: "withTopicSelector"
        args: [ref: "selector"]
      - name: "withTupleToKafkaMapper"
        args: [ref: "mapper"]
"""
COMPONENTS = """
  - id: "selector"
    className: "org.apache.storm.kafka.bolt.selector.DefaultTopicSelector"
    constructorArgs: ["%(out)s"]
  - id: "mapper"
    className: "org.apache.storm.kafka.bolt.mapper.FieldNameBasedTupleToKafkaMapper"
    constructorArgs: ["str", "str"]
"""
STREAM = """
  - from: "kafka-spout"
    to: "kafka-bolt"
    grouping:
      type: SHUFFLE
"""


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    proc = KafkaBrokerProcess(log_path=tmp_path_factory.mktemp("flux-kafka") / "broker.log", die_with_parent=True)
    proc.start()
    try:
        yield Broker(proc)
    finally:
        proc.stop()


def _kafka_file(tmp_path: Path, servers: str, topic: str, out: str, with_bolt: bool = True) -> Path:
    text = (CONFIGS / "kafka_spout.yaml").read_text(encoding="utf-8")
    text = text.replace("localhost:9092", servers).replace("myKafkaTopic", topic)
    text = text.replace("org.apache.storm.flux.examples.OnlyValueRecordTranslator",
                        "tests.flux.components:OnlyValueRecordTranslator")
    if with_bolt:
        text = text.replace("\nconfig:", COMPONENTS % {"out": out} + "\nconfig:", 1)
        text = text.replace("\nstreams:", BOLT % {"servers": servers} + "\nstreams:", 1) + STREAM
    path = tmp_path / "kafka_spout.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _component(summary: dict[str, Any], cid: str) -> dict[str, Any]:
    return next(c for c in summary["spouts"] + summary["bolts"] if (c.get("spoutId") or c.get("boltId")) == cid)


def test_builder_takes_storms_properties_and_consumer_props() -> None:
    b = KafkaSpoutConfigBuilder("h:1", ["t"])
    b.set_first_poll_offset_strategy("EARLIEST")
    b.set_prop({"group.id": "g", "max.poll.records": "7", "fetch.min.bytes": 5})
    b.set_prop("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer")
    config = b.build()
    assert (config.group_id, config.max_poll_records, config.first_poll_offset_strategy) == ("g", 7, "EARLIEST")
    assert config.consumer_options == {"fetch.min.bytes": 5}


def test_storms_kafka_file_reads_splits_counts_and_writes(broker: Broker, tmp_path: Path) -> None:
    topic, out = broker.topic(1, "flux-in"), broker.topic(1, "flux-out")
    broker.produce(topic, [(0, None, s.encode()) for s in SENTENCES])
    t = build(parse_file(_kafka_file(tmp_path, broker.bootstrap, topic, out)), working_dir=CONFIGS / "resources")
    spout = t.context.get_spout("kafka-spout")
    assert isinstance(spout, KafkaSpout)
    words = sum(len(s.split()) for s in SENTENCES)
    with LocalCluster(supervisors=1) as cluster:
        cluster.submit_topology(t.name, t.conf, t.topology)

        def done() -> bool:
            summary = cluster.get_topology_summary(t.name)
            return (int(_component(summary, "count").get("executed", 0)) >= words
                    and int(_component(summary, "kafka-spout").get("acked", 0)) >= len(SENTENCES))

        wait_until(done, 90, interval=0.25, what="every sentence counted and acked")
        summary = cluster.get_topology_summary(t.name)
        assert int(_component(summary, "count").get("executed", 0)) == words
        cluster.kill_topology(t.name, 0)
    written = broker.read_values(out, 1, {s.encode() for s in SENTENCES})
    assert written == {s.encode() for s in SENTENCES}  # text from the StringDeserializer, written back as UTF-8


def test_a_kafka_bolt_without_topic_names_the_component(broker: Broker, tmp_path: Path) -> None:
    path = _kafka_file(tmp_path, broker.bootstrap, "t", "o")
    selector = '      - name: "withTopicSelector"\n        args: [ref: "selector"]\n'
    text = path.read_text(encoding="utf-8").replace(selector, "")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FluxError, match=r"component 'kafka-bolt': class org\.apache\.storm\.kafka\.bolt\.KafkaBolt: "
                       r"the Kafka bolt has no topic"):
        build(parse_file(path), working_dir=CONFIGS / "resources")
