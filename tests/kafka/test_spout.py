"""KafkaSpout against a real broker in LocalCluster: at-least-once with failures, commits reaching the log end,
resume after kill and resubmit with bounded duplicates, translator skips, dead letters and retries."""

from __future__ import annotations

import re
from typing import Any

import pytest

from storm_py import LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.kafka import (
    ByTopicRecordTranslator,
    KafkaRecord,
    KafkaSpout,
    KafkaSpoutConfig,
    SimpleRecordTranslator,
)
from tests.kafka.conftest import Broker
from tests.kafka.helpers import DEAD, SEEN, RecordingBolt, reset, wait_seen

PARTITIONS = 4


def values(n: int) -> list[bytes]:
    return [b"r%06d" % i for i in range(n)]


def produce(broker: Broker, topic: str, vals: list[bytes]) -> dict[int, int]:
    return broker.produce(topic, ((i % PARTITIONS, None, v) for i, v in enumerate(vals)))


def topology(broker: Broker, topic: str, key: str, group: str, fail_rate: float = 0.0, spouts: int = 2,
             **options: Any) -> Any:
    tb = TopologyBuilder()
    conf = KafkaSpoutConfig(broker.bootstrap, [topic], group_id=group, offset_commit_period_ms=300,
                            retry_max_delay_ms=200, **options)
    tb.set_spout("kafka", KafkaSpout(conf), spouts)
    tb.set_bolt("check", RecordingBolt(key, fail_rate), 2).shuffle_grouping("kafka").shuffle_grouping(
        "kafka", "dead_letter")
    return tb.create_topology()


def at_least_once(broker: Broker, n: int, timeout: float, **options: Any) -> None:
    topic = broker.topic(PARTITIONS)
    key = topic
    reset(key)
    vals = values(n)
    ends = produce(broker, topic, vals)
    with LocalCluster() as cluster:
        cluster.submit_topology("alo", {"topology.max.spout.pending": 5000, "topology.message.timeout.secs": 30},
                                topology(broker, topic, key, f"g-{topic}", fail_rate=0.05, **options))
        wait_seen(key, set(vals), timeout)
        # commits catch up with the log end (what was produced: the topic started empty)
        wait_until(lambda: broker.committed(f"g-{topic}", topic, PARTITIONS) == ends, 30, interval=0.3,
                   what=f"commits at the log end {ends}")
        cluster.kill_topology("alo", wait_secs=0)
    assert set(SEEN[key]) == set(vals), "nothing lost"
    assert not DEAD[key]


@pytest.mark.parametrize("per_tree", [1, 64])
def test_at_least_once_with_failures_commits_to_the_log_end(broker: Broker, per_tree: int) -> None:
    """20,000 records over 4 partitions, 2 spout tasks, 5 % of tuples failed once: all processed (records alone,
    and in trees of up to 64)."""
    at_least_once(broker, 20_000, 120, records_per_tree=per_tree)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_acceptance_100k_records_with_failures(broker: Broker) -> None:
    """Acceptance: 100,000 records over 4 partitions → KafkaSpout (2 tasks) → 5 % failed once → none lost."""
    at_least_once(broker, 100_000, 480)


def test_a_partition_at_its_uncommitted_limit_commits_at_once(broker: Broker) -> None:
    """The ``max_uncommitted_offsets`` gate reopens as soon as the acked prefix is committed, not at the next
    commit period: with 100 per partition, 50 records per poll and a 10-minute period, 4,000 records pass in well
    under a minute (waiting for the period, each partition would stop near 100 records for ten minutes)."""
    topic = broker.topic(PARTITIONS)
    key = topic
    reset(key)
    vals = values(4000)
    produce(broker, topic, vals)
    group = f"g-{topic}"
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(KafkaSpoutConfig(broker.bootstrap, [topic], group_id=group,
                                                      offset_commit_period_ms=600_000, max_uncommitted_offsets=100,
                                                      max_poll_records=50)), 2)
    tb.set_bolt("check", RecordingBolt(key), 2).shuffle_grouping("kafka")
    with LocalCluster() as cluster:
        cluster.submit_topology("gate", {}, tb.create_topology())
        wait_seen(key, set(vals), 60)
        committed = broker.committed(group, topic, PARTITIONS)  # before the kill's own commit
        cluster.kill_topology("gate", wait_secs=0)
    assert set(SEEN[key]) == set(vals)
    # every partition committed while it ran: 1,000 records each, at most 100 uncommitted plus what one poll and
    # the client's prefetch hold
    assert sorted(committed) == list(range(PARTITIONS)), committed
    assert all(offset >= 500 for offset in committed.values()), committed


