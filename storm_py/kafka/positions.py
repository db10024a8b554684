"""This module owns the Kafka spout's position as managed state (``topology.state.guarantee: exactly_once``): the
next offset to emit of each owned partition, as saved with a checkpoint and restored after a restart."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from storm_py.kafka.client import TopicPartition
from storm_py.kafka.offsets import PartitionOffsets

#: the key of the positions in the spout's state
POSITIONS_KEY = "offsets"


def positions(managers: Mapping[TopicPartition, PartitionOffsets], waiting: Iterable[Any],
              unassigned: Mapping[TopicPartition, int] | None = None) -> dict[TopicPartition, int]:
    """The next offset to emit per partition: an owned partition's first fetched record still waiting, else what
    it fetches next; a partition restored but not assigned yet (``unassigned``: the spout has not looked up which
    partitions it owns since its restore) keeps its restored position, so a checkpoint taken in between saves it."""
    out = dict(unassigned or {})
    out.update((tp, m.fetched_to) for tp, m in managers.items())
    for record in waiting:
        tp = (record[0], record[1])
        if tp in managers and record[2] < out[tp]:
            out[tp] = record[2]
    return out


def to_saved(pos: Mapping[TopicPartition, int]) -> list[list[Any]]:
    """``[[topic, partition, offset], ...]`` (what the codec carries), sorted."""
    return [[t, p, o] for (t, p), o in sorted(pos.items())]


def from_saved(saved: object) -> dict[TopicPartition, int]:
    """Positions read back; anything malformed is a ``ValueError`` naming it."""
    if saved is None:
        return {}
    out: dict[TopicPartition, int] = {}
    if isinstance(saved, list):
        for row in saved:
            if (isinstance(row, list) and len(row) == 3 and isinstance(row[0], str) and isinstance(row[1], int)
                    and isinstance(row[2], int)):
                out[(row[0], row[1])] = row[2]
                continue
            raise ValueError(f"the Kafka spout's saved position {row!r} is not [topic, partition, offset]")
        return out
    raise ValueError(f"the Kafka spout's saved positions {saved!r} are not a list")
