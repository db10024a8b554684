"""This module owns the autoscaler's decisions: symptoms read from a topology's metrics, a diagnosis per bolt, and
the executor counts that resolve it (after Dhalion: symptoms, then diagnosis, then resolution).

Nothing here reads a clock, the cluster state or a socket.  :func:`autoscale_settings` reads and checks a
topology's ``topology.autoscale.*`` keys against its components; :class:`AutoscalePolicy` is fed one
:class:`TopologySample` per period (what the bolts executed, how busy they were, the spouts' Kafka lag, how long
the spouts were held back) with the time, and answers :class:`Decision` s (a bolt's executors from ``n`` to
``m``, with the reason) and :class:`Diagnosis` es (a bolt more executors cannot help).

The symptoms, per bolt, with ``busy`` the executor-seconds it spent executing per second and ``utilization``
``busy / executors``:

* *saturated*: utilization, or its busiest executor's capacity, at or above the high mark
  (:func:`marks`: halfway between the target capacity and 1);
* *pressure* (topology-wide): the spouts' lag grows, or the spouts were held back by backpressure or by
  ``topology.max.spout.pending`` for a noticeable share of the period;
* *idle*: utilization under the low mark (half the target capacity) with no pressure, and no backlog (a lag
  above one period of the spouts' input).

Diagnoses and their resolutions:

* *under-provisioned* (saturated in :data:`SUSTAIN` samples in a row): executors to ``ceil(busy x growth /
  target)``, ``growth`` the share of the spouts' input the topology does not keep up with (from the lag's
  trend), or, when more, the records arriving over what the bolt executes, times the tuples it executes per
  record the spouts emit (learned while it kept up: the spouts may emit ahead of a saturated bolt into the
  workers' queues), at least one more, at most the bound; not while the lag shrinks fast enough to be gone within
  :data:`DRAIN_SECS` (the bolt is busy catching up, and will not be once it has);
* *over-provisioned* (idle in :data:`SUSTAIN` samples in a row): executors to ``ceil(busy / target)``, at least
  the bound; at the new count the utilization is at most the target, under the high mark, so the step is never
  undone by the same load;
* *skewed*: the busiest executor is saturated while the average is under the target: one task gets most of
  the tuples (a hot key behind a fields grouping); not scaled;
* *stuck*: a scale-up did not raise the bolt's throughput (less than a quarter of the expected gain) while it
  stays saturated or the input still waits: it does not scale with executors (a lock, a slow service every
  executor waits on, executors sharing one worker's thread); not scaled again until its throughput changes.

No change is decided within ``topology.autoscale.cooldown.secs`` of the last one, nor of the first sample of a
new layout (a rebalance pauses the topology and restarts its executors: the figures after it are new, and the lag
that grew during the pause is caught up first).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from storm_py.config.keys import setting
from storm_py.errors import InvalidTopologyException

ENABLED = "topology.autoscale.enabled"
MIN_PARALLELISM = "topology.autoscale.min.parallelism"
MAX_PARALLELISM = "topology.autoscale.max.parallelism"
COOLDOWN = "topology.autoscale.cooldown.secs"
TARGET = "topology.autoscale.target.capacity"
PERIOD = "topology.autoscale.period.secs"
WAIT = "topology.autoscale.rebalance.wait.secs"

#: consecutive samples a symptom must show before it is acted on (one noisy sample moves nothing)
SUSTAIN = 2
#: a share of the period the spouts were held back (backpressure, max spout pending) that counts as pressure
HELD_BACK_SHARE = 0.05
#: the lag grows when its trend passes this share of the spouts' rate (or one record per second)
LAG_GROWTH_SHARE = 0.02
#: the lag samples the trend is fitted over
TREND_SAMPLES = 3
#: a saturated bolt draining a lag that will be gone within this many seconds at the current pace is catching
#: up, not short of executors
DRAIN_SECS = 300.0
#: the largest factor one scale-up multiplies a bolt's busy executors by
MAX_GROWTH = 8.0
#: a scale-up must bring this share of the gain it expected, or the bolt is stuck
STUCK_GAIN_SHARE = 0.25
#: a stuck bolt's throughput must move by this share before it is scaled up again
STUCK_RELEASE_SHARE = 0.2


@dataclass(frozen=True)
class AutoscaleSettings:
    """A topology's autoscaler settings, checked (see :func:`autoscale_settings`)."""

    enabled: bool
    #: each bolt's bounds on its executors (within its tasks)
    min_executors: Mapping[str, int]
    max_executors: Mapping[str, int]
    cooldown_secs: float
    target: float
    period_secs: float