def test_kill_and_resubmit_resumes_from_commits_with_bounded_duplicates(broker: Broker) -> None:
    topic = broker.topic(PARTITIONS)
    key = topic
    reset(key)
    n, window = 20_000, 1000
    vals = values(n)
    produce(broker, topic, vals)
    group = f"g-{topic}"
    conf = {"topology.max.spout.pending": 500}
    with LocalCluster() as cluster:
        cluster.submit_topology("resume", conf, topology(broker, topic, key, group, max_uncommitted_offsets=window))
        wait_until(lambda: len(SEEN[key]) >= n // 3, 60, interval=0.05, what="a third processed")
        cluster.kill_topology("resume", wait_secs=0)
        wait_until(lambda: cluster.get_topology_id("resume") is None, 30, interval=0.1, what="the kill")
        first_run = sum(SEEN[key].values())
        committed = broker.committed(group, topic, PARTITIONS)
        assert committed, "the first run committed offsets"
        cluster.submit_topology("resume", conf, topology(broker, topic, key, group, max_uncommitted_offsets=window))
        wait_seen(key, set(vals), 120)
        cluster.kill_topology("resume", wait_secs=0)
    duplicates = sum(SEEN[key].values()) - n
    # the second run starts at the commits: at most the uncommitted window of each partition is read again
    assert duplicates <= PARTITIONS * window, f"{duplicates} duplicates (first run processed {first_run})"
    replayed_from = sum(committed.values())
    assert replayed_from > 0


@pytest.mark.parametrize("per_tree", [1, 8])
def test_translator_none_skips_and_per_topic_streams(broker: Broker, per_tree: int) -> None:
    t1, t2 = broker.topic(1, "a"), broker.topic(1, "b")
    key = t1
    reset(key)
    broker.produce(t1, [(0, None, b"keep-1"), (0, None, b"skip"), (0, None, b"keep-2")])
    broker.produce(t2, [(0, b"k", b"other")])

    def only_keep(r: KafkaRecord) -> list[Any] | None:
        return None if r.value == b"skip" else [r.topic, r.partition, r.offset, r.key, r.value]

    translator = ByTopicRecordTranslator({
        t1: SimpleRecordTranslator(only_keep, ["topic", "partition", "offset", "key", "value"]),
        t2: SimpleRecordTranslator(lambda r: [r.topic, r.partition, r.offset, r.key, r.value],
                                   ["topic", "partition", "offset", "key", "value"], stream="second"),
    })
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(KafkaSpoutConfig(broker.bootstrap, re.compile(re.escape(t1) + "|" + re.escape(t2)),
                                                      group_id=f"g-{t1}", translator=translator,
                                                      offset_commit_period_ms=200, records_per_tree=per_tree)))
    tb.set_bolt("check", RecordingBolt(key), 1).shuffle_grouping("kafka").shuffle_grouping("kafka", "second")
    with LocalCluster() as cluster:
        cluster.submit_topology("streams", {}, tb.create_topology())
        wait_seen(key, {b"keep-1", b"keep-2", b"other"}, 60)
        # the skipped record was acked at once: the commit passes it
        wait_until(lambda: broker.committed(f"g-{t1}", t1, 1) == {0: 3}, 30, interval=0.2, what="commit past skip")
        cluster.kill_topology("streams", wait_secs=0)
    assert b"skip" not in SEEN[key]


