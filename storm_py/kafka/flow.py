"""The Kafka spout's per-record path: fetched records into the offset managers, the waiting records emitted, acks.

The loops that run once per record, kept apart from :class:`~storm_py.kafka.spout.KafkaSpout` so that the
compiled build compiles them (``storm_py.build.HOT_MODULES``; the spout class itself is copied and pickled
with its topology, which compiled classes do not support).  They touch only the offset managers, the waiting
queue and the emit function they are given (and :func:`ack_message` the ack counters); the spout counts, logs
and reports what they return.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from storm_py.api.tuple import DEFAULT_STREAM
from storm_py.kafka.offsets import PartitionOffsets
from storm_py.kafka.spout_metrics import KafkaSpoutStats

#: ``(topic, partition)``
TopicPartition = tuple[str, int]
#: a fetched record (``storm_py.kafka.client.RawRecord``: topic, partition, offset, key, value, timestamp),
#: handled here as a plain tuple object: a fixed-length tuple type would be unpacked and rebuilt per record by
#: the compiled code
Record = tuple[Any, ...]
#: an irregular fetch: the partition, the record's offset, and what happened (``"reset"``: the broker moved
#: below the commit, ``count`` pending records dropped; ``"gap"``: ``count`` offsets before it are gone)
FetchEvent = tuple[TopicPartition, int, str, int]


def take_fetched(records: list[Any], managers: dict[TopicPartition, PartitionOffsets],
                 waiting: deque[Any], ends: dict[TopicPartition, int] | None) -> list[FetchEvent]:
    """Queue fetched ``records`` of owned partitions in ``waiting`` and move each manager's fetch position past
    them (whether a record is new is decided when it is emitted).  ``ends``, when given, receives the next
    offset of each partition read.  Returns the resets and gaps seen, in order."""
    events: list[FetchEvent] = []
    topic = ""
    part = -1
    m: PartitionOffsets | None = None
    append = waiting.append
    r: Record
    for r in records:
        rt: str = r[0]
        rp: int = r[1]  # compiled: compared as machine ints
        if m is None or rp != part or rt != topic:
            topic = rt
            part = rp
            m = managers.get((topic, part))
            if m is None:
                continue
        offset: int = r[2]
        if offset < m.committed:
            # the spout never seeks below its commit: the broker reset the partition (out of range, log
            # truncated or recreated); start over from there rather than skip everything below the commit
            events.append(((topic, part), offset, "reset", m.rebase(offset)))
        if offset != m.fetched_to:
            gap = m.on_fetched(offset)
            if gap:
                events.append(((topic, part), offset, "gap", gap))
        else:
            m.fetched_to = offset + 1
        append(r)
        if ends is not None:
            ends[(topic, part)] = offset + 1
    return events


def emit_waiting(waiting: deque[Any], managers: dict[TopicPartition, PartitionOffsets],
                 emit: Callable[[list[Any], Any, str], object], tracked: bool, budget: int) -> int:
    """Emit up to ``budget`` waiting records as the default translator's ``[topic, partition, offset, key,
    value]`` on the default stream; how many were emitted.  Tracked, each gets ``(topic, partition, offset)`` as
    its message id and is recorded as pending with its record; a record of a partition no longer owned, below
    the commit (taken meanwhile, STORM-2666) or already emitted is dropped."""
    n = 0
    topic = ""
    part = -1
    m: PartitionOffsets | None = None
    r: Record
    while waiting and n < budget:
        r = waiting.popleft()
        if m is None or r[1] != part or r[0] != topic:
            topic = r[0]
            part = r[1]
            m = managers.get((topic, part))
            if m is None:
                continue  # no longer ours
        offset: int = r[2]
        if tracked:
            if not m.should_emit(offset):
                continue
            m.pending[offset] = r  # m.on_emit for a first emit (never scheduled), keeping the record
            m.emitted_to = offset + 1
            emit([topic, part, offset, r[3], r[4]], (topic, part, offset), DEFAULT_STREAM)
        else:
            emit([topic, part, offset, r[3], r[4]], None, DEFAULT_STREAM)
        n += 1
    return n


def emit_waiting_trees(waiting: deque[Any], managers: dict[TopicPartition, PartitionOffsets],
                       emit_batch: Callable[[list[list[Any]], Any, str], object], budget: int) -> int:
    """Tracked, with the default translator: emit up to ``budget`` waiting records in trees, each of up to its
    partition's ``tree_size`` consecutive waiting records of one partition, with ``(topic, partition, [offsets])``
    as its message id; how many records were emitted.  Records are dropped as by :func:`emit_waiting`."""
    n = 0
    popleft = waiting.popleft
    while waiting and n < budget:
        r: Record = popleft()
        topic_obj = r[0]  # the tree's values share these objects
        part_obj = r[1]
        topic: str = topic_obj
        part: int = part_obj
        m = managers.get((topic, part))
        if m is None:
            continue  # no longer ours
        size = min(m.tree_size, budget - n)
        batch: list[list[Any]] = []
        offsets: list[Any] = []
        records: list[Any] = []
        new_from = m.emitted_to
        while True:
            offset: Any = r[2]  # compiled: the record's int object goes on as it is (no unboxing and re-boxing)
            at: int = offset
            if at >= new_from:  # m.should_emit(offset), written out
                new_from = at + 1
                records.append(r)
                batch.append([topic_obj, part_obj, offset, r[3], r[4]])
                offsets.append(offset)
                if len(offsets) >= size:
                    break
            if not waiting:
                break
            r = popleft()
            next_topic: str = r[0]
            next_part: int = r[1]
            if next_part != part or next_topic != topic:
                waiting.appendleft(r)  # the next tree's first record
                break
        if offsets:
            m.on_tree_emit(offsets, records)
            emit_batch(batch, (topic_obj, part_obj, offsets), DEFAULT_STREAM)
            n += len(offsets)
    return n


def ack_message(managers: dict[TopicPartition, PartitionOffsets], stats: KafkaSpoutStats,
                msg_id: tuple[Any, ...]) -> None:
    """``KafkaSpout.ack``: the tuple (or tree) of ``msg_id`` was fully processed, so its offsets are acked and
    counted in ``stats.acked``; an offset not tracked counts in ``stats.ignored_acks``: its partition is no
    longer ours (STORM-2104), or :meth:`PartitionOffsets.on_ack` ignored it (and counted it)."""
    m = managers.get((msg_id[0], msg_id[1]))
    offsets = msg_id[2]
    if type(offsets) is list:
        n = m.on_tree_ack(offsets) if m is not None else 0
        stats.acked += n
        stats.ignored_acks += len(offsets) - n
    elif m is not None and m.on_ack(offsets):
        stats.acked += 1
    else:
        stats.ignored_acks += 1
