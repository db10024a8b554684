"""storm-perf's topologies laid out for a multi-worker cluster (submitted by ``bench/cluster_perf.py``), and a Kafka
spout one (``bench/kafka_cluster.py``).

Each component has one executor per worker; ConstSpout topologies use shuffle grouping (so about half the tuples
cross workers), the word count keeps spout -> split in the worker (local-or-shuffle, as a Storm user would) and
fields-groups split -> count across workers.
"""

from __future__ import annotations

from typing import Any

from storm_perf import ConstSpout, Count, IdBolt, NullBolt, SentenceSpout, Split

from storm_py import TopologyBuilder


def _par(conf: dict[str, Any] | None) -> int:
    return int((conf or {}).get("topology.workers", 2))


def const_null(conf: dict[str, Any] | None = None) -> Any:
    """ConstSpout -> NullBolt."""
    n = _par(conf)
    b = TopologyBuilder()
    b.set_spout("spout", ConstSpout("some data"), n)
    b.set_bolt("null", NullBolt(), n).shuffle_grouping("spout")
    return b.create_topology()


def const_id_null(conf: dict[str, Any] | None = None) -> Any:
    """ConstSpout -> IdBolt -> NullBolt."""
    n = _par(conf)
    b = TopologyBuilder()
    b.set_spout("spout", ConstSpout("some data"), n)
    b.set_bolt("id", IdBolt(), n).shuffle_grouping("spout")
    b.set_bolt("null", NullBolt(), n).shuffle_grouping("id")
    return b.create_topology()


def word_count(conf: dict[str, Any] | None = None) -> Any:
    """Sentences -> split (in-worker) -> running counts (fields grouping across workers)."""
    n = _par(conf)
    b = TopologyBuilder()
    b.set_spout("spout", SentenceSpout(), n)
    b.set_bolt("split", Split(), n).local_or_shuffle_grouping("spout")
    b.set_bolt("count", Count(), n).fields_grouping("split", ["word"])
    return b.create_topology()


def kafka_null(conf: dict[str, Any] | None = None) -> Any:
    """KafkaSpout -> NullBolt, reading the topic ``bench.kafka.topic`` of ``bench.kafka.bootstrap`` from offset 0
    under the group ``bench.kafka.group``, ``bench.kafka.per_tree`` records per tuple tree (default 1), the bolt
    subscribed with ``bench.kafka.grouping`` (``shuffle``, the default, or ``local_or_shuffle``; submitted by
    ``bench/kafka_cluster.py``)."""
    from storm_py.kafka import KafkaSpout, KafkaSpoutConfig

    conf = conf or {}
    n = _par(conf)
    spout = KafkaSpout(KafkaSpoutConfig(str(conf["bench.kafka.bootstrap"]), [str(conf["bench.kafka.topic"])],
                                        group_id=str(conf["bench.kafka.group"]), first_poll_offset_strategy="EARLIEST",
                                        records_per_tree=int(conf.get("bench.kafka.per_tree", 1))))
    b = TopologyBuilder()
    b.set_spout("kafka", spout, n)
    bolt = b.set_bolt("null", NullBolt(), n)
    if conf.get("bench.kafka.grouping") == "local_or_shuffle":
        bolt.local_or_shuffle_grouping("kafka")
    else:
        bolt.shuffle_grouping("kafka")
    return b.create_topology()
