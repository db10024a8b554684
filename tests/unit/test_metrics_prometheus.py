"""Prometheus text rendering of a cluster's figures."""

from __future__ import annotations

import re

from storm_py.metrics import prometheus, stats
from storm_py.metrics.prometheus import ComponentSeries, MetricFamily


def test_render_escapes_and_formats() -> None:
    fam = MetricFamily("storm_x_total", "counter", "A help\nline with \\.")
    fam.add(3, topology='we"ird', component="a\\b")
    fam.add(0.25, topology="t", component="c")
    empty = MetricFamily("storm_empty", "gauge", "no samples")
    text = prometheus.render([fam, empty])
    assert text == (
        "# HELP storm_x_total A help\\nline with \\\\.\n"
        "# TYPE storm_x_total counter\n"
        'storm_x_total{topology="we\\"ird",component="a\\\\b"} 3\n'
        'storm_x_total{topology="t",component="c"} 0.25\n'
    )


def test_topology_families_label_topology_component_stream() -> None:
    spout = stats.combine([stats.ExecutorFigures.of(
        {"emitted:default": 10, "transferred:default": 20, "acked": 6, "failed": 1, "timed_out": 3,
         "complete_ms": 60.0}, 10.0)])
    bolt = stats.combine([stats.ExecutorFigures.of(
        {"executed:words:default": 20, "execute_ms:words:default": 2000.0}, 10.0)])
    row = {"id": "t-1-1", "name": "t", "status": "ACTIVE", "uptimeSeconds": 10, "workersTotal": 2}
    comps = {"words": ComponentSeries(True, spout, spout), "count": ComponentSeries(False, bolt, bolt,
                                                                                     {"receive_queue.population": 4})}
    text = prometheus.render(prometheus.cluster_families({"supervisors": 2, "slotsTotal": 8})
                             + prometheus.topology_families([(row, comps)]))
    assert 'storm_spout_timed_out_total{topology="t",component="words"} 3' in text
    assert 'storm_component_failed_total{topology="t",component="words"} 1' in text
    assert 'storm_component_emitted_total{topology="t",component="words",stream="default"} 10' in text
    assert 'storm_bolt_capacity_ratio{topology="t",component="count"} 0.2' in text
    assert 'storm_bolt_execute_latency_seconds{topology="t",component="count"} 0.1' in text
    assert 'storm_spout_complete_latency_seconds{topology="t",component="words"} 0.01' in text
    assert 'storm_component_receive_queue_population{topology="t",component="count"} 4' in text
    assert "storm_cluster_supervisors 2" in text
    sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_]\w*="([^"\\]|\\.)*",?)*\})? \S+$')
    for line in text.splitlines():
        assert line.startswith("# ") or sample.match(line), line
