"""Grouping implementations: which target tasks get a tuple, by Storm's rules, hashing stably across processes.

The fields hash never uses Python's ``hash()`` (salted per process); it is a 32-bit hash of the selected values
computed the same way in every process and run.  Targets are always sorted ascending first, as in Storm.
"""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from storm_py.api.components import CustomStreamGrouping
from storm_py.api.topology import (
    ALL,
    CUSTOM,
    DIRECT,
    FIELDS,
    GLOBAL,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    SHUFFLE,
    Grouping,
)
from storm_py.api.tuple import Fields
from storm_py.runtime import load_aware
from storm_py.runtime.key_groups import group_table

_MASK: Final = 0xFFFFFFFF


def value_hash(v: Any) -> int:
    """A 32-bit hash of one value, identical in every process (strings and bytes by CRC-32)."""
    if isinstance(v, str):
        return zlib.crc32(v.encode("utf-8", "surrogatepass"))
    if isinstance(v, bool):
        return 1231 if v else 1237
    if isinstance(v, int):
        u = v & 0xFFFFFFFFFFFFFFFF
        return (u ^ (u >> 32)) & _MASK
    if isinstance(v, (bytes, bytearray, memoryview)):
        return zlib.crc32(v)
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 2**63:
            return value_hash(int(v))
        return zlib.crc32(struct.pack(">d", v))
    if v is None:
        return 0
    if isinstance(v, (list, tuple)):
        return values_hash(v)
    if isinstance(v, dict):
        h = 0
        for k, x in v.items():
            h = (h + (value_hash(k) ^ value_hash(x))) & _MASK
        return h
    return zlib.crc32(repr(v).encode("utf-8", "surrogatepass"))


def values_hash(values: Sequence[Any]) -> int:
    """Hash of a list of values (Java's ``Arrays.deepHashCode`` shape: ``31 * h + hash(v)``)."""
    h = 1
    for v in values:
        h = (31 * h + value_hash(v)) & _MASK
    return h


class Chooser:
    """Picks the target tasks of one tuple for one (stream, subscriber) pair: ``choose(task, values)``.

    A class rather than a plain callable so that compiled callers call ``choose`` directly (no generic call
    and argument parsing per tuple); an instance is also callable, with the same arguments.
    """

    __slots__ = ()

    def choose(self, task: int, values: list[Any]) -> list[int]:
        """The target tasks of a tuple of ``values`` emitted by ``task``."""
        raise NotImplementedError

    def __call__(self, task: int, values: list[Any]) -> list[int]:
        return self.choose(task, values)


class OneTarget(Chooser):
    """A chooser that picks exactly one target per tuple: ``choose_one`` says which, without a list (what
    ``SpoutCollector.emit_batch`` calls per tuple)."""

    __slots__ = ()

    def choose_one(self, task: int, values: list[Any]) -> int:
        """The one target task of a tuple of ``values`` emitted by ``task``."""
        raise NotImplementedError

    def choose(self, task: int, values: list[Any]) -> list[int]:
        return [self.choose_one(task, values)]


class Fixed(Chooser):
    """The same targets for every tuple (global, a fields grouping on no field, all, no targets)."""

    __slots__ = ("_targets",)

    def __init__(self, targets: list[int]) -> None:
        self._targets = targets

    def choose(self, task: int, values: list[Any]) -> list[int]:
        return list(self._targets)


class AnyOne(OneTarget):
    """The none grouping: one target at random."""

    __slots__ = ("_rng", "_targets")

    def __init__(self, targets: list[int], rng: random.Random) -> None:
        self._targets = targets
        self._rng = rng

    def choose_one(self, task: int, values: list[Any]) -> int:
        return self._rng.choice(self._targets)


class Shuffle(OneTarget):
    """Round robin over a once-shuffled list of targets."""

    __slots__ = ("_i", "_n", "_targets")

    def __init__(self, targets: list[int], rng: random.Random) -> None:
        t = list(targets)
        rng.shuffle(t)
        self._targets = t
        self._n = len(t)
        self._i = 0

    def choose_one(self, task: int, values: list[Any]) -> int:
        i = self._i
        self._i = i + 1 if i + 1 < self._n else 0
        return self._targets[i]


