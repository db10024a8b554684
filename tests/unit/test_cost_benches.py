"""The profiling and tracing cost benches' arithmetic: the profile bench's windows and summary, the tracing bench's
settings (its topology really tracing: tests/ops/test_tracing_bench.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import profile_cost  # noqa: E402
import tracing_cost  # noqa: E402


def _mark(at: float, acked: int, worker: int, workers_cpu: float, total: float) -> profile_cost.Mark:
    return profile_cost.Mark(at=at, acked=acked, worker_acked=worker, cluster_cpu=workers_cpu * 1.5,
                             workers_cpu=workers_cpu, machine_busy=total / 2, machine_total=total)


def test_a_window_gives_rates_cpu_per_sentence_and_shares_of_the_cores() -> None:
    w = profile_cost.window(_mark(100.0, 1_000, 400, 10.0, 50.0), _mark(110.0, 201_000, 100_400, 16.0, 70.0))
    assert w["secs"] == 10.0
    assert w["acked_per_s"] == 20_000
    assert w["worker_acked_per_s"] == 10_000
    assert w["worker_cpu_us_per_sentence"] == 30.0  # 6 CPU seconds over 200,000 sentences
    assert w["cluster_cpu_pct"] == 45.0  # 9 of 20 core-seconds
    assert w["machine_busy_pct"] == 50.0


def test_a_window_without_sentences_has_no_cpu_per_sentence() -> None:
    w = profile_cost.window(_mark(0.0, 5, 5, 1.0, 10.0), _mark(2.0, 5, 5, 1.5, 14.0))
    assert w["acked_per_s"] == 0
    assert w["worker_cpu_us_per_sentence"] is None


def test_the_summary_gives_each_ratio_s_median_and_range_per_action_and_tool() -> None:
    rows = [{"action": "cpu", "tool": "py-spy", "during_over_before_acked_per_s": r,
             "during_over_before_worker_acked_per_s": r - 0.1, "after_over_before_acked_per_s": 1.0}
            for r in (0.9, 0.5, 0.8)]
    rows.append({"action": "memory", "tool": "in-process", "during_over_before_acked_per_s": 0.2})
    cpu, memory = profile_cost.summary(rows)
    assert (cpu["action"], cpu["tool"], cpu["rounds"]) == ("cpu", "py-spy", 3)
    assert cpu["during_over_before_acked_per_s"] == {"median": 0.8, "min": 0.5, "max": 0.9}
    assert cpu["during_over_before_worker_acked_per_s"]["median"] == pytest.approx(0.7)
    assert memory["rounds"] == 1 and "after_over_before_acked_per_s" not in memory


def test_tracing_off_sets_nothing_and_on_sets_the_endpoint_and_the_share() -> None:
    assert tracing_cost.tracing_conf(None, None) == {}
    assert tracing_cost.tracing_conf("http://127.0.0.1:1/v1/traces", 1.0) == {
        "topology.tracing.otlp.endpoint": "http://127.0.0.1:1/v1/traces", "topology.tracing.sample.percent": 1.0}

