"""The tracing cost bench's topology really traces: its settings reach both workers, and by their shutdown every
sampled tree has been posted whole to the receiver (else the bench would measure tracing that never ran)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import tracing_cost  # noqa: E402
from two_workers import TwoWorkers  # noqa: E402

from storm_py.clock import SimulatedClock  # noqa: E402
from tests.ops.otlp_receiver import OtlpReceiver  # noqa: E402


def test_the_tracing_bench_s_topology_posts_the_sampled_trees_by_its_shutdown() -> None:
    receiver = OtlpReceiver()
    try:
        tw = TwoWorkers("word_count", 1, 2000, SimulatedClock(), tracing_cost.tracing_conf(receiver.endpoint, 10.0))
        tw.run_passes(3)
        tw.shutdown()
        acked = tw.acked()
        traces = receiver.traces()
    finally:
        receiver.close()
    assert acked > 100
    # a tree of a sentence of 8 words: emit, send and execute split, and 8 x send and execute count
    complete = [t for t in traces.values() if len(t) == 19]
    assert 0.05 * acked <= len(complete) <= len(traces) <= 0.2 * (acked + 2 * 2000), (acked, len(traces))
