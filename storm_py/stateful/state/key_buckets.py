"""This module owns the entries of keyed state bucketed by key group, and the buckets one worker's moves share.

Each entry of a keyed component's state belongs to the key group of its key: the key is the value of the one
grouping field, or the list (or tuple) of the grouping values, hashed as the fields grouping hashes them
(:mod:`storm_py.runtime.groupers`; the groups: :mod:`storm_py.runtime.key_groups`).  A rescale's moves
(:mod:`storm_py.stateful.state.key_group_move`) read each previous-generation state once per worker, hash each
key once and keep the buckets of the groups that worker's new tasks own, here.

A compiled build compiles this module: a move hashes every key of the state it reads (a million keys at a rescale
of a large count), and the buckets are built by the worker for itself, never copied with a topology.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable
from typing import Any

from storm_py.runtime.groupers import values_hash
from storm_py.runtime.key_groups import key_group

#: the entries of one key group of one source, as ``(key, value)`` pairs
Entries = list[tuple[Any, Any]]
#: a source read by a worker: its topology (the move's scope), its namespace and the checkpoint it is read as of
SourceKey = tuple[str, str, int]


def key_group_of(key: Any, max_parallelism: int) -> int:
    """The key group of a state entry's key: the grouping values' hash (a list or tuple key: its items are the
    values; any other key is the one value) mod ``max_parallelism``, as the fields grouping routes it."""
    return key_group(values_hash(key if isinstance(key, (list, tuple)) else (key,)), max_parallelism)


def by_key_group(entries: Iterable[tuple[Any, Any]], groups: Collection[int],
                 max_parallelism: int) -> dict[int, Entries]:
    """The entries whose key group is one of ``groups``, bucketed by group (each key hashed once, each pair
    kept as given); a group without entries has no bucket."""
    wanted = set(groups)
    out: dict[int, Entries] = {}
    pair: Any  # kept whole: a compiled build would otherwise unpack it and build it again
    for pair in entries:
        group = key_group_of(pair[0], max_parallelism)
        if group in wanted:
            bucket = out.get(group)
            if bucket is None:
                bucket = out[group] = []
            bucket.append(pair)
    return out


class GroupedSources:
    """The previous-generation states one worker's new tasks read, each read once and bucketed by key group.

    A source is keyed by its topology, namespace and the checkpoint it is read as of.  The first task to need
    it reads it and keeps the buckets of the groups the worker's pending new tasks own; a task releases its
    groups once its move is committed (a move that failed releases nothing: its retry finds them again), and a
    source whose buckets are all released is dropped.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sources: dict[SourceKey, dict[int, Entries]] = {}

    def buckets(self, source: SourceKey, read: Callable[[], Iterable[tuple[Any, Any]]],
                wanted: Callable[[], Collection[int]], max_parallelism: int) -> dict[int, Entries]:
        """The buckets of ``source``, read (``read()``: its committed entries) and bucketed for the groups
        ``wanted()`` names the first time it is asked for."""
        with self._lock:
            found = self._sources.get(source)
            if found is None:
                found = by_key_group(read(), wanted(), max_parallelism)
                if found:
                    self._sources[source] = found
            return found

    def release(self, sources: Iterable[SourceKey], groups: range) -> None:
        """Drop the buckets of ``groups`` (a task's, its move committed) from ``sources``, and from the same
        states read as of another checkpoint (a task that moved as of another one will not take them)."""
        states = {source[:2] for source in sources}
        with self._lock:
            for source in [s for s in self._sources if s[:2] in states]:
                found = self._sources[source]
                for group in groups:
                    found.pop(group, None)
                if not found:
                    del self._sources[source]

    def __len__(self) -> int:
        """How many sources are held."""
        with self._lock:
            return len(self._sources)


#: the sources read by the new tasks of this process (a worker), shared by them
WORKER_SOURCES = GroupedSources()
