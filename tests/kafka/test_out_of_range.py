"""Committed offsets the broker no longer has, against :mod:`tests.kafka.strict_broker`, which answers a fetch
out of the log's range with OFFSET_OUT_OF_RANGE as Kafka does; the client then resets the partition to its
earliest offset.

* A commit past the log end (the topic was recreated): the spout starts the partition over at its earliest
  offset instead of skipping everything below the old commit, and counts the reset.
* A commit below the log start (retention or DeleteRecords removed records not yet processed): the spout jumps
  to the log start and counts the deleted offsets as skipped.

Both counts are in the ``kafkaOffset`` metric, so neither loss is silent."""

from __future__ import annotations

from typing import Any

from tests.kafka.conftest import Broker
from tests.kafka.helpers import SEEN, offset_points, reset, run_spout_until


def points(key: str) -> list[Any]:
    return [p[key] for p in offset_points() if key in p]


def test_a_commit_below_the_log_start_jumps_to_it_and_counts_the_deleted_offsets(strict_broker: Broker) -> None:
    topic = strict_broker.topic(1, prefix="deleted")
    reset(topic)
    values = [b"r%02d" % i for i in range(10)]
    strict_broker.produce(topic, [(0, None, v) for v in values])
    group = f"g-{topic}"
    strict_broker.commit(group, topic, {0: 2})
    strict_broker.delete_records(topic, {0: 6})  # records 2..5 were never processed and are gone
    skipped = f"{topic}/partition_0/skippedOffsets"

    def done() -> bool:
        return (set(values[6:]) <= set(SEEN[topic]) and strict_broker.committed(group, topic, 1) == {0: 10}
                and 4 in points(skipped))

    run_spout_until(strict_broker.bootstrap, topic, group, done, "out-of-range")
    assert SEEN[topic] == {v: 1 for v in values[6:]}, "what the log still has, each once"
    assert max(points(skipped)) == 4 and max(points("offset_resets")) == 0


def test_a_commit_past_the_log_end_restarts_the_partition_at_its_earliest_offset_and_is_counted(
        strict_broker: Broker) -> None:
    topic = strict_broker.topic(1, prefix="oor")
    reset(topic)
    values = [b"r%02d" % i for i in range(10)]
    strict_broker.produce(topic, [(0, None, v) for v in values])
    group = f"g-{topic}"
    strict_broker.commit(group, topic, {0: 100})  # beyond the log end (10): what a recreated topic leaves

    def done() -> bool:  # the spout resumed below its old commit instead of waiting at 100
        return (set(values) <= set(SEEN[topic]) and strict_broker.committed(group, topic, 1) == {0: 10}
                and 1 in points("offset_resets"))

    run_spout_until(strict_broker.bootstrap, topic, group, done, "out-of-range")
    assert SEEN[topic] == {v: 1 for v in values}, "each record once: nothing skipped, nothing twice"
    assert max(points(f"{topic}/partition_0/lostOffsets")) == 0, "nothing was in flight"
    assert max(points(f"{topic}/partition_0/skippedOffsets")) == 0
