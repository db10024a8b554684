"""This module owns the autoscaler's driver in the leading nimbus: every period it samples each autoscaled topology,
asks its policy, rebalances its executors and records the decisions as the topology's autoscaler events.

A topology is autoscaled while ``topology.autoscale.enabled`` is true and it is ACTIVE (not being killed or
rebalanced).  Every ``topology.autoscale.period.secs`` the driver reads its workers' heartbeats into a sample
(:mod:`storm_py.nimbus.autoscale_metrics`), feeds :class:`~storm_py.nimbus.autoscale_policy.AutoscalePolicy`
and makes its decisions with one ``rebalance -e`` (the wait is ``topology.autoscale.rebalance.wait.secs``).
Decisions and diagnoses are kept, the latest :data:`MAX_EVENTS` of each, in the cluster state
(``ClusterState.autoscale_events``), which any nimbus serves at ``GET /api/v1/topology/:id/autoscale``, and
logged.  The driver holds no thread: the nimbus daemon calls :meth:`Autoscaler.step` from its loop.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from storm_py.clock import Clock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.models import ACTIVE, StormBase
from storm_py.config.keys import setting
from storm_py.errors import StormPyError
from storm_py.metrics.reports import is_system, reports
from storm_py.nimbus.autoscale_metrics import PeriodSampler
from storm_py.nimbus.autoscale_policy import (
    ENABLED,
    WAIT,
    AutoscalePolicy,
    AutoscaleSettings,
    Decision,
    Diagnosis,
    autoscale_settings,
)

log = logging.getLogger(__name__)

#: decisions (and diagnoses) kept per topology, the latest
MAX_EVENTS = 200


class Rebalancer(Protocol):
    """What the autoscaler needs of nimbus: Storm's ``rebalance``."""

    def rebalance(
        self,
        name: str,
        wait_secs: float | None = None,
        num_workers: int | None = None,
        executors: Mapping[str, int] | None = None,
    ) -> None: ...


@dataclass
class _Watched:
    """One autoscaled topology."""

    policy: AutoscalePolicy
    sampler: PeriodSampler = field(default_factory=PeriodSampler)
    due: float = 0.0


def bolts_of(base: StormBase) -> dict[str, int]:
    """The topology's own bolts and their tasks."""
    return {c: n for c, n in base.component_tasks.items() if c not in base.spout_ids and not is_system(c)}


def settings_of(base: StormBase) -> AutoscaleSettings:
    """The autoscaler settings of a stored topology (checked at submit; a ``rebalance -t`` may change them)."""
    return autoscale_settings(base.topology_conf, bolts_of(base), base.spout_ids)


class Autoscaler:
    """The autoscaler of the leading nimbus (see the module docstring).

    Args:
        nimbus: what rebalances.
        state: the cluster state (storm bases, heartbeats; the events are written there).
        clock: the clock periods and cooldowns are measured on.
    """

    def __init__(self, nimbus: Rebalancer, state: ClusterState, clock: Clock) -> None:
        self.nimbus = nimbus
        self.state = state
        self.clock = clock
        self._watched: dict[str, _Watched] = {}
        self._clean = False  # whether the events of removed topologies were cleaned up since the last change

    def reset(self) -> None:
        """Start afresh (this nimbus just became the leader): every topology's samples and cooldowns restart."""
        self._watched.clear()
        self._clean = False

    def step(self) -> float | None:
        """Sample each autoscaled topology that is due and act on its policy's decisions; return the seconds
        until the next one is due (None when no topology is autoscaled)."""
        now = self.clock.now()
        bases = self.state.storm_bases()
        for tid in [t for t in self._watched if t not in bases]:
            del self._watched[tid]
            self._clean = False
        if not self._clean:
            self._forget_removed(bases)
        due: list[float] = []
        for tid, base in sorted(bases.items()):
            if not bool(setting(base.topology_conf, ENABLED)):
                self._watched.pop(tid, None)
                continue
            try:
                settings = settings_of(base)
            except StormPyError as err:
                log.warning("not autoscaling %s: %s", tid, err)
                self._watched.pop(tid, None)
                continue
            watched = self._watched.get(tid)
            if watched is None:
                watched = self._watched[tid] = _Watched(AutoscalePolicy(settings), due=now + settings.period_secs)
            watched.policy.settings = settings
            if base.status != ACTIVE or base.topology_action_options:
                watched.sampler.reset()  # inactive, or being rebalanced or killed: its figures say nothing
                watched.due = now + settings.period_secs
            elif now >= watched.due:
                watched.due = now + settings.period_secs
                self._sample(tid, base, watched, now)
            due.append(max(0.0, watched.due - now))
        return min(due) if due else None

    def _sample(self, tid: str, base: StormBase, watched: _Watched, now: float) -> None:
        found = reports(self.state.worker_heartbeats(tid))
        wall = self.clock.wall()
        sample = watched.sampler.sample(found, base.component_executors, base.spout_ids, wall)
        if sample is None:
            log.debug("autoscaler: %s has executors that have not reported twice yet", tid)
            return
        step = watched.policy.step(sample, now)
        for diagnosis in step.diagnoses:
            log.info("autoscaler: %s: %s", tid, diagnosis.reason)
        decisions = list(step.decisions)
        if decisions:
            wait = base.topology_conf.get(WAIT)
            try:
                self.nimbus.rebalance(base.name, None if wait is None else float(wait), None,
                                      {d.component: d.to for d in decisions})
            except StormPyError as err:
                log.warning("autoscaler: rebalancing %s failed: %s", tid, err)
                return
            watched.policy.changed(decisions, now)
            watched.sampler.reset()
            for d in decisions:
                log.info("autoscaler: %s: %s executors %d -> %d: %s", tid, d.component, d.from_, d.to, d.reason)
        if decisions or step.diagnoses:
            self._record(tid, decisions, step.diagnoses)

    def _record(self, tid: str, decisions: Sequence[Decision], diagnoses: Sequence[Diagnosis]) -> None:
        events = self.state.autoscale_events(tid)
        kept: dict[str, Any] = {}
        for name, new in (("decisions", [d.to_json() for d in decisions]),
                          ("diagnoses", [d.to_json() for d in diagnoses])):
            old = events.get(name)
            kept[name] = ([e for e in old if isinstance(e, dict)] if isinstance(old, list) else []) + new
            kept[name] = kept[name][-MAX_EVENTS:]
        try:
            self.state.set_autoscale_events(tid, kept)
        except StormPyError as err:
            log.warning("autoscaler: the events of %s were not recorded: %s", tid, err)

    def _forget_removed(self, bases: Mapping[str, StormBase]) -> None:
        """Remove the events of topologies that are gone."""
        try:
            for tid in self.state.autoscale_topology_ids():
                if tid not in bases:
                    self.state.remove_autoscale_events(tid)
            self._clean = True
        except StormPyError as err:
            log.debug("autoscaler: could not clean up removed topologies' events: %s", err)
