"""This module owns the Prometheus text exposition of a cluster's figures (``GET /metrics`` on nimbus).

Pure: :class:`MetricFamily` objects in, text format 0.0.4 out.  :func:`cluster_families` and
:func:`topology_families` build the families from the REST summaries and the per-component figures
(:mod:`storm_py.metrics.stats`).  Names follow Prometheus conventions: a ``storm_`` prefix, base units
(seconds), ``_total`` on counters; labels ``topology``, ``component``, ``stream``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from storm_py.metrics.stats import ComponentFigures

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Labels = tuple[tuple[str, str], ...]


@dataclass
class MetricFamily:
    """One metric name: its type (``counter`` or ``gauge``), help text and samples."""

    name: str
    kind: str
    help: str
    samples: list[tuple[Labels, float]] = field(default_factory=list)

    def add(self, value: float, **labels: str) -> None:
        """One sample."""
        self.samples.append((tuple(labels.items()), float(value)))


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def render(families: Iterable[MetricFamily]) -> str:
    """The text exposition of ``families`` (families without samples are left out)."""
    lines: list[str] = []
    for fam in families:
        if not fam.samples:
            continue
        lines.append(f"# HELP {fam.name} {_escape_help(fam.help)}")
        lines.append(f"# TYPE {fam.name} {fam.kind}")
        for labels, value in fam.samples:
            if labels:
                text = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels)
                lines.append(f"{fam.name}{{{text}}} {_number(value)}")
            else:
                lines.append(f"{fam.name} {_number(value)}")
    return "\n".join(lines) + "\n"


def cluster_families(summary: Mapping[str, Any]) -> list[MetricFamily]:
    """Families of ``/api/v1/cluster/summary``."""
    out = []
    for key, name, text in (
        ("supervisors", "storm_cluster_supervisors", "Supervisors registered."),
        ("topologies", "storm_cluster_topologies", "Live topologies."),
        ("slotsTotal", "storm_cluster_slots", "Worker slots of all supervisors."),
        ("slotsUsed", "storm_cluster_slots_used", "Worker slots running a worker."),
        ("slotsFree", "storm_cluster_slots_free", "Worker slots free."),
        ("executorsTotal", "storm_cluster_executors", "Executors of all topologies."),
        ("tasksTotal", "storm_cluster_tasks", "Tasks of all topologies."),
    ):
        fam = MetricFamily(name, "gauge", text)
        fam.add(float(summary.get(key, 0) or 0))
        out.append(fam)
    return out


@dataclass(frozen=True)
class WorkerRow:
    """What :func:`worker_families` needs of one worker: its topology, slot and the uptime of its last heartbeat."""

    topology: str
    node: str
    port: int
    uptime_secs: float


def worker_families(workers: Iterable[WorkerRow]) -> list[MetricFamily]:
    """Each live worker's uptime: a worker restarted on its slot shows as the series falling back (``resets()``)."""
    fam = MetricFamily(
        "storm_worker_uptime_seconds", "gauge", "Seconds since the worker on this slot started (its last heartbeat).")
    for w in workers:
        fam.add(w.uptime_secs, topology=w.topology, node=w.node, port=str(w.port))
    return [fam]


@dataclass
class ComponentSeries:
    """What :func:`topology_families` needs of one component."""

    is_spout: bool
    all_time: ComponentFigures
    recent: ComponentFigures  # the 10-minute window: latencies and capacity
    gauges: Mapping[str, float] = field(default_factory=dict)
    lag: Mapping[tuple[str, int], int] = field(default_factory=dict)  # (topic, partition) -> log end - committed
    records_per_sec: float | None = None  # a spout reading a log: records emitted per second, last heartbeat
    user: list[tuple[int, str, str, float]] = field(default_factory=list)  # (task, kind, name, value)


