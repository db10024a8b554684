"""The autoscaler's pure policy fed synthetic metrics: steps, ramps, noise, a stuck and a skewed bolt, bounds,
cooldown; and its settings checked at submit."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

import pytest

from storm_py.errors import InvalidTopologyException
from storm_py.nimbus.autoscale_policy import (
    AutoscalePolicy,
    AutoscaleSettings,
    BoltSample,
    Decision,
    Diagnosis,
    TopologySample,
    autoscale_settings,
)

PERIOD = 10.0
T0 = 1_800_000_000.0


def settings(**changes: object) -> AutoscaleSettings:
    base = {"enabled": True, "min_executors": {"work": 1}, "max_executors": {"work": 16}, "cooldown_secs": 30.0,
            "target": 0.7, "period_secs": PERIOD}
    base.update(changes)
    return AutoscaleSettings(**base)  # type: ignore[arg-type]


@dataclass
class Model:
    """One Kafka spout feeding one bolt whose tuples cost ``cost`` seconds each.

    ``limit`` caps the bolt's throughput whatever its executors (a lock every executor waits on);
    ``skew`` is the share of the tuples one executor gets (None: even).
    """

    executors: int = 1
    cost: float = 0.002
    lag: float = 0.0
    limit: float | None = None
    #: the limit binds while the executors' time is spread among them (they share one thread)
    shared: bool = False
    skew: float | None = None
    noise: float = 0.0
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    decisions: list[Decision] = field(default_factory=list)
    diagnoses: list[Diagnosis] = field(default_factory=list)
    history: list[int] = field(default_factory=list)

    def period(self, rate: float, now: float) -> TopologySample:
        can = self.executors / self.cost
        if self.skew is not None:
            can = min(can, 1.0 / (self.cost * self.skew))
        if self.limit is not None:
            can = min(can, self.limit)
        backlog = self.lag / PERIOD
        done = min(can, rate + backlog)
        self.lag = max(0.0, self.lag + (rate - done) * PERIOD)
        busy = done * self.cost * (1.0 + self.rng.uniform(-self.noise, self.noise))
        util = busy / self.executors
        top = min(1.0, done * self.cost * self.skew) if self.skew is not None else util
        if self.limit is not None and done >= self.limit and not self.shared:
            busy, util, top = float(self.executors), 1.0, 1.0  # every executor waits on the lock
        bolt = BoltSample(self.executors, done, busy, min(1.0, max(top, util)), self.cost * 1000)
        return TopologySample(T0 + now, {"work": bolt}, spout_rate=done, lag=int(self.lag))

    def run(self, policy: AutoscalePolicy, rates: list[float], start: float = 0.0) -> float:
        now = start
        for rate in rates:
            now += PERIOD
            step = policy.step(self.period(rate, now), now)
            self.diagnoses.extend(step.diagnoses)
            if step.decisions:
                policy.changed(step.decisions, now)
                self.decisions.extend(step.decisions)
                self.executors = step.decisions[-1].to
            self.history.append(self.executors)
        return now


def direction_changes(decisions: list[Decision]) -> int:
    signs = [1 if d.to > d.from_ else -1 for d in decisions]
    return sum(1 for a, b in itertools.pairwise(signs) if a != b)


def test_a_rate_step_up_then_down_scales_up_until_lag_stops_growing_then_down_without_oscillating():
    model = Model()
    policy = AutoscalePolicy(settings())
    model.run(policy, [200.0] * 12 + [2000.0] * 40 + [200.0] * 40)
    ups = [d for d in model.decisions if d.to > d.from_]
    downs = [d for d in model.decisions if d.to < d.from_]
    assert ups and downs
    assert max(model.history) <= 16
    # at the peak, sized near 2000/s x 2 ms / 0.7 = 6 executors, and the lag is drained before the fall
    peak = model.history[12 + 39]
    assert 5 <= peak <= 9, model.history
    assert model.history[-1] == 1
    assert direction_changes(model.decisions) == 1, model.decisions
    assert len(model.decisions) <= 5, model.decisions
    for d in model.decisions:
        assert d.reason and d.time >= T0 and isinstance(d.from_, int) and isinstance(d.to, int)
        assert d.to_json().keys() == {"time", "component", "from", "to", "reason"}


def test_a_partial_fall_scales_down_to_what_the_remaining_load_needs():
    model = Model()
    policy = AutoscalePolicy(settings())
    model.run(policy, [2000.0] * 30 + [700.0] * 30)
    downs = [d for d in model.decisions if d.to < d.from_]
    assert downs and downs[0].to == 2 and direction_changes(model.decisions) == 1, model.decisions
    assert model.history[-1] == 2  # 700/s x 2 ms = 1.4 busy executors, at 0.7 each: 2, not the minimum 1


def test_after_the_step_the_lag_drains_within_a_minute_without_overshooting():
    model = Model()
    policy = AutoscalePolicy(settings())
    lags = []
    for i in range(20):
        model.run(policy, [2000.0], start=i * PERIOD)
        lags.append(model.lag)
    assert lags[6:] == [0.0] * 14, lags
    assert model.history[-1] == model.history[2] == 6  # 2000/s x 2 ms at 0.7: sized once, not again while draining


def test_a_ramp_only_scales_up_while_it_rises():
    model = Model()
    policy = AutoscalePolicy(settings())
    model.run(policy, [100.0 + 40.0 * i for i in range(60)])  # 100/s to 2460/s over ten minutes
    assert model.decisions
    assert all(d.to > d.from_ for d in model.decisions), model.decisions
    assert model.history == sorted(model.history)
    assert model.history[-1] in (7, 8)  # 2460/s x 2 ms at 0.7 each
    assert model.lag < 2460.0 * PERIOD * 2  # keeps up within a couple of periods


def test_noise_around_a_steady_load_moves_nothing_once_sized():
    model = Model(noise=0.25)
    policy = AutoscalePolicy(settings())
    model.run(policy, [1000.0] * 10)  # sized first
    settled = len(model.decisions)
    model.run(policy, [1000.0 * (1 + random.Random(i).uniform(-0.2, 0.2)) for i in range(120)], start=100.0)
    assert len(model.decisions) == settled, model.decisions


def test_no_executors_are_given_back_while_a_backlog_waits():
    policy = AutoscalePolicy(settings())
    idle = BoltSample(6, 400.0, 0.8, 0.15)  # 6 executors at 0.13, the spout held back elsewhere
    for i in range(10):
        step = policy.step(TopologySample(T0 + i * PERIOD, {"work": idle}, spout_rate=400.0, lag=100_000), i * PERIOD)
        assert step.decisions == ()
    step = policy.step(TopologySample(T0 + 10 * PERIOD, {"work": idle}, spout_rate=400.0, lag=100), 10 * PERIOD)
    step = policy.step(TopologySample(T0 + 11 * PERIOD, {"work": idle}, spout_rate=400.0, lag=100), 11 * PERIOD)
    assert [(d.from_, d.to) for d in step.decisions] == [(6, 2)]


def test_a_stuck_bolt_is_diagnosed_and_not_scaled_forever():
    model = Model(limit=400.0)  # 400/s whatever its executors
    policy = AutoscalePolicy(settings())
    model.run(policy, [1500.0] * 60)
    assert 1 <= len(model.decisions) <= 2, model.decisions
    stuck = [d for d in model.diagnoses if d.kind == "stuck"]
    assert len(stuck) == 1 and stuck[0].component == "work" and "stuck" in stuck[0].reason


def test_executors_that_share_one_thread_are_diagnosed_stuck_after_one_scale_up():
    model = Model(limit=450.0, shared=True)  # one worker's thread runs every executor: 450/s whatever their number
    policy = AutoscalePolicy(settings())
    model.run(policy, [2000.0] * 40)
    assert len(model.decisions) == 1, model.decisions
    assert [d.kind for d in model.diagnoses] == ["stuck"]


def test_a_stuck_bolt_recovers_when_its_throughput_changes():
    model = Model(limit=400.0)
    policy = AutoscalePolicy(settings())
    now = model.run(policy, [1500.0] * 30)
    model.limit = None
    model.run(policy, [1500.0] * 30, start=now)
    assert [d.kind for d in model.diagnoses] == ["stuck", "recovered"]


def test_a_skewed_bolt_is_diagnosed_not_scaled():
    model = Model(executors=4, skew=0.9, cost=0.001)  # one executor gets 90% of the tuples
    policy = AutoscalePolicy(settings())
    model.run(policy, [1200.0] * 20)
    assert model.decisions == []
    assert [d.kind for d in model.diagnoses] == ["skewed"]


def test_bounds_hold_and_a_saturated_bolt_at_its_maximum_is_reported_once():
    model = Model(executors=2)
    policy = AutoscalePolicy(settings(min_executors={"work": 2}, max_executors={"work": 3}))
    model.run(policy, [2000.0] * 30 + [10.0] * 40)
    assert max(model.history) == 3 and min(model.history) == 2
    assert [d.kind for d in model.diagnoses] == ["at-maximum", "recovered"]


def test_nothing_changes_within_the_cooldown():
    model = Model()
    policy = AutoscalePolicy(settings(cooldown_secs=120.0))
    model.run(policy, [200.0 * (1 + i) for i in range(40)])
    times = [d.time for d in model.decisions]
    assert len(times) >= 2
    assert all(b - a >= 120.0 for a, b in itertools.pairwise(times))


def test_a_step_is_sized_on_the_bolts_input_when_the_spouts_emit_ahead_of_it():
    """Without tuple trees (exactly_once) the spouts emit ahead of a saturated bolt into the workers' queues: the
    lag grows by less than the bolt falls behind, and the step is sized on the records arriving instead."""
    policy = AutoscalePolicy(settings())
    steady = BoltSample(1, 200.0, 0.44, 0.44)
    for i in range(3):
        step = policy.step(TopologySample(T0 + i * PERIOD, {"work": steady}, spout_rate=200.0, lag=50), i * PERIOD)
        assert step.decisions == ()
    # 2,000/s arrive; the spout emits 1,100/s, the bolt executes 450/s at its one executor's limit
    behind = BoltSample(1, 450.0, 1.0, 1.0)
    decided = []
    for i, lag in enumerate([9_050, 18_050], start=3):
        step = policy.step(TopologySample(T0 + i * PERIOD, {"work": behind}, spout_rate=1100.0, lag=lag), i * PERIOD)
        decided += [(d.from_, d.to) for d in step.decisions]
    # 2,000 / 450 = 4.4 of the executor's busy time, at capacity 0.7: 7 executors in one step (not 3 for 1.8x)
    assert decided == [(1, 7)], decided


def test_the_cooldown_counts_from_the_first_sample_of_the_new_layout():
    """A rebalance pauses the topology longer than the cooldown (the wait, the workers' restart): the catch-up of
    the lag the pause grew comes first, and the busy bolt and the growing lag of those samples move nothing."""
    policy = AutoscalePolicy(settings(cooldown_secs=30.0))
    idle = BoltSample(8, 200.0, 0.4, 0.06)
    for i in range(3):
        step = policy.step(TopologySample(T0 + i * PERIOD, {"work": idle}, spout_rate=200.0, lag=10), i * PERIOD)
    assert [(d.from_, d.to) for d in step.decisions] == [(8, 1)]
    policy.changed(step.decisions, 2 * PERIOD)
    # no sample while the workers restart; the new layout's first at 60 s, catching up with what the pause left
    busy = BoltSample(1, 450.0, 1.0, 1.0)
    decided = []
    for i, lag in enumerate([12_000, 14_000, 16_000, 13_000, 10_000]):
        now = 60.0 + i * PERIOD
        step = policy.step(TopologySample(T0 + now, {"work": busy}, spout_rate=200.0, lag=lag), now)
        decided += [(now, d.from_, d.to) for d in step.decisions]
    assert decided == []
    # past the cooldown from the new layout's first sample, a bolt that stays saturated behind a growing lag grows
    for i, lag in enumerate([14_000, 18_000, 22_000]):
        now = 110.0 + i * PERIOD
        step = policy.step(TopologySample(T0 + now, {"work": busy}, spout_rate=200.0, lag=lag), now)
        decided += [(now, d.from_, d.to) for d in step.decisions]
    assert decided and all(now >= 90.0 and to > 1 for now, _, to in decided)


def test_a_change_made_by_someone_else_restarts_the_streaks():
    model = Model()
    policy = AutoscalePolicy(settings())
    model.run(policy, [2000.0])  # one saturated sample
    model.executors = 2  # rebalanced by hand
    model.run(policy, [2000.0], start=PERIOD)
    assert model.decisions == []


# ------------------------------------------------------------------------------------------------- settings

BOLTS = {"split": 8, "count": 4}


def test_settings_take_an_int_for_every_bolt_within_its_tasks_or_a_dict():
    s = autoscale_settings({"topology.autoscale.max.parallelism": 6, "topology.autoscale.min.parallelism":
                            {"count": 2}}, BOLTS, {"words"})
    assert s.max_executors == {"split": 6, "count": 4}
    assert s.min_executors == {"split": 1, "count": 2}
    assert s.enabled is False and s.cooldown_secs == 120 and s.target == 0.7 and s.period_secs == 60


@pytest.mark.parametrize(("conf", "words"), [
    ({"topology.autoscale.max.parallelism": {"split": 9}}, ["topology.autoscale.max.parallelism", "'split'", "8"]),
    ({"topology.autoscale.min.parallelism": {"nope": 1}}, ["topology.autoscale.min.parallelism", "'nope'"]),
    ({"topology.autoscale.max.parallelism": {"words": 1}}, ["topology.autoscale.max.parallelism", "'words'",
                                                             "spout"]),
    ({"topology.autoscale.min.parallelism": {"count": 0}}, ["topology.autoscale.min.parallelism", "'count'"]),
    ({"topology.autoscale.min.parallelism": {"count": 3}, "topology.autoscale.max.parallelism": {"count": 2}},
     ["topology.autoscale.min.parallelism", "'count'", "maximum 2"]),
    ({"topology.autoscale.max.parallelism": "6"}, ["topology.autoscale.max.parallelism"]),
])
def test_bad_settings_are_refused_naming_the_key_and_the_component(conf, words):
    with pytest.raises(InvalidTopologyException) as err:
        autoscale_settings(conf, BOLTS, {"words"})
    for word in words:
        assert word in str(err.value)

