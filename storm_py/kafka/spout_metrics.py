"""The Kafka spout's counters and its ``kafkaOffset`` metric (lag per partition, records/s, what was skipped).

:class:`KafkaSpoutStats` is a plain object the spout increments; :meth:`KafkaSpoutStats.offset_metric` is what
the spout registers with ``TopologyContext.register_metric`` (storm-kafka-client's ``kafkaOffset`` names:
``<topic>/partition_<n>/spoutLag``, ``.../latestEmittedOffset``, ``.../latestCompletedOffset``,
``totalSpoutLag``), plus ``recordsPerSec`` over the bucket and the counters of skipped, lost, dead-lettered and
ignored offsets, so nothing is dropped without a number saying so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from storm_py.clock import Clock
    from storm_py.kafka.client import KafkaConsumerClient
    from storm_py.kafka.offsets import PartitionOffsets


class MeteredSpout(Protocol):
    """What the metric and the lag report read of a Kafka spout (:class:`storm_py.kafka.spout.KafkaSpout`): its
    clock, counters, offset managers and consumer."""

    @property
    def clock(self) -> Clock: ...

    @property
    def stats(self) -> KafkaSpoutStats: ...

    @property
    def managers(self) -> Mapping[tuple[str, int], PartitionOffsets]: ...

    @property
    def client(self) -> KafkaConsumerClient: ...


@dataclass
class KafkaSpoutStats:
    """Counters of one spout task since it opened."""

    fetched: int = 0
    emitted: int = 0
    acked: int = 0
    failed: int = 0
    #: trees of several records that failed, and the records they sent again one by one
    failed_trees: int = 0
    split: int = 0
    retried: int = 0
    dead_lettered: int = 0
    skipped_by_translator: int = 0
    translator_errors: int = 0
    ignored_acks: int = 0
    offset_resets: int = 0
    broker_errors: int = 0
    commit_errors: int = 0
    opened_at: float = 0.0

    def started(self, now: float) -> None:
        self.opened_at = now

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def offset_metric(self, spout: MeteredSpout) -> KafkaOffsetMetric:
        """The metric object the spout registers."""
        return KafkaOffsetMetric(spout)


class KafkaOffsetMetric:
    """``get_value_and_reset()``: lag and offsets per partition, totals, records/s since the last call."""

    def __init__(self, spout: MeteredSpout) -> None:
        self.spout = spout
        self.last_time: float | None = None
        self.last_emitted = 0

    def get_value_and_reset(self) -> dict[str, Any]:
        spout = self.spout
        now = spout.clock.now()
        stats = spout.stats
        out: dict[str, Any] = {}
        lags = partition_lag(spout)
        for (topic, partition), m in spout.managers.items():
            prefix = f"{topic}/partition_{partition}"
            if (topic, partition) in lags:
                out[f"{prefix}/spoutLag"] = lags[(topic, partition)]
            out[f"{prefix}/latestEmittedOffset"] = m.fetched_to - 1
            out[f"{prefix}/latestCompletedOffset"] = m.committed
            out[f"{prefix}/skippedOffsets"] = m.skipped
            out[f"{prefix}/lostOffsets"] = m.lost
        out["totalSpoutLag"] = sum(lags.values())
        since = self.last_time if self.last_time is not None else stats.opened_at
        elapsed = max(now - since, 1e-9)
        out["recordsPerSec"] = (stats.emitted - self.last_emitted) / elapsed
        self.last_time, self.last_emitted = now, stats.emitted
        for name in ("dead_lettered", "ignored_acks", "translator_errors", "offset_resets", "broker_errors",
                     "commit_errors"):
            out[name] = getattr(stats, name)
        return out


def partition_offsets(spout: MeteredSpout) -> Iterator[tuple[tuple[str, int], int, int]]:
    """Per owned partition whose log end is known: ``(topic, partition)``, the commit and the log end (the high
    watermark of the last fetch, no broker call)."""
    for tp, m in spout.managers.items():
        marks = spout.client.watermarks(tp, 0.0, cached=True)
        if marks is not None:
            yield tp, m.committed, marks[1]


def partition_lag(spout: MeteredSpout) -> dict[tuple[str, int], int]:
    """Per owned partition: log end minus the commit."""
    return {tp: max(0, head - committed) for tp, committed, head in partition_offsets(spout)}


def lag_report(spout: MeteredSpout) -> dict[str, Any]:
    """What the worker puts in its heartbeat for nimbus's lag view: per owned partition whose log end is known
    ``[topic, partition, committed, log end]``, and the records emitted since the spout opened."""
    rows = [[tp[0], tp[1], committed, head] for tp, committed, head in partition_offsets(spout)]
    return {"type": "KAFKA", "partitions": rows, "emitted": spout.stats.emitted}
