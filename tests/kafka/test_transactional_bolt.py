"""A transactional KafkaBolt under exactly_once (LocalCluster, the dev broker): one transaction per committed
checkpoint and task, rollbacks (a bolt raises) leave no record twice in the topic, a task restarted with the same
transactional id re-initialises it, and a transactional bolt outside exactly_once is refused at submit."""

from __future__ import annotations

import uuid
from collections import Counter

import confluent_kafka as ck
import pytest

from storm_py import InvalidTopologyException, LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.kafka import KafkaBolt
from tests.jdbc.sinks import RAISED, NumberSpout, RaiseOnce
from tests.kafka.conftest import Broker

N = 2000
EXACTLY_ONCE = {"topology.state.checkpoint.interval.ms": 200, "topology.state.guarantee": "exactly_once"}


def _topology(broker: Broker, topic: str, prefix: str, raise_on: tuple[int, ...] = ()):
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(N))
    builder.set_bolt("pass", RaiseOnce(raise_on), 2).shuffle_grouping("numbers")
    bolt = KafkaBolt(broker.bootstrap, topic, key_field=None, value_field="val").with_transactional_id_prefix(prefix)
    builder.set_bolt("out", bolt, 2).shuffle_grouping("pass")
    return builder.create_topology()


def _read(broker: Broker, topic: str, isolation: str) -> Counter[str]:
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest", "isolation.level": isolation})
    c.assign([ck.TopicPartition(topic, p, 0) for p in range(2)])
    out: Counter[str] = Counter()
    try:
        idle = 0
        while idle < 5:
            msgs = c.consume(10000, 0.2)
            idle = 0 if msgs else idle + 1
            out.update(m.value().decode() for m in msgs if m.error() is None)
    finally:
        c.close()
    return out


def _markers(broker: Broker, topic: str, prefix: str) -> dict[str, int]:
    out = {}
    for task in range(2):
        c = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"{prefix}-{task}"})
        [tp] = c.committed([ck.TopicPartition(topic, 0)], 10)
        c.close()
        out[f"{prefix}-{task}"] = tp.offset
    return out


def test_transactional_bolt_writes_each_record_once_through_rollbacks_and_a_restart(broker: Broker):
    RAISED.clear()
    topic, prefix = broker.topic(2), f"tx-{uuid.uuid4().hex[:6]}"
    truth = Counter(f"v{i}" for i in range(N))
    with LocalCluster() as cluster:
        cluster.submit_topology("eo-kafka", EXACTLY_ONCE, _topology(broker, topic, prefix, raise_on=(300, 1200)))
        wait_until(lambda: sum(_read(broker, topic, "read_committed").values()) >= N, 120, interval=0.5,
                   what="every record in the topic")
        cluster.kill_topology("eo-kafka", wait_secs=0)
    assert {300, 1200} <= RAISED
    # records of a rolled-back checkpoint never reach the broker: exact even without read_committed
    assert _read(broker, topic, "read_committed") == truth
    assert _read(broker, topic, "read_uncommitted") == truth
    markers = _markers(broker, topic, prefix)
    assert all(m > 0 for m in markers.values()), markers  # each task's transactional id committed checkpoints
    # the same transactional ids again (a restarted topology): init_transactions fences and goes on
    RAISED.clear()
    with LocalCluster() as cluster:
        cluster.submit_topology("eo-kafka2", EXACTLY_ONCE, _topology(broker, topic, prefix))
        wait_until(lambda: sum(_read(broker, topic, "read_committed").values()) >= 2 * N, 120, interval=0.5,
                   what="the second run's records")
        cluster.kill_topology("eo-kafka2", wait_secs=0)
    assert _read(broker, topic, "read_committed") == Counter({k: 2 for k in truth})


def test_a_transactional_bolt_outside_exactly_once_is_refused_at_submit(broker: Broker):
    topo = _topology(broker, broker.topic(2), "tx-refused")
    with LocalCluster() as cluster, pytest.raises(InvalidTopologyException,
                                                  match=r"'out'.*topology.state.guarantee exactly_once"):
        cluster.submit_topology("eo-refused", {"topology.state.guarantee": "at_least_once"}, topo)