def marks(target: float) -> tuple[float, float]:
    """The low and high utilization marks around a target capacity: half the target, halfway to 1."""
    return target / 2.0, (target + 1.0) / 2.0


def _bounds(conf: Mapping[str, Any], key: str, bolts: Mapping[str, int], spouts: Collection[str],
            default: int | None) -> dict[str, int]:
    """A bound key's value per bolt (``default`` for bolts it leaves out; ``None``: the bolt's tasks)."""
    raw = conf.get(key)
    out = {b: min(tasks, default if default is not None else tasks) for b, tasks in bolts.items()}
    if raw is None:
        return out
    if isinstance(raw, int) and not isinstance(raw, bool):
        if raw < 1:
            raise InvalidTopologyException(f"{key} must be at least 1, got {raw}", key=key)
        return {b: min(tasks, raw) for b, tasks in bolts.items()}
    if not isinstance(raw, Mapping):
        raise InvalidTopologyException(f"{key} must be an integer or a mapping {{component: n}}, got {raw!r}",
                                       key=key)
    for component, n in raw.items():
        if component in spouts:
            raise InvalidTopologyException(
                f"{key} names spout {component!r}: the autoscaler changes bolts' executors only",
                key=key, component=str(component))
        if component not in bolts:
            raise InvalidTopologyException(f"{key} names {component!r}, which is no bolt of the topology",
                                           key=key, component=str(component))
        tasks = bolts[component]
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise InvalidTopologyException(f"{key} of {component!r} must be an integer >= 1, got {n!r}",
                                           key=key, component=component)
        if n > tasks:
            raise InvalidTopologyException(
                f"{key} of {component!r} is {n}, above its {tasks} task(s) (executors run within tasks)",
                key=key, component=component)
        out[component] = n
    return out


def autoscale_settings(conf: Mapping[str, Any], bolts: Mapping[str, int],
                       spouts: Collection[str] = ()) -> AutoscaleSettings:
    """A topology's autoscaler settings from its conf, its bolts (id -> tasks) and its spouts' ids.

    Raises:
        InvalidTopologyException: a bound names a spout or an unknown component, is not a positive integer, is
            above the component's tasks, or a minimum is above its maximum (the error names the key and the
            component).
    """
    low = _bounds(conf, MIN_PARALLELISM, bolts, spouts, 1)
    high = _bounds(conf, MAX_PARALLELISM, bolts, spouts, None)
    for bolt in bolts:
        if low[bolt] > high[bolt]:
            raise InvalidTopologyException(
                f"{MIN_PARALLELISM} of {bolt!r} is {low[bolt]}, above its maximum {high[bolt]} "
                f"({MAX_PARALLELISM}, or its tasks)", key=MIN_PARALLELISM, component=bolt)
    return AutoscaleSettings(
        enabled=bool(setting(conf, ENABLED)),
        min_executors=low,
        max_executors=high,
        cooldown_secs=float(setting(conf, COOLDOWN)),
        target=float(setting(conf, TARGET)),
        period_secs=float(setting(conf, PERIOD)),
    )


@dataclass(frozen=True)
class BoltSample:
    """One bolt over one period."""

    executors: int
    #: tuples executed per second (all executors)
    executed_per_sec: float
    #: executor-seconds spent executing per second (all executors): the executors the load keeps busy
    busy: float
    #: the busiest executor's capacity (share of the period it spent executing)
    capacity: float
    #: average milliseconds per executed tuple
    execute_latency_ms: float = 0.0

    @property
    def utilization(self) -> float:
        """The average executor's share of the period spent executing."""
        return self.busy / self.executors if self.executors > 0 else 0.0


