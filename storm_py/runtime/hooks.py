"""This module owns running hooks in a worker: worker hooks' ``start``/``shutdown``, ``topology.auto.task.hooks``
and the wiring of a task's hook events.

Hook code is wired in per task, once the task has prepared (bolts) or opened (spouts), and only for tasks that
have hooks: their routes get a chooser that reports each emit, their inputs run through a timed runner, their
spout objects through a proxy.  A task without hooks keeps the plain per-tuple paths.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from storm_py.api.context import TopologyContext
from storm_py.api.hooks import (
    BoltAckInfo,
    BoltExecuteInfo,
    BoltFailInfo,
    SpoutAckInfo,
    SpoutFailInfo,
)
from storm_py.api.tuple import Tuple
from storm_py.clock import Clock
from storm_py.errors import ConfigError
from storm_py.protocol.registration import load

log = logging.getLogger(__name__)

AUTO_HOOKS_KEY: Final = "topology.auto.task.hooks"


def start_worker_hooks(hooks: list[Any], conf: Mapping[str, Any], context: TopologyContext) -> list[Any]:
    """Start a private copy of each worker hook; return the started ones (to shut down later)."""
    started = []
    for hook in hooks:
        own = copy.deepcopy(hook)
        own.start(dict(conf), context)
        started.append(own)
    return started


def shutdown_worker_hooks(started: list[Any]) -> None:
    """Shut the started worker hooks down (one that raises does not stop the others)."""
    for hook in started:
        try:
            hook.shutdown()
        except Exception:
            log.exception("worker hook %r failed in shutdown", hook)


def add_auto_hooks(context: TopologyContext, conf: Mapping[str, Any]) -> None:
    """Add and prepare a new instance of each class named in ``topology.auto.task.hooks``."""
    names = conf.get(AUTO_HOOKS_KEY) or []
    if not isinstance(names, list):
        raise ConfigError(f"{AUTO_HOOKS_KEY} must be a list of class names, got {names!r}", key=AUTO_HOOKS_KEY)
    for name in names:
        cls = load(str(name), AUTO_HOOKS_KEY)
        hook = cls()
        hook.prepare(dict(conf), context)
        context.add_task_hook(hook)


def timed_runner(run: Callable[[list[Tuple]], None], task: int, hooks: list[Any], clock: Clock
                 ) -> Callable[[list[Tuple]], None]:
    """A bolt task's runner that reports each input's execute time to its hooks."""
    now = clock.now

    def hooked(batch: list[Tuple]) -> None:
        for tup in batch:
            start = now()
            run([tup])
            info = BoltExecuteInfo(tup, task, (now() - start) * 1000.0)
            for hook in hooks:
                hook.bolt_execute(info)

    return hooked


def report_ack(hooks: list[Any], tup: Tuple, task: int, process_ms: float | None) -> None:
    """A bolt task acked ``tup``."""
    info = BoltAckInfo(tup, task, process_ms)
    for hook in hooks:
        hook.bolt_ack(info)


def report_fail(hooks: list[Any], tup: Tuple, task: int) -> None:
    """A bolt task failed ``tup``."""
    info = BoltFailInfo(tup, task, None)
    for hook in hooks:
        hook.bolt_fail(info)


class HookedSpout:
    """A spout task's object seen through its hooks: ``ack``/``fail`` are reported after the spout's own.

    The complete latency of an ack is read off the executor's latency sums, which the executor updates right
    before it calls ``ack`` (so the per-row loop stays as it is); the spout's other methods pass through.
    """

    def __init__(self, spout: Any, task: int, hooks: list[Any], stats: Any, seen: list[float]) -> None:
        self._spout = spout
        self._task = task
        self._hooks = hooks
        self._stats = stats
        #: the executor's latency sum and count at the last ack of any of its tasks (shared by their proxies)
        self._seen = seen

    def next_tuple(self) -> None:
        self._spout.next_tuple()

    def ack(self, msg_id: Any) -> None:
        self._spout.ack(msg_id)
        stats = self._stats
        seen = self._seen
        total, count = seen
        seen[0], seen[1] = stats.lat_sum, stats.lat_count
        latency = (stats.lat_sum - total) / (stats.lat_count - count) if stats.lat_count > count else None
        info = SpoutAckInfo(msg_id, self._task, latency)
        for hook in self._hooks:
            hook.spout_ack(info)

    def fail(self, msg_id: Any) -> None:
        self._spout.fail(msg_id)
        info = SpoutFailInfo(msg_id, self._task, None)
        for hook in self._hooks:
            hook.spout_fail(info)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spout, name)


def hook_spouts(spouts: dict[int, Any], contexts: Mapping[int, TopologyContext], stats: Any) -> None:
    """Put every spout task of an executor behind a :class:`HookedSpout` when any of them has hooks."""
    if not any(c.hooks for c in contexts.values()):
        return
    seen = [stats.lat_sum, float(stats.lat_count)]
    for task, spout in list(spouts.items()):
        context = contexts.get(task)
        spouts[task] = HookedSpout(spout, task, context.hooks if context is not None else [], stats, seen)


def cleanup_task_hooks(context: TopologyContext) -> None:
    """Call ``cleanup`` on a task's hooks."""
    for hook in context.hooks:
        try:
            hook.cleanup()
        except Exception:
            log.exception("task hook %r failed in cleanup", hook)
