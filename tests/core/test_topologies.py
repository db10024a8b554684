"""complete_topology, validation, component config and system streams (ports of Storm's TopologyIntegrationTest)."""

from __future__ import annotations

import collections

import pytest

from storm_py import Bolt, InvalidTopologyException, LocalCluster, TopologyBuilder
from storm_py.testing import (
    TestAggregatesCounter,
    TestGlobalCount,
    TestWordCounter,
    TestWordSpout,
    complete_topology,
    multiset_eq,
    read_tuples,
)
from tests.core.helpers import ConfBolt, IdentityBolt, PlannerSpout


@pytest.mark.parametrize("workers", [1, 2])
def test_basic_topology(workers):
    """Ports TopologyIntegrationTest.testBasicTopology: word counts, global counts and aggregates."""
    with LocalCluster(simulated_time=True, supervisors=4) as cluster:
        builder = TopologyBuilder()
        builder.set_spout("1", TestWordSpout(True), 3)
        builder.set_bolt("2", TestWordCounter(), 4).fields_grouping("1", ["word"])
        builder.set_bolt("3", TestGlobalCount()).global_grouping("1")
        builder.set_bolt("4", TestAggregatesCounter()).global_grouping("2")
        results = complete_topology(
            cluster, builder.create_topology(),
            mocked_sources={"1": [["nathan"], ["bob"], ["joey"], ["nathan"]]},
            storm_conf={"topology.workers": workers},
        )
        assert multiset_eq(read_tuples(results, "1"), [["nathan"], ["nathan"], ["bob"], ["joey"]])
        assert multiset_eq(read_tuples(results, "2"), [["nathan", 1], ["nathan", 2], ["bob", 1], ["joey", 1]])
        assert read_tuples(results, "3") == [[1], [2], [3], [4]]
        assert read_tuples(results, "4") == [[1], [2], [3], [4]]


class EmitTaskIdBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector
        self.index = context.this_task_index

    def execute(self, tup):
        self.collector.emit([self.index], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["tid"])


def test_multi_tasks_per_cluster():
    """Ports TopologyIntegrationTest.testMultiTasksPerCluster: 6 tasks on 3 executors, all grouping."""
    with LocalCluster(simulated_time=True, supervisors=4) as cluster:
        builder = TopologyBuilder()
        builder.set_spout("1", TestWordSpout(True))
        builder.set_bolt("2", EmitTaskIdBolt(), 3).all_grouping("1").add_configurations({"topology.tasks": 6})
        results = complete_topology(cluster, builder.create_topology(), mocked_sources={"1": [["a"]]})
        assert multiset_eq(read_tuples(results, "2"), [[0], [1], [2], [3], [4], [5]])


def _word_count_topology(kind: int):
    builder = TopologyBuilder()
    builder.set_spout("1", TestWordSpout(True), 3)
    if kind == 0:
        builder.set_bolt("2", TestWordCounter(), 4).fields_grouping("1", ["word"])
    elif kind == 1:
        builder.set_bolt("2", TestWordCounter(), 4).fields_grouping("3", ["word"])
    elif kind == 2:
        builder.set_bolt("2", TestWordCounter(), 4).fields_grouping("1", ["non-exists-field"])
    else:
        builder.set_bolt("2", TestWordCounter(), 4).fields_grouping("1", ["word"], stream="non-exists-stream")
    return builder.create_topology()


def test_validate_topology_structure():
    """Ports TopologyIntegrationTest.testValidateTopologystructure: unknown component, field and stream."""
    with LocalCluster(simulated_time=True) as cluster:
        mocked = {"1": [["nathan"], ["bob"], ["joey"], ["nathan"]]}
        complete_topology(cluster, _word_count_topology(0), mocked_sources=mocked,
                          storm_conf={"topology.workers": 2})
        for kind, needle in ((1, "'3'"), (2, "non-exists-field"), (3, "non-exists-stream")):
            with pytest.raises(InvalidTopologyException, match=needle):
                complete_topology(cluster, _word_count_topology(kind), mocked_sources=mocked,
                                  storm_conf={"topology.workers": 2})


