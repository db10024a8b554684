"""This module owns moving keyed state by key group into the tasks of a rescaled component.

Each entry of a keyed component's state belongs to the key group of its key: the key is the value of the one
grouping field, or the list (or tuple) of the grouping values, hashed as the fields grouping hashes them
(:mod:`storm_py.runtime.key_groups`).  Partitioned that way, a task's committed state can be split by group.

After a rescale a task of the new generation starts from an empty namespace (:mod:`storm_py.stateful.state.task_names`)
and, before its first tuple, takes its key groups from the committed states of the previous generation's tasks
that held them (:func:`storm_py.runtime.key_groups.sources_of`), commits them under the checkpoint's txid and
marks its namespace moved.  A task killed midway moves again from the same committed sources (they are never
written after the rescale), so the move is all or nothing.  A previous-generation task that never took its own
share (two rescales in a row) is read through: its share comes from its own sources, recursively.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from storm_py.api.context import TopologyContext
from storm_py.config.keys import setting
from storm_py.runtime.groupers import values_hash
from storm_py.runtime.key_groups import MAX_PARALLELISM, groups_of_task, key_group, sources_of
from storm_py.stateful.state.key_value import NO_TXID, KeyValueState
from storm_py.stateful.state.providers import new_state
from storm_py.stateful.state.task_names import Rescales, namespace

log = logging.getLogger(__name__)

#: the namespace suffix and key marking a task's namespace as holding its moved share
MOVED_SUFFIX: Final = "$moved"
MOVED_KEY: Final = "moved"

OpenState = Callable[[str], KeyValueState]


def key_group_of(key: Any, max_parallelism: int) -> int:
    """The key group of a state entry's key: the grouping values' hash (a list or tuple key: its items are the
    values; any other key is the one value) mod ``max_parallelism``."""
    values = list(key) if isinstance(key, (list, tuple)) else [key]
    return key_group(values_hash(values), max_parallelism)


def _overlap(a: range, b: range) -> range:
    return range(max(a.start, b.start), min(a.stop, b.stop))


class KeyGroupMove:
    """The move of one task's share of a rescaled component's state (a thin driver over ``open_state``)."""

    def __init__(self, rescales: Rescales, component: str, index: int, max_parallelism: int,
                 open_state: OpenState) -> None:
        self.rescales = rescales
        self.component = component
        self.index = index
        self.max_parallelism = max_parallelism
        self.open_state = open_state
        self.generation = rescales.generation(component)

    @classmethod
    def of_task(cls, conf: Mapping[str, Any], context: TopologyContext) -> KeyGroupMove:
        """The move of the task ``context`` runs, its states opened through the topology's provider."""
        return cls(Rescales.of(conf), context.this_component_id, context.get_this_task_index(),
                   int(setting(conf, MAX_PARALLELISM)), lambda ns: new_state(ns, conf, context))

    def _namespace(self, generation: int, index: int) -> str:
        return namespace(self.rescales, self.component, index, -1, generation)

    def _moved(self, ns: str) -> bool:
        return self.open_state(ns + MOVED_SUFFIX).get(MOVED_KEY) is not None

    @property
    def pending(self) -> bool:
        """Whether this task has yet to take its share (its component was rescaled and it did not move yet)."""
        return self.generation > 0 and not self._moved(self._namespace(self.generation, self.index))

    def settle(self, state: KeyValueState, committed: int) -> int:
        """Take this task's key groups from the previous generation's states as of checkpoint ``committed`` into
        ``state`` (this task's own), commit them and mark the namespace moved; return the entries moved.  Nothing
        happens when the share was taken already."""
        if not self.pending:
            return 0
        n = self.rescales.tasks_at(self.component, self.generation)
        moved = 0
        for key, value in self._gather(self.generation, self.index, groups_of_task(self.index, n,
                                                                                     self.max_parallelism),
                                       committed, own=True):
            state.put(key, value)
            moved += 1
        if committed > NO_TXID:
            state.prepare_commit(committed)
            state.commit(committed)
        else:
            state.commit()
        marker = self.open_state(self._namespace(self.generation, self.index) + MOVED_SUFFIX)
        marker.put(MOVED_KEY, committed)
        marker.commit()
        log.info("%s task index %d (generation %d) took %d entries of its key groups", self.component, self.index,
                 self.generation, moved)
        return moved

    def _gather(self, generation: int, index: int, groups: range, committed: int,
                own: bool = False) -> Iterator[tuple[Any, Any]]:
        """The committed entries of ``groups`` that task ``index`` of ``generation`` holds, or would hold had it
        moved (``own``: the task itself, which gathers from its sources)."""
        ns = self._namespace(generation, index)
        if not own and (generation == 0 or self._moved(ns)):
            m = self.max_parallelism
            for key, value in self._committed_entries(ns, committed):
                if key_group_of(key, m) in groups:
                    yield key, value
            return
        old = self.rescales.tasks_at(self.component, generation - 1)
        new = self.rescales.tasks_at(self.component, generation)
        for move in sources_of(index, old, new, self.max_parallelism):
            overlap = _overlap(move.groups, groups)
            if overlap:
                yield from self._gather(generation - 1, move.source, overlap, committed)

    def _committed_entries(self, ns: str, committed: int) -> list[tuple[Any, Any]]:
        """The entries of ``ns`` as of checkpoint ``committed``: a snapshot it prepared is committed first when
        the checkpoint covers it (its commit had not reached it), else rolled back, as its recovery would."""
        state = self.open_state(ns)
        prepared = state.prepared_txid()
        if prepared is not None:
            if prepared <= committed:
                state.commit(prepared)
            else:
                state.rollback()
            state = self.open_state(ns)
        return list(state)