class LoadAwareShuffle(OneTarget):
    """Shuffling that prefers less loaded targets (Storm's load-aware messaging): round robin over a choice table
    of targets weighted by their loads (:mod:`storm_py.runtime.load_aware`), rebuilt by :meth:`refresh`.

    ``local`` (local-or-shuffle) names the worker's own targets: they are preferred until their mean load passes
    the higher bound.  Per tuple it costs what :class:`Shuffle` costs.
    """

    __slots__ = ("_i", "_n", "_rng", "_scope", "_table", "_weights", "bounds", "local", "targets")

    def __init__(self, targets: list[int], rng: random.Random, local: list[int] | None = None,
                 bounds: tuple[float, float] = (0.2, 0.8)) -> None:
        self.targets = list(targets)
        self.local = list(local) if local else []
        self.bounds = bounds
        self._rng = rng
        self._weights = {t: load_aware.MAX_WEIGHT for t in self.targets}
        self._scope = self.local or self.targets
        self._table: list[int] = []
        self._n = 0
        self._i = 0
        self._rebuild()

    def _rebuild(self) -> None:
        scope = self._scope
        self._table = load_aware.choice_table(scope, [self._weights[t] for t in scope], self._rng)
        self._n = len(self._table)
        self._i = 0

    @property
    def scope(self) -> list[int]:
        """The targets tuples go to now."""
        return list(self._scope)

    def refresh(self, loads: dict[int, float]) -> None:
        """New weights from the targets' ``loads`` (task -> load in [0, 1]; a task not given counts as idle)."""
        if self.local:
            scope = self._scope
            mean = sum(loads.get(t, 0.0) for t in scope) / len(scope)
            wide = load_aware.widen(scope is self.local, mean, self.bounds[0], self.bounds[1])
            chosen = self.targets if wide else self.local
            if chosen is not scope:
                self._scope = chosen
                self._weights = {t: load_aware.MAX_WEIGHT for t in self.targets}
                self._rebuild()
                return
        scope = self._scope
        old = [self._weights[t] for t in scope]
        new = load_aware.next_weights(old, [loads.get(t, 0.0) for t in scope])
        if new != old:
            for t, w in zip(scope, new, strict=True):
                self._weights[t] = w
            self._rebuild()

    def choose_one(self, task: int, values: list[Any]) -> int:
        i = self._i
        self._i = i + 1 if i + 1 < self._n else 0
        return self._table[i]


