"""Where a Kafka spout keeps its offsets: committed to Kafka (default) or in ZooKeeper with storm-kafka's layout.

Both stores answer where newly owned partitions start and persist committed offsets:

* :class:`KafkaOffsetStore` commits to the consumer group with the metadata ``{"topologyId", "taskId"}`` (JSON)
  and starts partitions by storm-kafka-client's first-poll strategy
  (:func:`~storm_py.kafka.offsets.first_poll_position`).  Commits are asynchronous; their outcome comes back
  through the client after a poll.
* :class:`ZkOffsetStore` keeps storm-kafka's znode ``<zk_root>/<id>/partition_<n>`` holding
  ``{"topology": {"id", "name"}, "offset", "partition", "broker": {"host", "port"}, "topic"}`` in the cluster's
  state store (ZooKeeper in a cluster), and starts partitions by storm-kafka's rules
  (:func:`~storm_py.kafka.offsets.zk_start_offset`), so a user of the old spout moves over without
  reprocessing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from storm_py.kafka.client import KafkaClientError, KafkaConsumerClient, TopicPartition
from storm_py.kafka.config import EARLIEST_TIME, LATEST_TIME, KafkaSpoutConfig
from storm_py.kafka.offsets import BEGINNING, END, StartPosition, first_poll_position, zk_start_offset

log = logging.getLogger(__name__)

#: how long a metadata call to the broker may take inside a spout call
CALL_TIMEOUT = 2.0


class OffsetStore(Protocol):
    """Start positions of newly owned partitions; persistence of committed offsets."""

    def start_positions(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...

    def commit(self, offsets: Mapping[TopicPartition, int], sync: bool) -> bool: ...


def resolve(client: KafkaConsumerClient, tp: TopicPartition, position: StartPosition) -> int:
    """A logical start position as an offset of ``tp`` (asks the broker for its watermarks)."""
    if isinstance(position, int):
        return position
    marks = client.watermarks(tp, CALL_TIMEOUT)
    if marks is None:
        raise KafkaClientError(f"the broker gave no offsets for {tp[0]}/{tp[1]}")
    return marks[0] if position == BEGINNING else marks[1]


def commit_metadata(topology_id: str, task_id: int) -> str:
    """The JSON stored with every Kafka commit (storm-kafka-client's ``{topologyId, taskId}``)."""
    return json.dumps({"topologyId": topology_id, "taskId": task_id}, separators=(",", ":"))


def committed_by(metadata: str | None) -> str | None:
    """The topology id in a commit's metadata (None when absent or not ours)."""
    if not metadata:
        return None
    try:
        value = json.loads(metadata)
    except ValueError:
        return None
    tid = value.get("topologyId") if isinstance(value, dict) else None
    return tid if isinstance(tid, str) else None


class KafkaOffsetStore:
    """Offsets committed to the consumer group, with the topology id in the metadata."""

    def __init__(self, client: KafkaConsumerClient, config: KafkaSpoutConfig, topology_id: str, task_id: int) -> None:
        self.client = client
        self.config = config
        self.topology_id = topology_id
        self.metadata = commit_metadata(topology_id, task_id)

    def start_positions(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        tps = list(tps)
        committed = self.client.committed(tps, CALL_TIMEOUT)
        out: dict[TopicPartition, int] = {}
        for tp in tps:
            offset, meta = committed.get(tp, (None, None))
            pos = first_poll_position(self.config.first_poll_offset_strategy, offset, committed_by(meta),
                                      self.topology_id)
            out[tp] = resolve(self.client, tp, pos)
            log.info("kafka spout: %s/%d starts at offset %d (%s, commit %s)", tp[0], tp[1], out[tp],
                     self.config.first_poll_offset_strategy, offset)
        return out

    def commit(self, offsets: Mapping[TopicPartition, int], sync: bool) -> bool:
        """Commit; True when confirmed on return (sync), False when the outcome comes later."""
        self.client.commit(offsets, self.metadata, sync)
        return sync


class _ClusterStateOffsets(Protocol):
    def kafka_offset_get(self, zk_root: str, spout_id: str, partition: int, topic: str | None = None) -> Any: ...

    def kafka_offset_set(self, zk_root: str, spout_id: str, partition: int, value: Any,
                         topic: str | None = None) -> None: ...


class ZkOffsetStore:
    """storm-kafka's offsets in ZooKeeper (through the cluster's state store)."""

    def __init__(self, state: _ClusterStateOffsets, client: KafkaConsumerClient, config: KafkaSpoutConfig,
                 spout_id: str, topology_id: str, topology_name: str) -> None:
        self.state = state
        self.client = client
        self.config = config
        self.spout_id = spout_id
        self.topology_id = topology_id
        self.topology_name = topology_name
        #: offsets jumped at start because of max_offset_behind
        self.skipped = 0

    def _topic(self, tp: TopicPartition) -> str | None:
        return tp[0] if self.config.wildcard else None

    def read(self, tp: TopicPartition) -> Any:
        """The znode's JSON for ``tp`` (None when absent)."""
        return self.state.kafka_offset_get(self.config.zk_root, self.spout_id, tp[1], self._topic(tp))

    def _start_offset(self, tp: TopicPartition) -> int:
        t = self.config.start_offset_time
        if t == EARLIEST_TIME:
            return resolve(self.client, tp, BEGINNING)
        if t == LATEST_TIME:
            return resolve(self.client, tp, END)
        found = self.client.offset_for_time(tp, t, CALL_TIMEOUT)
        return found if found is not None else resolve(self.client, tp, END)

    def start_positions(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for tp in tps:
            node = self.read(tp)
            stored = int(node["offset"]) if isinstance(node, dict) and "offset" in node else None
            topo = node.get("topology", {}).get("id") if isinstance(node, dict) else None
            start = zk_start_offset(stored, topo, self.topology_id, self.config.ignore_zk_offsets,
                                    self._start_offset(tp), self.config.max_offset_behind)
            if start.skipped:
                self.skipped += start.skipped
                log.warning("kafka spout: %s/%d jumps from offset %s to %d, skipping %d records: %s",
                            tp[0], tp[1], stored, start.offset, start.skipped, start.reason)
            else:
                log.info("kafka spout: %s/%d starts at offset %d (%s)", tp[0], tp[1], start.offset, start.reason)
            out[tp] = start.offset
        return out

    def commit(self, offsets: Mapping[TopicPartition, int], sync: bool) -> bool:
        for tp, offset in offsets.items():
            host, port = self.client.leader_of(tp)
            value = {"topology": {"id": self.topology_id, "name": self.topology_name}, "offset": int(offset),
                     "partition": tp[1], "broker": {"host": host, "port": port}, "topic": tp[0]}
            self.state.kafka_offset_set(self.config.zk_root, self.spout_id, tp[1], value, self._topic(tp))
        return True