@dataclass(frozen=True)
class TopologySample:
    """What a topology did over one period."""

    #: wall time (epoch seconds) at the end of the period
    time: float
    bolts: Mapping[str, BoltSample]
    #: records per second the spouts emitted
    spout_rate: float = 0.0
    #: the spouts' total Kafka lag at the end of the period (None: no spout reads a log)
    lag: int | None = None
    #: share of the period the spouts were held back by backpressure (0..1)
    backpressure: float = 0.0
    #: share of the period the spouts were held back by ``topology.max.spout.pending`` (0..1)
    pending_full: float = 0.0


@dataclass(frozen=True)
class Decision:
    """A bolt's executors changed: ``{"time", "component", "from", "to", "reason"}`` once shown."""

    time: float
    component: str
    from_: int
    to: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "component": self.component, "from": self.from_, "to": self.to,
                "reason": self.reason}


@dataclass(frozen=True)
class Diagnosis:
    """A bolt the autoscaler will not scale although it is saturated (``kind``: ``stuck``, ``skewed``,
    ``at-maximum``), or no longer so (``recovered``)."""

    time: float
    component: str
    kind: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "component": self.component, "kind": self.kind, "reason": self.reason}


@dataclass(frozen=True)
class Step:
    """The outcome of one sample: changes to make and diagnoses to report (both may be empty)."""

    decisions: tuple[Decision, ...] = ()
    diagnoses: tuple[Diagnosis, ...] = ()


@dataclass
class _Bolt:
    """What the policy remembers of one bolt."""

    saturated: int = 0  # consecutive saturated samples
    idle: int = 0  # consecutive idle samples
    #: the last scale-up: (executors before, executed/s before, executors after), checked once after the cooldown
    pending_check: tuple[int, float, int] | None = None
    #: executed/s when it was found stuck (None: not stuck)
    stuck_rate: float | None = None
    #: the diagnosis last reported (reported again only when it changes)
    reported: str = ""
    #: tuples it executes per record the spouts emit, as last seen while it kept up (not saturated, the lag neither
    #: growing nor draining; None: not seen yet)
    share: float | None = None


@dataclass
class _Trend:
    points: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=TREND_SAMPLES))

    def add(self, time: float, lag: float) -> None:
        self.points.append((time, lag))

    def slope(self) -> float:
        """Least-squares records per second the lag grew by (0 with fewer than two points)."""
        if len(self.points) < 2:
            return 0.0
        n = len(self.points)
        mt = sum(t for t, _ in self.points) / n
        ml = sum(v for _, v in self.points) / n
        var = sum((t - mt) ** 2 for t, _ in self.points)
        if var <= 0:
            return 0.0
        return sum((t - mt) * (v - ml) for t, v in self.points) / var