def test_reserved_and_duplicate_ids():
    """Storm's validateIds: ids starting '__' are reserved; a component id can be used once."""
    builder = TopologyBuilder()
    builder.set_spout("1", TestWordSpout())
    with pytest.raises(InvalidTopologyException, match="already has a component"):
        builder.set_bolt("1", TestWordCounter())
    builder.set_bolt("__mine", TestWordCounter()).shuffle_grouping("1")
    with LocalCluster(simulated_time=True) as cluster, pytest.raises(InvalidTopologyException, match="reserved"):
        cluster.submit_topology("reserved", {}, builder.create_topology())

    class SystemStreamSpout(TestWordSpout):
        def declare_output_fields(self, declarer):
            declarer.declare_stream("__mine", ["word"])

    builder = TopologyBuilder()
    builder.set_spout("1", SystemStreamSpout())
    with LocalCluster(simulated_time=True) as cluster, pytest.raises(InvalidTopologyException, match="reserved"):
        cluster.submit_topology("reserved-stream", {}, builder.create_topology())


def test_system_stream():
    """Ports TopologyIntegrationTest.testSystemStream: subscribing to a component's __system stream is valid."""
    with LocalCluster(simulated_time=True) as cluster:
        builder = TopologyBuilder()
        builder.set_spout("1", TestWordSpout(True), 3)
        builder.set_bolt("2", IdentityBolt(["word"]), 1).fields_grouping("1", ["word"]).global_grouping(
            "1", "__system"
        )
        results = complete_topology(cluster, builder.create_topology(), mocked_sources={"1": [["a"], ["b"], ["c"]]},
                                    storm_conf={"topology.workers": 2})
        assert multiset_eq(read_tuples(results, "2"), [["a"], ["b"], ["c"]])


def test_component_specific_config():
    """Ports TopologyIntegrationTest.testComponentSpecificConfig: whitelisted and non-Storm keys per component, and
    kryo registrations of classes that do not exist, merged (the topology's win) and skipped, as the cluster sets
    topology.skip.missing.kryo.registrations."""
    with LocalCluster(simulated_time=True, daemon_conf={"topology.skip.missing.kryo.registrations": True}) as cluster:
        builder = TopologyBuilder()
        builder.set_spout("1", PlannerSpout(["conf"]))
        component_conf = {
            "fake.config": 123,
            "topology.max.task.parallelism": 20,
            "topology.max.spout.pending": 30,
            "topology.message.timeout.secs": 99,  # a Storm key that may not vary per component
            "topology.kryo.register": [{"fake.type": "bad.serializer"}, {"fake.type2": "a.serializer"}],
        }
        builder.set_bolt("2", ConfBolt(component_conf)).shuffle_grouping("1").set_max_task_parallelism(
            2
        ).add_configuration("fake.config2", 987)
        keys = ["fake.config", "topology.max.task.parallelism", "topology.max.spout.pending", "fake.config2",
                "topology.message.timeout.secs", "topology.kryo.register"]
        results = complete_topology(cluster, builder.create_topology(), mocked_sources={"1": [[k] for k in keys]},
                                    storm_conf={"topology.message.timeout.secs": 40,
                                                "topology.kryo.register": [{"fake.type": "good.serializer"},
                                                                           "fake.type3"]})
        got = dict(read_tuples(results, "2"))
        assert got == {
            "fake.config": 123,
            "fake.config2": 987,
            "topology.max.task.parallelism": 2,
            "topology.max.spout.pending": 30,
            "topology.message.timeout.secs": 40,
            "topology.kryo.register": [{"fake.type": "good.serializer"}, {"fake.type2": "a.serializer"}, "fake.type3"],
        }


@pytest.mark.parametrize("slots", [1, 2, 4])
def test_word_count_matches_counter(slots):
    """Word count over 1, 2 and 4 worker slots gives exactly collections.Counter's counts."""
    from examples.word_count import SENTENCES, build

    sentences = [[SENTENCES[(i * 7) % len(SENTENCES)] + f" w{i % 13}"] for i in range(300)]
    with LocalCluster(simulated_time=True, supervisors=2, ports_per_supervisor=2) as cluster:
        results = complete_topology(
            cluster, build({"wordcount.split.parallelism": 3, "wordcount.count.parallelism": 4}),
            mocked_sources={"spout": sentences}, storm_conf={"topology.workers": slots},
        )
        tid_rows = read_tuples(results, "count")
    final: dict[str, int] = {}
    for word, count in tid_rows:
        final[word] = max(final.get(word, 0), count)
    truth = collections.Counter(w for (s,) in sentences for w in s.split())
    assert final == dict(truth)
    assert len(tid_rows) == sum(truth.values())