class FieldsHash(OneTarget):
    """Equal selected values, same task: ``targets[hash(selected) mod n]``."""

    __slots__ = ("_idx", "_n", "_targets")

    def __init__(self, targets: list[int], out_fields: Fields, group_fields: Fields) -> None:
        self._targets = targets
        self._n = len(targets)
        self._idx = [out_fields.index(f) for f in group_fields]

    def choose_one(self, task: int, values: list[Any]) -> int:
        return self._targets[values_hash([values[i] for i in self._idx]) % self._n]

    @property
    def key_indices(self) -> list[int]:
        """Positions of the key fields in the stream's values."""
        return list(self._idx)

    def target_of_hash(self, h: int) -> int:
        """The task of a tuple whose key values hash (:func:`values_hash`) to ``h``."""
        return self._targets[h % self._n]

    def targets_of_hashes(self, hashes: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
        """:meth:`target_of_hash` of each hash (the rows of a batch)."""
        return hash_targets(self._targets, hashes)


class KeyGroupHash(OneTarget):
    """The fields grouping into a component with keyed state: equal selected values, same key group, and each task
    owns a contiguous range of the ``max_parallelism`` key groups (:mod:`storm_py.runtime.key_groups`), so the
    component's state can move by whole groups when its task count changes.

    ``target_of_hash(h)`` and ``targets_of_hashes(hashes)`` map 32-bit hashes of selected values (what
    :func:`values_hash` returns) to tasks, as :meth:`choose_one` does for one tuple.
    """

    __slots__ = ("_by_group", "_idx", "_m", "max_parallelism", "targets")

    def __init__(self, targets: list[int], out_fields: Fields, group_fields: Fields, max_parallelism: int) -> None:
        self.targets = list(targets)
        self.max_parallelism = self._m = max_parallelism
        #: the target task of every key group, by group
        self._by_group = [self.targets[i] for i in group_table(len(self.targets), max_parallelism)]
        self._idx = [out_fields.index(f) for f in group_fields]

    @property
    def key_group_targets(self) -> list[int]:
        """The target task of each key group (index: the group); a vectorized caller indexes it by ``h % m``."""
        return list(self._by_group)

    def target_of_hash(self, h: int) -> int:
        """The target task of a tuple whose selected values hash to ``h``."""
        return self._by_group[h % self._m]

    def targets_of_hashes(self, hashes: Sequence[int]) -> list[int]:
        """The target task of each hash in ``hashes``, in order."""
        by_group, m = self._by_group, self._m
        return [by_group[h % m] for h in hashes]

    def choose_one(self, task: int, values: list[Any]) -> int:
        return self._by_group[values_hash([values[i] for i in self._idx]) % self._m]


#: distinct string keys a one-field fields grouping remembers the target of (then it starts over)
KEY_CACHE_SIZE: Final = 65536


class OneFieldHash(OneTarget):
    """The fields grouping on one field: string keys remember their target.

    Only ``str`` keys are cached: a dict would treat ``1``, ``1.0`` and ``True`` as one key while their
    hashes (Storm's) differ.
    """

    __slots__ = ("_cache", "_index", "_n", "_targets")

    def __init__(self, targets: list[int], index: int) -> None:
        self._targets = targets
        self._index = index
        self._n = len(targets)
        self._cache: dict[str, int] = {}

    def choose_one(self, task: int, values: list[Any]) -> int:
        key = values[self._index]
        if type(key) is str:
            cache = self._cache
            hit = cache.get(key)
            if hit is None:
                if len(cache) >= KEY_CACHE_SIZE:
                    cache.clear()
                hit = cache[key] = self._targets[values_hash([key]) % self._n]
            return hit
        return self._targets[values_hash([key]) % self._n]

    @property
    def key_indices(self) -> list[int]:
        """Position of the key field in the stream's values."""
        return [self._index]

    def target_of_hash(self, h: int) -> int:
        """The task of a tuple whose key value hashes (:func:`values_hash` of ``[key]``) to ``h``."""
        return self._targets[h % self._n]

    def targets_of_hashes(self, hashes: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
        """:meth:`target_of_hash` of each hash (the rows of a batch)."""
        return hash_targets(self._targets, hashes)


def hash_targets(targets: list[int], hashes: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """``targets[h % len(targets)]`` of each hash, vectorized."""
    table: npt.NDArray[np.int64] = np.asarray(targets, dtype=np.int64)
    picked: npt.NDArray[np.int64] = table[hashes % np.uint64(len(targets))]
    return picked


class PartialKey(OneTarget):
    """Two candidate tasks per key (two hash seeds); the one that got fewer tuples so far wins."""

    __slots__ = ("_counts", "_idx", "_n", "_targets")

    def __init__(self, targets: list[int], out_fields: Fields, group_fields: Fields) -> None:
        self._targets = targets
        self._n = len(targets)
        self._idx = [out_fields.index(f) for f in group_fields]
        self._counts = [0] * len(targets)

    def choose_one(self, task: int, values: list[Any]) -> int:
        key = [values[i] for i in self._idx]
        h1 = values_hash(key) % self._n
        h2 = values_hash([*key, "\x01second"]) % self._n
        pick = h1 if self._counts[h1] <= self._counts[h2] else h2
        self._counts[pick] += 1
        return self._targets[pick]


class Custom(Chooser):
    """Delegates to a user's :class:`CustomStreamGrouping`."""

    __slots__ = ("_grouping",)

    def __init__(self, grouping: CustomStreamGrouping) -> None:
        self._grouping = grouping

    def choose(self, task: int, values: list[Any]) -> list[int]:
        return list(self._grouping.choose_tasks(task, values))


def make_grouper(
    grouping: Grouping,
    targets: list[int],
    out_fields: Fields,
    worker_tasks: set[int],
    rng: random.Random,
    prepare_custom: Callable[[CustomStreamGrouping, list[int]], None],
    load_aware_bounds: tuple[float, float] | None = None,
    key_groups: int | None = None,
) -> Chooser | None:
    """A chooser for one (stream, subscriber) pair; ``None`` for direct groupings (the producer chooses).

    With ``load_aware_bounds`` (the locality bounds, lower and higher) shuffle and local-or-shuffle are
    :class:`LoadAwareShuffle`; without, round robin.  With ``key_groups`` (the subscriber keeps keyed state: its
    ``topology.state.max.parallelism``) a fields grouping on some fields routes by key group
    (:class:`KeyGroupHash`); every other subscriber keeps ``hash % n``.
    """
    targets = sorted(targets)
    kind = grouping.kind
    if kind == DIRECT:
        return None
    if not targets:
        return Fixed([])
    if kind == SHUFFLE:
        if load_aware_bounds is not None and len(targets) > 1:
            return LoadAwareShuffle(targets, rng, bounds=load_aware_bounds)
        return Shuffle(targets, rng)
    if kind == LOCAL_OR_SHUFFLE:
        local = [t for t in targets if t in worker_tasks]
        if load_aware_bounds is not None and len(targets) > 1:
            return LoadAwareShuffle(targets, rng, local=local, bounds=load_aware_bounds)
        return Shuffle(local or targets, rng)
    if kind == FIELDS:
        assert grouping.fields is not None
        if len(grouping.fields) == 0:
            return Fixed(targets[:1])
        if key_groups is not None:
            return KeyGroupHash(targets, out_fields, grouping.fields, key_groups)
        if len(grouping.fields) == 1:
            return OneFieldHash(targets, out_fields.index(grouping.fields[0]))
        return FieldsHash(targets, out_fields, grouping.fields)
    if kind == GLOBAL:
        return Fixed(targets[:1])
    if kind == ALL:
        return Fixed(targets)
    if kind == NONE:
        return AnyOne(targets, rng)
    if kind == PARTIAL_KEY:
        assert grouping.fields is not None
        return PartialKey(targets, out_fields, grouping.fields)
    if kind == CUSTOM:
        assert grouping.custom is not None
        prepare_custom(grouping.custom, targets)
        return Custom(grouping.custom)
    raise ValueError(f"unknown grouping kind {kind!r}")
