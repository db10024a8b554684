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

A source is read once per worker: the first new task of a worker that needs it reads its committed entries into
the buckets of the key groups the worker's pending new tasks own (:mod:`storm_py.stateful.state.key_buckets`); the
worker's other new tasks take their groups from those buckets, and each task releases its groups once its move is
committed, so the buckets are gone when the worker's moves are done (the groups of tasks in other workers are
never kept: those tasks read the source in their own worker).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, Final

from storm_py.api.context import TopologyContext
from storm_py.config.keys import setting
from storm_py.runtime.key_groups import MAX_PARALLELISM, groups_of_task, sources_of
from storm_py.stateful.state.key_buckets import WORKER_SOURCES, Entries, GroupedSources, SourceKey
from storm_py.stateful.state.key_value import NO_TXID, KeyValueState
from storm_py.stateful.state.providers import new_state
from storm_py.stateful.state.task_names import Rescales, namespace

log = logging.getLogger(__name__)

#: the namespace suffix and key marking a task's namespace as holding its moved share
MOVED_SUFFIX: Final = "$moved"
MOVED_KEY: Final = "moved"

OpenState = Callable[[str], KeyValueState]


def _overlap(a: range, b: range) -> range:
    return range(max(a.start, b.start), min(a.stop, b.stop))


class KeyGroupMove:
    """The move of one task's share of a rescaled component's state (a thin driver over ``open_state``).

    ``local`` are the indexes of the component's new tasks that run in this task's worker (this task's own
    when not given) and ``sources`` the process's :class:`GroupedSources` (one of its own when not given);
    ``scope`` tells the sources of different topologies apart, and ``local`` those of different workers in one
    process."""

    def __init__(self, rescales: Rescales, component: str, index: int, max_parallelism: int,
                 open_state: OpenState, local: Collection[int] = (), sources: GroupedSources | None = None,
                 scope: str = "") -> None:
        self.rescales = rescales
        self.component = component
        self.index = index
        self.max_parallelism = max_parallelism
        self.open_state = open_state
        self.generation = rescales.generation(component)
        self.local = sorted(set(local) | {index})
        self.sources = sources if sources is not None else GroupedSources()
        #: the sources' scope: the topology and this worker's new tasks (a process may run several workers, as
        #: LocalCluster does: each keeps the groups of its own tasks, never another worker's buckets)
        self.scope = f"{scope}@{','.join(map(str, self.local))}"

    @classmethod
    def of_task(cls, conf: Mapping[str, Any], context: TopologyContext) -> KeyGroupMove:
        """The move of the task ``context`` runs, its states opened through the topology's provider, sharing
        what it reads with the other new tasks of its worker."""
        component = context.this_component_id
        tasks = context.get_component_tasks(component)
        local = [tasks.index(t) for t in context.get_this_worker_tasks() if t in tasks]
        return cls(Rescales.of(conf), component, context.get_this_task_index(),
                   int(setting(conf, MAX_PARALLELISM)), lambda ns: new_state(ns, conf, context), local,
                   WORKER_SOURCES, context.topology_id)

    def _namespace(self, generation: int, index: int) -> str:
        return namespace(self.rescales, self.component, index, -1, generation)

    def _moved(self, ns: str) -> bool:
        return self.open_state(ns + MOVED_SUFFIX).get(MOVED_KEY) is not None

    def _groups(self, index: int) -> range:
        return groups_of_task(index, self.rescales.tasks_at(self.component, self.generation), self.max_parallelism)

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
        used: list[SourceKey] = []
        moved = 0
        for bucket in self._gather(self.generation, self.index, self._groups(self.index), committed, used,
                                   own=True):
            state.put_all(bucket)
            moved += len(bucket)
        if committed > NO_TXID:
            state.prepare_commit(committed)
            state.commit(committed)
        else:
            state.commit()
        marker = self.open_state(self._namespace(self.generation, self.index) + MOVED_SUFFIX)
        marker.put(MOVED_KEY, committed)
        marker.commit()
        self.sources.release(used, self._groups(self.index))
        log.info("%s task index %d (generation %d) took %d entries of its key groups", self.component, self.index,
                 self.generation, moved)
        return moved

    def _gather(self, generation: int, index: int, groups: range, committed: int, used: list[SourceKey],
                own: bool = False) -> Iterator[Entries]:
        """The committed entries of ``groups`` that task ``index`` of ``generation`` holds, or would hold had it
        moved (``own``: the task itself, which gathers from its sources), by key group; ``used`` collects the
        sources read."""
        ns = self._namespace(generation, index)
        if not own and (generation == 0 or self._moved(ns)):
            source = (self.scope, ns, committed)
            used.append(source)
            buckets = self.sources.buckets(source, lambda: self._committed_state(ns, committed),
                                           self._wanted, self.max_parallelism)
            for group in groups:
                bucket = buckets.get(group)
                if bucket is not None:
                    yield bucket
            return
        old = self.rescales.tasks_at(self.component, generation - 1)
        new = self.rescales.tasks_at(self.component, generation)
        for move in sources_of(index, old, new, self.max_parallelism):
            overlap = _overlap(move.groups, groups)
            if overlap:
                yield from self._gather(generation - 1, move.source, overlap, committed, used)

    def _wanted(self) -> set[int]:
        """The key groups of this task and of the worker's other new tasks that did not move yet."""
        wanted: set[int] = set()
        for index in self.local:
            if index == self.index or not self._moved(self._namespace(self.generation, index)):
                wanted.update(self._groups(index))
        return wanted

    def _committed_state(self, ns: str, committed: int) -> KeyValueState:
        """The state of ``ns`` as of checkpoint ``committed``: a snapshot it prepared is committed first when
        the checkpoint covers it (its commit had not reached it), else rolled back, as its recovery would."""
        state = self.open_state(ns)
        prepared = state.prepared_txid()
        if prepared is not None:
            if prepared <= committed:
                state.commit(prepared)
            else:
                state.rollback()
            state = self.open_state(ns)
        return state
