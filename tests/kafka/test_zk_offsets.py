"""The ZooKeeper offsets mode: storm-kafka's znode layout and JSON on a real ZooKeeper, ``ignore_zk_offsets``
only for a new topology id, ``max_offset_behind``; and the spout running in that mode in LocalCluster."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from storm_py import LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.zk import KazooStorage
from storm_py.kafka import KafkaSpout, KafkaSpoutConfig
from storm_py.kafka.client import KafkaConsumerClient
from storm_py.kafka.stores import ZkOffsetStore
from tests.kafka.conftest import Broker
from tests.kafka.helpers import SEEN, RecordingBolt, reset, wait_seen

pytestmark = [pytest.mark.zookeeper]


@pytest.fixture
def zk_state(zookeeper, zk_chroot: str) -> Iterator[tuple[ClusterState, KazooStorage]]:  # type: ignore[no-untyped-def]
    storage = KazooStorage(zookeeper.connect_string, zookeeper.port, root_chroot=zk_chroot)
    try:
        yield ClusterState(storage, {}), storage
    finally:
        storage.close()


def store(state: ClusterState, broker: Broker, topic: str, topology_id: str, **options: object) -> ZkOffsetStore:
    config = KafkaSpoutConfig(broker.bootstrap, [topic], offsets_store="zookeeper", zk_root="/kafka-offsets",
                              zk_id="clicks", **options)  # type: ignore[arg-type]
    client = KafkaConsumerClient(broker.bootstrap, "g-zk")
    client.topic_partitions(5.0)  # learns the partitions' leaders for the JSON
    return ZkOffsetStore(state, client, config, "clicks", topology_id, "clicks-topology")


def test_zk_offsets_round_trip_storm_kafka_json(broker: Broker, zk_state: tuple[ClusterState, KazooStorage]) -> None:
    state, storage = zk_state
    topic = broker.topic(2)
    broker.produce(topic, [(0, None, b"x")] * 10 + [(1, None, b"y")] * 4)
    s = store(state, broker, topic, "clicks-1-100")
    s.commit({(topic, 0): 7, (topic, 1): 3}, sync=True)
    raw = storage.get("/kafka-offsets/clicks/partition_0")
    assert raw is not None
    host, port = broker.bootstrap.split(":")
    assert json.loads(raw) == {"topology": {"id": "clicks-1-100", "name": "clicks-topology"}, "offset": 7,
                               "partition": 0, "broker": {"host": host, "port": int(port)}, "topic": topic}
    # a restarted worker of the same topology reads them back
    again = store(state, broker, topic, "clicks-1-100", ignore_zk_offsets=True)
    assert again.start_positions([(topic, 0), (topic, 1)]) == {(topic, 0): 7, (topic, 1): 3}
    # a new submission (new topology id) ignores them only with ignore_zk_offsets
    assert store(state, broker, topic, "clicks-2-200").start_positions([(topic, 0)]) == {(topic, 0): 7}
    fresh = store(state, broker, topic, "clicks-2-200", ignore_zk_offsets=True)
    assert fresh.start_positions([(topic, 0)]) == {(topic, 0): 0}


def test_zk_offsets_by_pattern_add_the_topic_to_the_path(broker: Broker,
                                                         zk_state: tuple[ClusterState, KazooStorage]) -> None:
    state, storage = zk_state
    topic = broker.topic(1)
    config = KafkaSpoutConfig(broker.bootstrap, re.compile(re.escape(topic)), offsets_store="zookeeper",
                              zk_root="/kafka-offsets", zk_id="clicks")
    client = KafkaConsumerClient(broker.bootstrap, "g-zk")
    ZkOffsetStore(state, client, config, "clicks", "t-1", "t").commit({(topic, 0): 2}, sync=True)
    assert storage.get(f"/kafka-offsets/clicks/{topic}/partition_0") is not None


def test_max_offset_behind_jumps_and_counts(broker: Broker, zk_state: tuple[ClusterState, KazooStorage]) -> None:
    state, _ = zk_state
    topic = broker.topic(1)
    broker.produce_singly(topic, [(0, None, b"%d" % i) for i in range(12)])
    store(state, broker, topic, "old").commit({(topic, 0): 1}, sync=True)
    s = store(state, broker, topic, "new", start_offset_time=-1, max_offset_behind=5)
    assert s.start_positions([(topic, 0)]) == {(topic, 0): 12}
    assert s.skipped == 11


def test_spout_in_zookeeper_mode_commits_and_resumes(broker: Broker) -> None:
    topic = broker.topic(2)
    reset(topic)
    vals = [b"z%03d" % i for i in range(200)]
    broker.produce(topic, ((i % 2, None, v) for i, v in enumerate(vals)))
    config = KafkaSpoutConfig(broker.bootstrap, [topic], offsets_store="zookeeper", zk_root="/kafka-offsets",
                              zk_id=f"id-{topic}", offset_commit_period_ms=200)

    def build() -> object:
        tb = TopologyBuilder()
        tb.set_spout("kafka", KafkaSpout(config), 2)
        tb.set_bolt("check", RecordingBolt(topic), 1).shuffle_grouping("kafka")
        return tb.create_topology()

    with LocalCluster() as cluster:
        cluster.submit_topology("zkmode", {}, build())
        wait_seen(topic, set(vals), 60)

        def offsets() -> list[object]:
            return [(cluster.state.kafka_offset_get("/kafka-offsets", f"id-{topic}", p) or {}).get("offset")
                    for p in (0, 1)]

        wait_until(lambda: offsets() == [100, 100], 30, interval=0.2, what="offsets in the state store")
        cluster.kill_topology("zkmode", wait_secs=0)
        wait_until(lambda: cluster.get_topology_id("zkmode") is None, 30, interval=0.1, what="the kill")
        more = [b"m%03d" % i for i in range(20)]
        broker.produce(topic, ((i % 2, None, v) for i, v in enumerate(more)))
        before = sum(SEEN[topic].values())
        cluster.submit_topology("zkmode", {}, build())
        wait_seen(topic, set(vals) | set(more), 60)
        cluster.kill_topology("zkmode", wait_secs=0)
    assert sum(SEEN[topic].values()) - before == len(more), "the resubmitted topology starts at the stored offsets"
