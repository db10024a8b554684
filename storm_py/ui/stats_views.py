"""This module owns the JSON of Storm UI's statistics: per-window topology stats, spout and bolt rows, a
component's windows and executors, the graph of ``/topology/:id/visualization``, spout lag and the last
checkpoint, in the field names of Storm's REST API.

Pure functions over a topology's storm base and its executors' reports and figures (:mod:`storm_py.metrics.reports`,
rolled over the windows of a :class:`~storm_py.metrics.windows.StatsBook`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from storm_py.cluster_state.models import StormBase
from storm_py.metrics import stats
from storm_py.metrics.reports import (
    CHECKPOINT_COMMITTED_AT,
    CHECKPOINT_TXID,
    NodePort,
    Report,
    by_component,
    combined,
    figures,
    is_system,
)
from storm_py.metrics.stats import ExecutorFigures
from storm_py.metrics.windows import WINDOWS, StatsBook, pretty_duration, window_pretty


def topology_lag(found: Iterable[Report]) -> dict[str, Any]:
    """``/topology/:id/lag``: per spout reporting lag, Storm's shape (``spoutId``, ``spoutType``,
    ``spoutLagResult``: topic -> partition -> ``consumerCommittedOffset``, ``logHeadOffset``, ``lag``) plus
    ``totalLag`` and ``recordsPerSec`` (summed over its executors)."""
    out: dict[str, dict[str, Any]] = {}
    for r in found:
        if r.lag is None:
            continue
        entry = out.setdefault(r.component, {"spoutId": r.component, "spoutType": r.lag.spout_type,
                                             "spoutLagResult": {}, "totalLag": 0, "recordsPerSec": 0.0})
        entry["recordsPerSec"] = round(entry["recordsPerSec"] + r.lag.records_per_sec, 3)
        for p in r.lag.partitions:
            entry["spoutLagResult"].setdefault(p.topic, {})[str(p.partition)] = {
                "consumerCommittedOffset": p.committed, "logHeadOffset": p.head, "lag": p.lag}
    for entry in out.values():
        entry["totalLag"] = sum(p["lag"] for parts in entry["spoutLagResult"].values() for p in parts.values())
    return out


def checkpoint_status(found: Iterable[Report], now: float) -> dict[str, Any] | None:
    """The last committed checkpoint of a topology with managed state: ``{"txid", "ageSecs"}`` (the age is
    ``None`` until a checkpoint commits in the checkpoint spout's current run); ``None`` without one."""
    for r in found:
        txid = r.gauges.get(CHECKPOINT_TXID)
        if txid is not None:
            at = r.gauges.get(CHECKPOINT_COMMITTED_AT)
            return {"txid": int(txid), "ageSecs": round(max(0.0, now - at), 3) if at is not None else None}
    return None


def topology_stats(book: StatsBook, topology_id: str, found: list[Report], now: float) -> list[dict[str, Any]]:
    """``topologyStats``: one row per window (Storm's order); system components left out, as Storm's default."""
    rows = []
    for window in WINDOWS:
        comps = by_component(book, topology_id, found, window, now)
        spouts = stats.combine(f for c, rs in comps.items() for r, f in rs if r.is_spout and not is_system(c))
        every = stats.combine(f for c, rs in comps.items() for _, f in rs if not is_system(c))
        s = spouts.figures
        rows.append({
            "window": window,
            "windowPretty": window_pretty(window),
            "emitted": round(every.figures.total_emitted),
            "transferred": round(every.figures.total_transferred),
            "acked": round(s.acked),
            "failed": round(s.failed),
            "timedOut": round(s.timed_out),
            "completeLatency": stats.latency_text(s.complete_latency_ms),
        })
    return rows


def component_rows(
    base: StormBase, comps: Mapping[str, list[tuple[Report, ExecutorFigures]]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The spouts and bolts rows (figures only) of every component of the storm base."""
    spouts, bolts = [], []
    spout_ids = set(base.spout_ids)
    for cid in sorted(base.component_executors):
        rows = comps.get(cid, [])
        is_spout = cid in spout_ids or any(r.is_spout for r, _ in rows)
        fig = combined(rows)
        entry: dict[str, Any] = {
            "executors": base.component_executors[cid],
            "tasks": base.component_tasks.get(cid, 0),
            "encodedId": cid,
        }
        if is_spout:
            entry["spoutId"] = cid
            entry.update(stats.spout_fields(fig))
            samples = sorted(x for r, _ in rows for x in r.latency_samples)
            entry["completeLatencyP99"] = samples[max(0, int(len(samples) * 0.99) - 1)] if samples else 0.0
            spouts.append(entry)
        else:
            entry["boltId"] = cid
            entry.update(stats.bolt_fields(fig))
            bolts.append(entry)
    return spouts, bolts


def window_summaries(
    book: StatsBook, topology_id: str, found: list[Report], component: str, is_spout: bool, now: float
) -> list[dict[str, Any]]:
    """A component's figures in every window (``spoutSummary`` / ``boltStats``)."""
    out = []
    mine = [r for r in found if r.component == component]
    for window in WINDOWS:
        fig = stats.combine(figures(book, topology_id, r, window, now) for r in mine)
        row: dict[str, Any] = {"window": window, "windowPretty": window_pretty(window)}
        row.update(stats.spout_fields(fig) if is_spout else stats.bolt_fields(fig))
        out.append(row)
    return out


def executor_stats(
    rows: list[tuple[Report, ExecutorFigures]], is_spout: bool, hosts: Mapping[str, str],
    log_links: Mapping[NodePort, str],
) -> list[dict[str, Any]]:
    """``executorStats`` of a component."""
    out = []
    for r, fig in rows:
        single = stats.ComponentFigures()
        single.add(fig)
        row: dict[str, Any] = {
            "id": r.executor_id,
            "encodedId": r.executor_id,
            "host": hosts.get(r.node, r.node),
            "port": r.port,
            "supervisorId": r.node,
            "uptime": pretty_duration(r.uptime),
            "uptimeSeconds": int(r.uptime),
            "receiveQueuePopulation": round(r.gauges.get(stats.QUEUE_POPULATION, 0.0)),
            "workerLogLink": log_links.get((r.node, r.port), ""),
        }
        row.update(stats.spout_fields(single) if is_spout else stats.bolt_fields(single))
        out.append(row)
    return out


def visualization(
    base: StormBase, comps: Mapping[str, list[tuple[Report, ExecutorFigures]]]
) -> dict[str, dict[str, Any]]:
    """Storm's ``/topology/:id/visualization`` map (user components), each input with its ``:rate`` (tuples/s)."""
    out: dict[str, dict[str, Any]] = {}
    spout_ids = set(base.spout_ids)
    for cid in sorted(base.component_executors):
        if is_system(cid):
            continue
        fig = combined(comps.get(cid, []))
        rates = stats.stream_rates(fig)
        inputs = []
        for source, stream, grouping in base.component_inputs.get(cid, []):
            if is_system(source) or stream.startswith(("__", "$")):
                continue
            inputs.append({
                ":component": source, ":stream": stream, ":sani-stream": stream, ":grouping": grouping,
                ":rate": round(rates.get(f"{source}:{stream}", 0.0), 3),
            })
        is_spout = cid in spout_ids
        out[cid] = {
            ":type": "spout" if is_spout else "bolt",
            ":capacity": round(fig.capacity, 3),
            ":latency": stats.latency_text(
                fig.figures.complete_latency_ms if is_spout else fig.figures.execute_latency_ms),
            ":transferred": round(fig.figures.total_transferred),
            ":inputs": inputs,
        }
    return out