@pytest.mark.parametrize("per_tree", [1, 8])
def test_max_retries_sends_to_dead_letter_and_commit_moves_on(broker: Broker, per_tree: int) -> None:
    """A record that always fails goes to the dead-letter stream after max_retries; in a tree, the tree's failure
    sends it again alone, and only its own failures count."""
    topic = broker.topic(1)
    key = topic
    reset(key)
    broker.produce(topic, [(0, None, b"ok-1"), (0, None, b"poison"), (0, None, b"ok-2")])
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(KafkaSpoutConfig(broker.bootstrap, [topic], group_id=f"g-{topic}",
                                                      max_retries=2, retry_max_delay_ms=50,
                                                      offset_commit_period_ms=200, records_per_tree=per_tree)))
    tb.set_bolt("check", RecordingBolt(key, fail_values=frozenset({b"poison"})), 1).shuffle_grouping(
        "kafka").shuffle_grouping("kafka", "dead_letter")
    with LocalCluster() as cluster:
        cluster.submit_topology("dlq", {}, tb.create_topology())
        wait_until(lambda: len(DEAD[key]) == 1, 60, interval=0.1, what="the dead letter")
        wait_until(lambda: broker.committed(f"g-{topic}", topic, 1) == {0: 3}, 30, interval=0.2, what="commit")
        cluster.kill_topology("dlq", wait_secs=0)
    (dead,) = DEAD[key]
    assert dead[:3] == [topic, 0, 1] and dead[4] == b"poison"
    assert "failed 3 times" in dead[5]
    assert set(SEEN[key]) == {b"ok-1", b"ok-2"}


@pytest.mark.parametrize("guarantee", ["AT_MOST_ONCE", "NO_GUARANTEE"])
def test_untracked_guarantees_read_everything_and_commit_the_fetched_offsets(broker: Broker, guarantee: str) -> None:
    topic = broker.topic(2)
    key = topic
    reset(key)
    vals = values(300)
    ends = broker.produce(topic, ((i % 2, None, v) for i, v in enumerate(vals)))
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(KafkaSpoutConfig(broker.bootstrap, [topic], group_id=f"g-{topic}",
                                                      processing_guarantee=guarantee, offset_commit_period_ms=200)))
    tb.set_bolt("check", RecordingBolt(key), 1).shuffle_grouping("kafka")
    with LocalCluster() as cluster:
        cluster.submit_topology("untracked", {}, tb.create_topology())
        wait_seen(key, set(vals), 60)
        wait_until(lambda: broker.committed(f"g-{topic}", topic, 2) == ends, 30, interval=0.2, what="commits")
        cluster.kill_topology("untracked", wait_secs=0)
    assert max(SEEN[key].values()) == 1


def test_latest_strategy_starts_at_the_log_end(broker: Broker) -> None:
    topic = broker.topic(1)
    key = topic
    reset(key)
    broker.produce_singly(topic, [(0, None, b"old-%d" % i) for i in range(5)])  # one per batch: LATEST is right
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(KafkaSpoutConfig(broker.bootstrap, [topic], group_id=f"g-{topic}",
                                                      first_poll_offset_strategy="LATEST")))
    tb.set_bolt("check", RecordingBolt(key), 1).shuffle_grouping("kafka")
    with LocalCluster() as cluster:
        cluster.submit_topology("latest", {}, tb.create_topology())
        sent: list[int] = []

        def new_record_seen() -> bool:  # the spout picks its start when it owns the partition: keep producing
            sent.append(len(sent))
            broker.produce_singly(topic, [(0, None, b"new-%d" % sent[-1])])
            return any(v.startswith(b"new") for v in SEEN[key])

        wait_until(new_record_seen, 60, interval=0.3, what="a record produced after the start")
        cluster.kill_topology("latest", wait_secs=0)
    assert not any(v.startswith(b"old") for v in SEEN[key]), "LATEST skipped what was there before the start"
