"""This module owns nimbus's decisions on a rebalance that changes components' task counts (``--tasks``).

:func:`checked_tasks` refuses what cannot be rescaled, before anything changes: an unknown or system component,
a count that is not an integer from 1 to the key groups (``topology.state.max.parallelism``) for a component
with keyed state, a component whose state is not keyed (a stateful bolt not behind fields groupings, a stateful
windowed bolt, a checkpointed sink, a stateful spout: its state is per task, it cannot be split).
:func:`rescaled_counts` gives the topology's task and executor counts and the rescale history its workers name
their state namespaces by (:mod:`storm_py.stateful.state.task_names`).  Nimbus keeps that history by topology name
across kills; :func:`resubmitted_history` gives a resubmit's history from it, so the resubmitted tasks read the
state in the layout of its last rescale (a task count differing from the last one is one more rescale).  All
are pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storm_py.cluster_state.models import REBALANCING, StormBase
from storm_py.config.keys import setting
from storm_py.errors import InvalidTopologyException
from storm_py.runtime.key_groups import KEY_VALUE, MAX_PARALLELISM, STATE_KIND
from storm_py.runtime.system_topology import layout_from_counts
from storm_py.stateful.state.task_names import RESCALES, Rescales

#: the groupings a component's keyed state can follow (a key always reaches the task owning its key group)
_KEYED_GROUPINGS = frozenset({"fields"})
_SYSTEM_STREAM_PREFIXES = ("$", "__")
#: component ids of the system's own components (the acker, the checkpoint spout, ...)
_SYSTEM_PREFIXES = ("$", "__")


def unkeyed_reason(base: StormBase, component: str) -> str:
    """Why ``component``'s state cannot move by key group ("" when it can, or it keeps no state)."""
    kind = base.component_settings.get(component, {}).get(STATE_KIND)
    if kind is None:
        return ""
    if kind != KEY_VALUE:
        return f"its state ({kind}) is kept per task, not by key"
    for src, stream, grouping in base.component_inputs.get(component, []):
        if stream.startswith(_SYSTEM_STREAM_PREFIXES):
            continue
        if grouping not in _KEYED_GROUPINGS:
            return (f"its state is not keyed: it reads {src!r} stream {stream!r} by a {grouping} grouping, not a "
                    "fields grouping")
    return ""


def checked_tasks(name: str, base: StormBase, tasks: Any) -> dict[str, int]:
    """``tasks`` ({component: new task count}) checked against the topology; the first component that cannot
    be rescaled (in name order, unkeyed ones first) is named in an :class:`InvalidTopologyException`."""
    if not isinstance(tasks, Mapping) or not tasks:
        raise InvalidTopologyException(f"tasks must be a non-empty mapping of component to task count, got {tasks!r}",
                                       topology=name)
    max_par = int(setting(base.topology_conf, MAX_PARALLELISM))
    out: dict[str, int] = {}
    for cid in sorted(tasks, key=str):
        n = tasks[cid]
        if not isinstance(cid, str) or cid not in base.component_tasks:
            raise InvalidTopologyException(f"cannot rescale unknown component {cid!r} of {name!r}",
                                           component=str(cid))
        if cid.startswith(_SYSTEM_PREFIXES):
            raise InvalidTopologyException(f"cannot rescale {cid!r} of {name!r}: it is a system component",
                                           component=cid)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InvalidTopologyException(f"the task count of {cid!r} must be a positive integer, got {n!r}",
                                           component=cid)
        out[cid] = n
    unkeyed = [(cid, why) for cid in out if (why := unkeyed_reason(base, cid))]
    if unkeyed:
        cid, why = unkeyed[0]
        raise InvalidTopologyException(f"cannot change the task count of {cid!r} of {name!r}: {why}", component=cid)
    for cid, n in out.items():
        keyed = base.component_settings.get(cid, {}).get(STATE_KIND) == KEY_VALUE
        if keyed and n > max_par:
            raise InvalidTopologyException(
                f"{cid!r} of {name!r} may have at most {max_par} tasks (its key groups, {MAX_PARALLELISM}), "
                f"got {n}", component=cid)
    if base.status == REBALANCING:
        first = next(iter(out))
        raise InvalidTopologyException(
            f"cannot change the task count of {first!r}: {name!r} is already rebalancing", component=first)
    return out


def rescaled_counts(base: StormBase, tasks: Mapping[str, int], executors: Mapping[str, int]
                    ) -> tuple[dict[str, int], dict[str, int], dict[str, Any]]:
    """The task and executor counts after rescaling ``tasks`` (with ``executors`` asked for at the same time)
    and the topology conf's new rescale history.

    A component whose executors are not asked for keeps one executor per task if it had that, else keeps its
    executors (at most its new task count).
    """
    new_tasks = dict(base.component_tasks)
    new_execs = dict(base.component_executors)
    for cid, n in tasks.items():
        old_t, old_e = base.component_tasks[cid], base.component_executors.get(cid, 1)
        new_tasks[cid] = n
        new_execs[cid] = executors.get(cid, n if old_e >= old_t else min(old_e, n))
    counts = {c: (base.component_tasks.get(c, e), e) for c, e in base.component_executors.items()}
    first_ids = {c: ts[0] for c, ts in layout_from_counts(counts).component_tasks.items() if ts}
    history = Rescales.of(base.topology_conf).rescaled(first_ids, tasks, base.component_tasks)
    return new_tasks, new_execs, {RESCALES: history.to_conf()}


def resubmitted_history(kept: Mapping[str, Any] | None, tasks: Mapping[str, int]) -> dict[str, Any] | None:
    """The rescale history (its JSON form) of a topology submitted with ``tasks`` ({component: task count}) under
    a name whose topologies were rescaled (``kept``, None when they never were): the kept history of each
    rescaled component the submit still has, with one more generation when its count differs from the last."""
    if kept is None:
        return None
    old = Rescales.of({RESCALES: kept})
    counts = {c: list(n) for c, n in old.tasks.items() if c in tasks}
    for c, n in counts.items():
        if n[-1] != tasks[c]:
            n.append(int(tasks[c]))
    return Rescales(dict(old.first_tasks), counts).to_conf()