def topology_families(
    topologies: Iterable[tuple[Mapping[str, Any], Mapping[str, ComponentSeries]]],
) -> list[MetricFamily]:
    """Families of each topology's ``/topology/summary`` row and its components' figures."""
    fams = {
        "info": MetricFamily("storm_topology_info", "gauge", "A live topology; labels carry its id and status."),
        "uptime": MetricFamily("storm_topology_uptime_seconds", "gauge", "Seconds since the topology was submitted."),
        "workers": MetricFamily("storm_topology_workers", "gauge", "Workers assigned to the topology."),
        "executors": MetricFamily("storm_topology_executors", "gauge", "Executors of the topology."),
        "tasks": MetricFamily("storm_topology_tasks", "gauge", "Tasks of the topology."),
        "emitted": MetricFamily("storm_component_emitted_total", "counter", "Tuples emitted, by output stream."),
        "transferred": MetricFamily(
            "storm_component_transferred_total", "counter", "Tuples sent to tasks, by output stream."),
        "executed": MetricFamily(
            "storm_bolt_executed_total", "counter", "Input tuples executed, by source component and stream."),
        "acked": MetricFamily("storm_component_acked_total", "counter", "Tuples acked (spouts: tuple trees)."),
        "failed": MetricFamily(
            "storm_component_failed_total", "counter", "Tuples failed (spouts: trees failed, timeouts apart)."),
        "timed_out": MetricFamily(
            "storm_spout_timed_out_total", "counter", "Spout tuple trees that timed out (not counted as failed)."),
        "complete": MetricFamily(
            "storm_spout_complete_latency_seconds", "gauge", "Average emit-to-ack time of trees, last 10 minutes."),
        "execute": MetricFamily(
            "storm_bolt_execute_latency_seconds", "gauge", "Average execute time per tuple, last 10 minutes."),
        "process": MetricFamily(
            "storm_bolt_process_latency_seconds", "gauge", "Average process time per tuple, last 10 minutes."),
        "capacity": MetricFamily(
            "storm_bolt_capacity_ratio", "gauge", "Share of the last 10 minutes the busiest executor spent executing."),
        "max_spout": MetricFamily(
            "storm_spout_skipped_max_spout_seconds_total", "counter", "Time a spout waited on max spout pending."),
        "backpressure": MetricFamily(
            "storm_spout_skipped_backpressure_seconds_total", "counter", "Time a spout waited on back pressure."),
        "queue": MetricFamily(
            "storm_component_receive_queue_population", "gauge", "Tuples waiting in the executors' receive queues."),
        "lag": MetricFamily(
            "storm_kafka_spout_lag", "gauge", "Log end minus the spout's committed offset, per partition."),
        "records": MetricFamily(
            "storm_kafka_spout_records_per_second", "gauge", "Records a Kafka spout emitted per second."),
        "checkpoint_txid": MetricFamily(
            "storm_topology_checkpoint_txid", "gauge", "The txid of the last committed checkpoint of managed state."),
        "checkpoint_age": MetricFamily(
            "storm_topology_checkpoint_age_seconds", "gauge", "Seconds since the last checkpoint committed."),
    }
    user = {
        "metric": MetricFamily("storm_user_metric", "gauge", "A register_metric value, last bucket (maps: name.key)."),
        "counter_total": MetricFamily("storm_user_counter_total", "counter", "A metrics v2 counter."),
        "gauge": MetricFamily("storm_user_gauge", "gauge", "A metrics v2 gauge."),
        "histogram_count": MetricFamily("storm_user_histogram_count", "counter", "Values a histogram recorded."),
        "histogram_sum": MetricFamily("storm_user_histogram_sum", "counter", "The sum of a histogram's values."),
        "histogram_min": MetricFamily("storm_user_histogram_min", "gauge", "The least value a histogram recorded."),
        "histogram_max": MetricFamily("storm_user_histogram_max", "gauge", "The largest value a histogram recorded."),
        "meter_total": MetricFamily("storm_user_meter_total", "counter", "Events a meter marked."),
        "meter_mean_rate": MetricFamily("storm_user_meter_mean_rate", "gauge", "A meter's events per second."),
    }
    for row, components in topologies:
        topo = str(row.get("name", ""))
        fams["info"].add(1, topology=topo, topology_id=str(row.get("id", "")), status=str(row.get("status", "")))
        fams["uptime"].add(float(row.get("uptimeSeconds", 0)), topology=topo)
        fams["workers"].add(float(row.get("workersTotal", 0)), topology=topo)
        fams["executors"].add(float(row.get("executorsTotal", 0)), topology=topo)
        fams["tasks"].add(float(row.get("tasksTotal", 0)), topology=topo)
        for comp, series in sorted(components.items()):
            f = series.all_time.figures
            recent = series.recent.figures
            for stream, n in sorted(f.emitted.items()):
                fams["emitted"].add(n, topology=topo, component=comp, stream=stream)
            for stream, n in sorted(f.transferred.items()):
                fams["transferred"].add(n, topology=topo, component=comp, stream=stream)
            fams["acked"].add(f.acked, topology=topo, component=comp)
            fams["failed"].add(f.failed, topology=topo, component=comp)
            if series.is_spout:
                fams["timed_out"].add(f.timed_out, topology=topo, component=comp)
                fams["complete"].add(recent.complete_latency_ms / 1000.0, topology=topo, component=comp)
                fams["max_spout"].add(f.skipped_max_spout_ms / 1000.0, topology=topo, component=comp)
                fams["backpressure"].add(f.skipped_backpressure_ms / 1000.0, topology=topo, component=comp)
            else:
                for key, n in sorted(f.executed.items()):
                    source, _, stream = key.rpartition(":")
                    fams["executed"].add(n, topology=topo, component=comp, source_component=source, stream=stream)
                fams["execute"].add(recent.execute_latency_ms / 1000.0, topology=topo, component=comp)
                fams["process"].add(recent.process_latency_ms / 1000.0, topology=topo, component=comp)
                fams["capacity"].add(series.recent.capacity, topology=topo, component=comp)
            if "receive_queue.population" in series.gauges:
                fams["queue"].add(series.gauges["receive_queue.population"], topology=topo, component=comp)
            for (topic, partition), lag in sorted(series.lag.items()):
                fams["lag"].add(lag, topology=topo, component=comp, topic=topic, partition=str(partition))
            if series.records_per_sec is not None:
                fams["records"].add(series.records_per_sec, topology=topo, component=comp)
            if "checkpoint.txid" in series.gauges:
                fams["checkpoint_txid"].add(series.gauges["checkpoint.txid"], topology=topo)
            if "checkpoint.age.secs" in series.gauges:
                fams["checkpoint_age"].add(series.gauges["checkpoint.age.secs"], topology=topo)
            for task, kind, name, value in sorted(series.user):
                family = user.get(kind)
                if family is not None:
                    family.add(value, topology=topo, component=comp, task=str(task), metric=name)
    return [*fams.values(), *user.values()]
