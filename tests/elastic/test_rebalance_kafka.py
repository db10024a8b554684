"""Kafka spouts and stateful counts rebalanced in LocalCluster while a producer keeps writing: the spout goes from
one executor to two (two tasks), the counting bolt from two to four (four tasks).  Every task keeps its state and
every partition its position: under exactly_once (the spout's offsets in the checkpoints) the committed counts
equal the records produced; under at_least_once (offsets committed to Kafka on ack) none is below it."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py import Bolt, LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.kafka import KafkaSpout, KafkaSpoutConfig
from tests.elastic.components import PacedProducer, committed_counts, committed_states
from tests.kafka.conftest import Broker
from tests.stateful.components import CountBolt, new_run

# each case runs a LocalCluster through checkpoints and a rebalance: tens of seconds (pure run only in CI)
pytestmark = pytest.mark.slow

PARTITIONS = 2
RECORDS = 8000


class ValueWord(Bolt):
    """The record's value as the word, anchored."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit([tup.get_value_by_field("value").decode()], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


def kafka_count(run: str, bootstrap: str, topic: str):
    builder = TopologyBuilder()
    spout = KafkaSpout(KafkaSpoutConfig(bootstrap, [topic], group_id=f"g-{topic}",
                                        first_poll_offset_strategy="EARLIEST"))
    builder.set_spout("records", spout, 1).set_num_tasks(2)
    builder.set_bolt("word", ValueWord(), 2).set_num_tasks(4).shuffle_grouping("records")
    builder.set_bolt("count", CountBolt(run), 2).set_num_tasks(4).fields_grouping("word", ["word"])
    return builder.create_topology()


def executors(cluster: LocalCluster, name: str) -> dict[str, int]:
    summary = cluster.get_topology_summary(name)
    if summary["status"] != "ACTIVE":
        return {}
    out = {b["boltId"]: int(b["executors"]) for b in summary["bolts"]}
    out.update({s["spoutId"]: int(s["executors"]) for s in summary["spouts"]})
    return out


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
@pytest.mark.parametrize("provider", ["checkpoint_dir", "redis"])
def test_kafka_counts_survive_a_rebalance_while_records_flow(request: pytest.FixtureRequest, broker: Broker,
                                                             provider: str, guarantee: str) -> None:
    name = f"rbk-{provider.replace('_', '')}-{guarantee.replace('_', '')}"
    new_run(name)
    topic = broker.topic(PARTITIONS, "rbk")
    conf: dict[str, Any] = {"topology.state.guarantee": guarantee, "topology.state.checkpoint.interval.ms": 200,
                            "topology.workers": 2, "topology.message.timeout.secs": 10}
    if provider == "redis":
        server = request.getfixturevalue("redis_server")
        conf.update({"topology.state.provider": "redis",
                     "topology.state.provider.config": {"port": server.port, "key_prefix": f"{name}:"}})
    producer = PacedProducer(broker, topic, RECORDS, PARTITIONS, batch=200, pause=0.1).start()
    try:
        with LocalCluster(supervisors=2, ports_per_supervisor=3) as cluster:
            tid = cluster.submit_topology(name, conf, kafka_count(name, broker.bootstrap, topic))

            def committed() -> Any:
                return committed_counts(committed_states(cluster.conf, conf, name, tid, "count"))

            wait_until(lambda: sum(committed().values()) >= 500, 90, interval=0.1, what="a first checkpoint")
            assert producer.produced < RECORDS, "the producer finished before the rebalance: raise RECORDS"
            cluster.rebalance(name, wait_secs=1, executors={"records": 2, "word": 4, "count": 4})
            wait_until(lambda: executors(cluster, name).get("count") == 4 and executors(cluster, name)["records"] == 2,
                       60, interval=0.1, what="records on 2 executors and count on 4")
            want = producer.join(120)
            if guarantee == "exactly_once":
                wait_until(lambda: committed() == want, 180, interval=0.25, what="every record counted exactly once")
            else:
                wait_until(lambda: all(committed()[w] >= n for w, n in want.items()), 180, interval=0.25,
                           what="every record counted, no key lost")
            assert set(committed_states(cluster.conf, conf, name, tid, "count")) == {
                t for w in cluster.workers(tid) for ex in w.runtime.executors if ex.component_id == "count"
                for t in ex.task_ids}
            cluster.kill_topology(name, wait_secs=0)
    finally:
        producer.stop()
