"""KafkaSpout as a StatefulSpout under topology.state.guarantee exactly_once (in-memory state, LocalCluster):
records from a two-partition topic are counted exactly once by a stateful bolt, through a bolt raising, a failed
prepare and a worker dying (each restarts every component from the last checkpoint, the spout from its saved
offsets)."""

from __future__ import annotations

from collections import Counter

from storm_py import Bolt, LocalCluster, TopologyBuilder
from storm_py.api.context import TopologyContext
from storm_py.clock import wait_until
from storm_py.kafka import KafkaSpout, KafkaSpoutConfig
from storm_py.kafka.positions import POSITIONS_KEY, from_saved
from storm_py.stateful.state.key_value import KeyValueState
from tests.kafka.conftest import Broker
from tests.stateful.components import CountBolt, committed_counts, new_run
from tests.transactional.helpers import SpoutCapture

VOCABULARY = ["apple", "pear", "fig", "kiwi", "plum", "lime", "date"]
RECORDS = 3000


class ValueWord(Bolt):
    """The record's value as the word, anchored."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit([tup.get_value_by_field("value").decode()], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


def test_a_checkpoint_before_the_restored_spout_takes_its_partitions_keeps_their_positions(broker: Broker) -> None:
    """A restored spout that has not run yet (held for a checkpoint, or the broker away) saves the positions it
    restored, not none: a restart from that checkpoint must not replay from the group's commits."""
    topic = broker.topic(2, "eo-held")
    broker.produce(topic, ((i % 2, None, b"r%d" % i) for i in range(20)))
    spout = KafkaSpout(KafkaSpoutConfig(broker.bootstrap, [topic], group_id=f"g-{topic}",
                                        first_poll_offset_strategy="EARLIEST"))
    context = TopologyContext(topology_id="held-1", topology_name="held", task_id=3, component_id="records",
                              task_to_component={3: "records"}, component_tasks={"records": [3]},
                              component_streams={}, worker_tasks=[3])
    collector = SpoutCapture()
    spout.open({"topology.state.guarantee": "exactly_once"}, context, collector)
    try:
        state = KeyValueState()
        state.put(POSITIONS_KEY, [[topic, 0, 7], [topic, 1, 4]])
        state.prepare_commit(1)
        state.commit(1)
        spout.init_state(state)
        spout.pre_prepare(2)  # before any next_tuple
        assert from_saved(state.get(POSITIONS_KEY)) == {(topic, 0): 7, (topic, 1): 4}

        def emitted() -> int:
            spout.next_tuple()
            return len(collector.emitted.get("default", []))

        wait_until(lambda: emitted() == (10 - 7) + (10 - 4), 30, interval=0.05, what="the records after the positions")
        spout.pre_prepare(3)
        assert from_saved(state.get(POSITIONS_KEY)) == {(topic, 0): 10, (topic, 1): 10}
    finally:
        spout.close()


def test_kafka_records_counted_exactly_once_through_failures(broker: Broker) -> None:
    topic = broker.topic(2, "eo")
    words = [VOCABULARY[i % len(VOCABULARY)] for i in range(RECORDS)]
    broker.produce(topic, ((i % 2, None, w.encode()) for i, w in enumerate(words)))
    run = new_run("kafka-eo")
    builder = TopologyBuilder()
    builder.set_spout("records", KafkaSpout(KafkaSpoutConfig(broker.bootstrap, [topic], group_id=f"g-{topic}",
                                                             first_poll_offset_strategy="EARLIEST")), 2)
    builder.set_bolt("word", ValueWord(), 2).shuffle_grouping("records")
    builder.set_bolt("count", CountBolt("kafka-eo", raise_on=("fig",), fail_prepare=3), 2).fields_grouping(
        "word", ["word"])
    conf = {"topology.state.guarantee": "exactly_once", "topology.state.checkpoint.interval.ms": 100,
            "topology.workers": 3, "topology.message.timeout.secs": 10,
            "topology.state.provider": "memory"}  # committed_counts reads the in-memory stores
    with LocalCluster() as cluster:
        cluster.submit_topology("kafka-eo", conf, builder.create_topology())
        tid = cluster.get_topology_id("kafka-eo")
        wait_until(lambda: sum(committed_counts(run).values()) >= 500, 60, what="a checkpoint with records")
        victim = next(w for w in cluster.workers(tid) if any(ex.component_id == "records"
                                                              for ex in w.runtime.executors))
        victim.stop()
        wait_until(lambda: "failed_prepare" in run.hook_names(), 60, what="the failed prepare")
        wait_until(lambda: committed_counts(run) == Counter(words), 120, interval=0.2,
                   what="every record counted exactly once")
        cluster.kill_topology("kafka-eo", wait_secs=0)
