"""This module owns the checkpoint wiring of a topology with stateful bolts (what Storm's builder does in
``createTopology``): the ``$checkpointspout`` component, the ``$checkpoint`` stream through every bolt, and each bolt
wrapped in a :class:`~storm_py.stateful.managed_bolt.ManagedBolt` (which the system topology replaces with Storm's
stateful executor, its checkpoint forwarder or, under exactly_once, the aligned executor); each :class:`StatefulSpout`
is wrapped in a :class:`~storm_py.stateful.managed_spout.StatefulSpoutExecutor`.

A bolt fed by a spout takes ``$checkpoint`` from the checkpoint spout; a bolt fed by a bolt takes that bolt's
``$checkpoint``; all with all-grouping, so every task sees every checkpoint from every task upstream.  The
``$barrier`` stream of exactly_once follows the data instead: a bolt takes it from every bolt and every stateful
spout it reads.
:class:`~storm_py.stateful.api.sink.CheckpointedSink` that takes part counts as a stateful bolt (under exactly_once).
:func:`with_checkpoints` is registered with the builder by :mod:`storm_py.stateful`; a topology without a stateful
bolt is left as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from storm_py.api.topology import ALL, ComponentSpec, Grouping, StormTopology
from storm_py.api.tuple import Fields
from storm_py.config.keys import setting
from storm_py.errors import ConfigError, InvalidTopologyException
from storm_py.runtime.key_groups import KEY_VALUE, MAX_PARALLELISM, STATE_KIND
from storm_py.stateful.api.bolt import BaseStatefulBolt
from storm_py.stateful.api.sink import CheckpointedSink, takes_part
from storm_py.stateful.api.spout import StatefulSpout
from storm_py.stateful.at_least_once.checkpoint import CHECKPOINT_COMPONENT_ID, CHECKPOINT_FIELDS, CHECKPOINT_STREAM_ID
from storm_py.stateful.at_least_once.checkpoint_spout import CheckpointSpout
from storm_py.stateful.exactly_once.coordinator import BARRIER_FIELDS, BARRIER_STREAM_ID
from storm_py.stateful.managed_bolt import ManagedBolt
from storm_py.stateful.managed_spout import StatefulSpoutExecutor
from storm_py.stateful.state.providers import check_provider
from storm_py.stateful.state.task_names import RESCALES
from storm_py.stateful.windowed_runner import StatefulWindowedBolt

AT_LEAST_ONCE: Final = "at_least_once"
EXACTLY_ONCE: Final = "exactly_once"



def is_stateful(obj: object) -> bool:
    """Whether a bolt object keeps managed state."""
    return isinstance(obj, BaseStatefulBolt)


def state_kind(obj: object) -> str | None:
    """What managed state a bolt object keeps: ``key_value`` (a stateful bolt, rescalable by key group when
    behind fields groupings), ``window`` (a stateful windowed bolt), ``sink`` (a checkpointed sink), or none."""
    if isinstance(obj, StatefulWindowedBolt):
        return "window"
    if is_stateful(obj):
        return KEY_VALUE
    if takes_part(obj):
        return "sink"
    return None


def with_checkpoints(topology: StormTopology) -> StormTopology:
    """``topology`` with the checkpoint spout and stream wired through it, when it has a stateful bolt."""
    if CHECKPOINT_COMPONENT_ID in topology.spouts or not any(
            is_stateful(s.obj) or takes_part(s.obj) for s in topology.bolts.values()):
        return topology
    if CHECKPOINT_COMPONENT_ID in topology.bolts:
        raise InvalidTopologyException(
            f"component id {CHECKPOINT_COMPONENT_ID!r} is the checkpoint spout's", component=CHECKPOINT_COMPONENT_ID
        )
    fields = Fields(list(CHECKPOINT_FIELDS))
    barrier_fields = Fields(list(BARRIER_FIELDS))
    stateful_spouts = sorted(cid for cid, spec in topology.spouts.items() if isinstance(spec.obj, StatefulSpout))
    spout = ComponentSpec(CHECKPOINT_COMPONENT_ID, CheckpointSpout(stateful_spouts), 1, True)
    spout.streams = {CHECKPOINT_STREAM_ID: (fields, False)}
    spouts = {CHECKPOINT_COMPONENT_ID: spout}
    for cid, spec in topology.spouts.items():
        if cid in stateful_spouts:
            wrapped_spout = ComponentSpec(cid, StatefulSpoutExecutor(spec.obj), spec.parallelism, True,
                                          dict(spec.inputs), dict(spec.conf), dict(spec.streams))
            wrapped_spout.streams[BARRIER_STREAM_ID] = (barrier_fields, False)
            wrapped_spout.columnar = dict(spec.columnar)
            wrapped_spout.conf[STATE_KIND] = "position"
            spouts[cid] = wrapped_spout
        else:
            spouts[cid] = spec
    bolts: dict[str, ComponentSpec] = {}
    for cid, spec in topology.bolts.items():
        for stream in (CHECKPOINT_STREAM_ID, BARRIER_STREAM_ID):
            if stream in spec.streams:
                raise InvalidTopologyException(
                    f"bolt {cid!r} declares stream {stream!r}, which carries the checkpoints of a topology "
                    "with stateful bolts",
                    component=cid,
                )
        sources = sorted(
            {CHECKPOINT_COMPONENT_ID if src in topology.spouts else src for src, _ in spec.inputs}
        )
        barrier_sources = sorted(
            {src for src, _ in spec.inputs if src in topology.bolts or src in stateful_spouts}
        )
        wrapper = ManagedBolt(spec.obj, is_stateful(spec.obj), sources, barrier_sources, takes_part(spec.obj))
        wrapped = ComponentSpec(cid, wrapper, spec.parallelism, False, dict(spec.inputs), dict(spec.conf),
                                dict(spec.streams))
        kind = state_kind(spec.obj)
        if kind is not None:
            wrapped.conf[STATE_KIND] = kind
        wrapped.streams[CHECKPOINT_STREAM_ID] = (fields, False)
        wrapped.streams[BARRIER_STREAM_ID] = (barrier_fields, False)
        wrapped.columnar = dict(spec.columnar)
        for src in sources:
            wrapped.inputs[(src, CHECKPOINT_STREAM_ID)] = Grouping(ALL)
        for src in barrier_sources:
            wrapped.inputs[(src, BARRIER_STREAM_ID)] = Grouping(ALL)
        bolts[cid] = wrapped
    return StormTopology(spouts, bolts)


def check_topology(topology: StormTopology, conf: Mapping[str, Any]) -> None:
    """Submit-time checks of managed state: the provider's name and config, and under ``exactly_once`` that every
    spout keeps its position in state (:class:`StatefulSpout`); the error names what is wrong.  Components
    without their object (a topology's skeleton) are not checked."""
    if CHECKPOINT_COMPONENT_ID not in topology.spouts and not any(
            is_stateful(s.obj) or takes_part(s.obj) for s in topology.bolts.values()):
        return
    try:
        check_provider(conf)
    except ConfigError as err:
        raise InvalidTopologyException(str(err)) from err
    if conf.get(RESCALES) is not None:
        raise InvalidTopologyException(f"{RESCALES} is written by nimbus when a rebalance changes task counts; "
                                       "a topology cannot be submitted with it")
    max_parallelism = int(setting(conf, MAX_PARALLELISM))
    for cid, spec in sorted(topology.bolts.items()):
        if spec.conf.get(STATE_KIND) == KEY_VALUE and spec.num_tasks() > max_parallelism:
            raise InvalidTopologyException(
                f"bolt {cid!r} has {spec.num_tasks()} tasks, more than its {max_parallelism} key groups "
                f"({MAX_PARALLELISM})",
                component=cid,
            )
    if setting(conf, "topology.state.guarantee") != EXACTLY_ONCE:
        for cid, spec in sorted(topology.bolts.items()):
            obj = spec.obj.bolt if isinstance(spec.obj, ManagedBolt) else spec.obj
            if takes_part(obj) and isinstance(obj, CheckpointedSink) and obj.requires_exactly_once():
                raise InvalidTopologyException(
                    f"bolt {cid!r} ({type(obj).__name__}) writes in transactions of checkpoints: it needs "
                    "topology.state.guarantee exactly_once",
                    component=cid,
                )
        return
    if conf.get("topology.acker.executors") == 0:
        raise InvalidTopologyException(
            "topology.state.guarantee exactly_once needs ackers (its barriers are tracked): "
            "topology.acker.executors is 0"
        )
    for cid, spec in sorted(topology.spouts.items()):
        obj = spec.obj
        if cid != CHECKPOINT_COMPONENT_ID and obj is not None and not isinstance(
                obj, (StatefulSpout, StatefulSpoutExecutor)):
            raise InvalidTopologyException(
                f"spout {cid!r} ({type(obj).__name__}) is not a StatefulSpout: topology.state.guarantee "
                "exactly_once needs every spout to keep its position in state",
                component=cid,
            )
