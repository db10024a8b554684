"""Bad input and broker trouble: the spout reports a clear error (visible in the topology summary), keeps
running, and loses nothing."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py import LocalCluster, TopologyBuilder
from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.dev.zookeeper import free_port
from storm_py.kafka import KafkaRecord, KafkaSpout, KafkaSpoutConfig
from tests.kafka.conftest import Broker
from tests.kafka.helpers import DEAD, RecordingBolt, reset, spout_error, wait_seen


def build(conf: KafkaSpoutConfig, key: str) -> Any:
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(conf))
    tb.set_bolt("check", RecordingBolt(key), 1).shuffle_grouping("kafka").shuffle_grouping("kafka", "dead_letter")
    return tb.create_topology()


def test_unknown_topic_is_reported_and_read_once_created(broker: Broker) -> None:
    topic = "missing-" + broker.topic(1)[2:]
    reset(topic)
    conf = KafkaSpoutConfig(broker.bootstrap, [topic], group_id=f"g-{topic}", partition_refresh_period_ms=200)
    with LocalCluster() as cluster:
        cluster.submit_topology("unknown", {}, build(conf, topic))
        wait_until(lambda: topic in spout_error(cluster, "unknown"), 30, interval=0.2, what="the error")
        assert "does not exist" in spout_error(cluster, "unknown")
        broker.admin.create_topic(topic, 1)
        broker.produce(topic, [(0, None, b"late")])
        wait_seen(topic, {b"late"}, 60)
        cluster.kill_topology("unknown", wait_secs=0)


def test_unreachable_bootstrap_servers_are_reported_and_the_spout_keeps_running() -> None:
    key = "unreachable"
    reset(key)
    bootstrap = f"127.0.0.1:{free_port()}"
    conf = KafkaSpoutConfig(bootstrap, ["t"], group_id="g-unreachable")
    with LocalCluster() as cluster:
        cluster.submit_topology("unreachable", {}, build(conf, key))
        wait_until(lambda: bootstrap in spout_error(cluster, "unreachable"), 60, interval=0.3, what="the error")
        assert "cannot read the partitions" in spout_error(cluster, "unreachable")
        assert cluster.get_topology_summary("unreachable")["status"] == "ACTIVE"
        cluster.kill_topology("unreachable", wait_secs=0)


def decode(r: KafkaRecord) -> list[Any]:
    assert r.value is not None
    return [r.topic, r.partition, r.offset, r.key, r.value.decode("utf-8")]


FIELDS = ["topic", "partition", "offset", "key", "value"]


def test_undecodable_record_goes_to_dead_letter_naming_topic_partition_offset(broker: Broker) -> None:
    topic = broker.topic(1)
    reset(topic)
    broker.produce(topic, [(0, None, b"fine"), (0, None, b"\xff\xfe bad"), (0, None, b"also fine")])
    conf = KafkaSpoutConfig(broker.bootstrap, [topic], group_id=f"g-{topic}", translator=decode,
                            translator_fields=FIELDS, offset_commit_period_ms=200)
    with LocalCluster() as cluster:
        cluster.submit_topology("undecodable", {}, build(conf, topic))
        wait_seen(topic, {"fine", "also fine"}, 60)
        wait_until(lambda: len(DEAD[topic]) == 1, 30, interval=0.1, what="the dead letter")
        wait_until(lambda: "UnicodeDecodeError" in spout_error(cluster, "undecodable"), 30, interval=0.2,
                   what="the error in the summary")
        error = spout_error(cluster, "undecodable")
        assert f"topic {topic!r} partition 0 offset 1" in error
        wait_until(lambda: broker.committed(f"g-{topic}", topic, 1) == {0: 3}, 30, interval=0.2, what="commit")
        cluster.kill_topology("undecodable", wait_secs=0)
    assert DEAD[topic][0][2] == 1 and DEAD[topic][0][4] == b"\xff\xfe bad"
    assert "UnicodeDecodeError" in DEAD[topic][0][5]


class Flaky:
    """A translator raising on its first two calls for the record ``b"flaky"``."""

    calls = 0

    def __call__(self, r: KafkaRecord) -> list[Any]:
        if r.value == b"flaky":
            Flaky.calls += 1
            if Flaky.calls <= 2:
                raise ValueError("not yet")
        return [r.topic, r.partition, r.offset, r.key, r.value]


def test_translator_error_is_retried_when_configured(broker: Broker) -> None:
    topic = broker.topic(1)
    reset(topic)
    Flaky.calls = 0
    broker.produce(topic, [(0, None, b"flaky"), (0, None, b"next")])
    conf = KafkaSpoutConfig(broker.bootstrap, [topic], group_id=f"g-{topic}", translator=Flaky(),
                            translator_fields=FIELDS, dead_letter_on_translator_error=False, max_retries=5,
                            retry_max_delay_ms=50)
    with LocalCluster() as cluster:
        cluster.submit_topology("flaky", {}, build(conf, topic))
        wait_seen(topic, {b"flaky", b"next"}, 60)
        cluster.kill_topology("flaky", wait_secs=0)
    assert not DEAD[topic]
    assert Flaky.calls == 3


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_broker_gone_for_20_seconds_reported_then_resumes_losing_nothing(broker: Broker) -> None:
    topic = broker.topic(2)
    reset(topic)
    first = [b"a%04d" % i for i in range(2000)]
    second = [b"b%04d" % i for i in range(2000)]
    ends = broker.produce(topic, ((i % 2, None, v) for i, v in enumerate(first)))
    conf = KafkaSpoutConfig(broker.bootstrap, [topic], group_id=f"g-{topic}", offset_commit_period_ms=300)
    with LocalCluster() as cluster:
        cluster.submit_topology("outage", {"topology.message.timeout.secs": 60}, build(conf, topic))
        wait_seen(topic, set(first), 60)
        broker.process.pause()
        try:
            paused_at = SYSTEM_CLOCK.now()
            wait_until(lambda: "Kafka" in spout_error(cluster, "outage") or "cannot" in spout_error(cluster, "outage"),
                       40, interval=0.5, what="the broker error in the topology summary")
            assert cluster.get_topology_summary("outage")["status"] == "ACTIVE"
            SYSTEM_CLOCK.sleep(max(0.0, 20.0 - (SYSTEM_CLOCK.now() - paused_at)))
        finally:
            broker.process.resume()
        more = broker.produce(topic, ((i % 2, None, v) for i, v in enumerate(second)))
        wait_seen(topic, set(first) | set(second), 120)
        total = {p: ends[p] + more[p] for p in ends}
        wait_until(lambda: broker.committed(f"g-{topic}", topic, 2) == total, 120, interval=0.3,
                   what=f"commits at the log end {total}")
        cluster.kill_topology("outage", wait_secs=0)