class AutoscalePolicy:
    """The autoscaler's decisions for one topology (see the module docstring).

    Args:
        settings: the topology's checked settings.
    """

    def __init__(self, settings: AutoscaleSettings) -> None:
        self.settings = settings
        self._bolts: dict[str, _Bolt] = {}
        self._trend = _Trend()
        self._last_change: float | None = None
        self._executors: dict[str, int] = {}
        #: each bolt's executed/s in the last sample (a scale-up's throughput before)
        self._rates: dict[str, float] = {}

    def _restart(self) -> None:
        """The topology's executors changed (a rebalance, ours or another's): earlier samples describe another
        topology; streaks and the lag trend start afresh."""
        for bolt in self._bolts.values():
            bolt.saturated = bolt.idle = 0
        self._trend = _Trend()

    def step(self, sample: TopologySample, now: float) -> Step:
        """Read one period's sample at ``now`` (seconds, the clock cooldowns are measured on); the decisions
        returned are to be made at once (the caller reports back through :meth:`changed` when it made them)."""
        executors = {b: s.executors for b, s in sample.bolts.items()}
        if executors != self._executors:
            if self._executors:
                self._restart()
                # the cooldown counts from the first sample of the new layout: the rebalance's own pause (its wait,
                # the workers' restart, the spouts held meanwhile) grew the lag, and the catch-up after it keeps
                # the bolt busy; neither says anything of the executors it now has
                self._last_change = now
            self._executors = executors
        if sample.lag is not None:
            self._trend.add(now, float(sample.lag))
        slope = self._trend.slope()
        growing = sample.lag is not None and len(self._trend.points) >= 2 and slope > max(
            1.0, LAG_GROWTH_SHARE * sample.spout_rate)
        draining = sample.lag is not None and len(self._trend.points) >= 2 and slope < -max(
            1.0, LAG_GROWTH_SHARE * sample.spout_rate) and sample.lag / -slope <= DRAIN_SECS
        held = sample.backpressure >= HELD_BACK_SHARE or sample.pending_full >= HELD_BACK_SHARE
        # a backlog of more than a period of input waiting: not the time to give executors back
        backlog = sample.lag is not None and sample.lag > max(sample.spout_rate, 1.0) * self.settings.period_secs
        pressure = growing or held or backlog
        growth = 1.0
        if growing and sample.spout_rate > 0:
            growth = min(MAX_GROWTH, (sample.spout_rate + slope) / sample.spout_rate)
        elif growing:
            growth = MAX_GROWTH
        arrival = sample.spout_rate + slope if growing else None
        cooling = self._last_change is not None and now - self._last_change < self.settings.cooldown_secs
        decisions: list[Decision] = []
        diagnoses: list[Diagnosis] = []
        for name in sorted(sample.bolts):
            if name not in self.settings.max_executors:
                continue  # not a bolt of the topology's settings (a system bolt)
            bolt = self._bolts.setdefault(name, _Bolt())
            decision, found = self._bolt(name, bolt, sample, cooling, pressure, growth, arrival, draining,
                                         sample.time)
            if decision is not None:
                decisions.append(decision)
            diagnoses.extend(found)
        return Step(tuple(decisions), tuple(diagnoses))

    def changed(self, decisions: Collection[Decision], now: float) -> None:
        """The decisions were made at ``now``: the cooldown starts, scale-ups are checked after it."""
        if not decisions:
            return
        self._last_change = now
        for d in decisions:
            bolt = self._bolts.setdefault(d.component, _Bolt())
            bolt.saturated = bolt.idle = 0
            rate = self._rates.get(d.component, 0.0)
            bolt.pending_check = (d.from_, rate, d.to) if d.to > d.from_ else None

    def _bolt(self, name: str, bolt: _Bolt, sample: TopologySample, cooling: bool, pressure: bool,
              growth: float, arrival: float | None, draining: bool,
              time: float) -> tuple[Decision | None, list[Diagnosis]]:
        s = sample.bolts[name]
        self._rates[name] = s.executed_per_sec
        low_mark, high_mark = marks(self.settings.target)
        saturated = s.utilization >= high_mark or s.capacity >= high_mark
        idle = s.utilization < low_mark and s.capacity < high_mark and not pressure
        if not saturated and arrival is None and not draining and sample.spout_rate > 0 and s.executed_per_sec > 0:
            bolt.share = s.executed_per_sec / sample.spout_rate  # it keeps up, the lag holds: a steady ratio
        elif arrival is not None and bolt.share is not None and s.executed_per_sec > 0:
            # the spouts may emit ahead of a saturated bolt (what they emit waits in the workers' queues): its own
            # input is the records arriving times its tuples per record
            growth = max(growth, min(MAX_GROWTH, arrival * bolt.share / s.executed_per_sec))
        bolt.saturated = bolt.saturated + 1 if saturated else 0
        bolt.idle = bolt.idle + 1 if idle else 0
        if cooling:
            return None, []
        found = [self._check_scale_up(name, bolt, s, pressure, time)]
        if bolt.stuck_rate is not None:
            moved = abs(s.executed_per_sec - bolt.stuck_rate) > STUCK_RELEASE_SHARE * max(bolt.stuck_rate, 1.0)
            if not moved and (saturated or pressure):
                return None, [d for d in found if d is not None]
            bolt.stuck_rate = None
            found.append(self._report(bolt, name, "recovered", time,
                                      f"{name} is no longer stuck: its throughput is {s.executed_per_sec:.0f}/s at "
                                      f"utilization {s.utilization:.2f}"))
        elif not saturated and bolt.reported in ("skewed", "at-maximum"):
            found.append(self._report(bolt, name, "recovered", time,
                                      f"{name} is no longer saturated (utilization {s.utilization:.2f})"))
        if draining and bolt.saturated:
            return None, [d for d in found if d is not None]  # busy catching up with the lag: it will be gone soon
        decision, diagnosis = self._resolve(name, bolt, s, growth, time)
        found.append(diagnosis)
        return decision, [d for d in found if d is not None]

    def _resolve(self, name: str, bolt: _Bolt, s: BoltSample, growth: float,
                 time: float) -> tuple[Decision | None, Diagnosis | None]:
        """The resolution of a sustained symptom: a new executor count, or why there is none."""
        low_mark, high_mark = marks(self.settings.target)
        lo = self.settings.min_executors[name]
        hi = self.settings.max_executors[name]
        target = self.settings.target
        if bolt.saturated >= SUSTAIN:
            if s.utilization < target and s.executors > 1:
                return None, self._report(
                    bolt, name, "skewed", time,
                    f"{name} is skewed: its busiest executor is at capacity {s.capacity:.2f} while the average is "
                    f"{s.utilization:.2f}; one task gets most of the tuples (a hot key?), more executors do not help")
            if s.executors >= hi:
                return None, self._report(
                    bolt, name, "at-maximum", time,
                    f"{name} is saturated (utilization {s.utilization:.2f}) at its maximum of {hi} executor(s)")
            to = min(hi, max(s.executors + 1, math.ceil(s.busy * growth / target - 1e-9)))
            lag = f"; its input is {growth:.1f}x what is consumed (the lag grows)" if growth > 1.0 else ""
            why = (f"saturated: utilization {s.utilization:.2f} (busiest executor {s.capacity:.2f}) over "
                   f"{high_mark:.2f} at {s.executed_per_sec:.0f} tuples/s{lag}; sized for capacity {target:.2f}")
            return Decision(time, name, s.executors, to, why), None
        if bolt.idle >= SUSTAIN and s.executors > lo:
            to = max(lo, math.ceil(s.busy / target - 1e-9), 1)
            if to < s.executors:
                why = (f"idle: utilization {s.utilization:.2f} under {low_mark:.2f} at {s.executed_per_sec:.0f} "
                       f"tuples/s, no lag growth or backpressure; sized for capacity {target:.2f}")
                return Decision(time, name, s.executors, to, why), None
        return None, None

    def _check_scale_up(self, name: str, bolt: _Bolt, s: BoltSample, pressure: bool,
                        time: float) -> Diagnosis | None:
        """After the cooldown of a scale-up: did it raise the bolt's throughput?"""
        check = bolt.pending_check
        if check is None:
            return None
        bolt.pending_check = None
        before_n, before_rate, after_n = check
        if s.executors != after_n or before_rate <= 0:
            return None
        expected = before_rate * (after_n - before_n) / before_n
        gained = s.executed_per_sec - before_rate
        saturated = s.utilization >= marks(self.settings.target)[1]
        # still saturated, or no longer but the input still waits (its executors share what one had: one thread)
        if (saturated or pressure) and gained < STUCK_GAIN_SHARE * expected:
            bolt.stuck_rate = s.executed_per_sec
            return self._report(
                bolt, name, "stuck", time,
                f"{name} is stuck: {before_n} -> {after_n} executors did not raise its throughput "
                f"({before_rate:.0f}/s -> {s.executed_per_sec:.0f}/s) while it stays saturated; more executors "
                "cannot help (a lock or a slow service every executor waits on?); not scaled up until it changes")
        return None

    @staticmethod
    def _report(bolt: _Bolt, name: str, kind: str, time: float, reason: str) -> Diagnosis | None:
        if kind == "recovered" and not bolt.reported:
            return None
        if bolt.reported == kind:
            return None
        bolt.reported = "" if kind == "recovered" else kind
        return Diagnosis(time, name, kind, reason)
