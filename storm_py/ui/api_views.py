"""This module owns the JSON shapes of Storm UI's REST API, built from cluster-state records (pure functions).

Field names follow the REST API of Storm's UI (``slotsTotal``, ``uptimeSeconds``, ``spoutId``...).
Statistics come from the workers' heartbeats, over Storm's windows (``?window=600|10800|86400|:all-time``,
see :mod:`storm_py.ui.stats_views`); resource fields of the resource-aware scheduler are not reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storm_py.cluster_state.models import Assignment, ErrorInfo, NimbusInfo, StormBase, SupervisorInfo, WorkerHeartbeat
from storm_py.config.keys import setting
from storm_py.metrics import stats
from storm_py.metrics.reports import TopologyReading, by_component, combined, reports
from storm_py.metrics.windows import ALL_TIME, StatsBook, pretty_duration, window_pretty
from storm_py.runtime.system_topology import layout_from_counts
from storm_py.ui import stats_views

LEADER = "Leader"
NOT_LEADER = "Not a Leader"


def _used_slots(assignments: Mapping[str, Assignment]) -> dict[str, set[int]]:
    used: dict[str, set[int]] = {}
    for a in assignments.values():
        for node, port in a.executor_node_port.values():
            used.setdefault(node, set()).add(port)
    return used


def supervisor_rows(
    supervisors: Mapping[str, SupervisorInfo], assignments: Mapping[str, Assignment]
) -> list[dict[str, Any]]:
    """``/api/v1/supervisor/summary`` rows."""
    used = _used_slots(assignments)
    rows = []
    for sid, info in sorted(supervisors.items()):
        rows.append(
            {
                "id": sid,
                "host": info.hostname,
                "uptime": pretty_duration(info.uptime_secs),
                "uptimeSeconds": int(info.uptime_secs),
                "slotsTotal": len(info.ports),
                "slotsUsed": len(used.get(sid, set()) & set(info.ports)),
                "version": info.version,
                "logviewerPort": info.logviewer_port,
            }
        )
    return rows


def cluster_summary(
    version: str,
    supervisors: Mapping[str, SupervisorInfo],
    bases: Mapping[str, StormBase],
    assignments: Mapping[str, Assignment],
) -> dict[str, Any]:
    """``/api/v1/cluster/summary``."""
    rows = supervisor_rows(supervisors, assignments)
    total = sum(r["slotsTotal"] for r in rows)
    used = sum(r["slotsUsed"] for r in rows)
    return {
        "stormVersion": version,
        "supervisors": len(rows),
        "topologies": len(bases),
        "slotsTotal": total,
        "slotsUsed": used,
        "slotsFree": total - used,
        "executorsTotal": sum(sum(b.component_executors.values()) for b in bases.values()),
        "tasksTotal": sum(sum(b.component_tasks.values()) for b in bases.values()),
        "schedulerDisplayResource": False,
    }


def nimbus_rows(nimbuses: list[NimbusInfo], leader: str | None, now: float) -> list[dict[str, Any]]:
    """``/api/v1/nimbus/summary`` rows; a registered nimbus is alive (its registration is ephemeral)."""
    rows = []
    for n in nimbuses:
        up = max(0.0, now - n.start_time) if n.start_time else 0.0
        rows.append(
            {
                "host": n.host,
                "port": n.port,
                "status": LEADER if n.id == leader else NOT_LEADER,
                "version": n.version,
                "nimbusUpTime": pretty_duration(up),
                "nimbusUpTimeSeconds": int(up),
                "nimbusLogLink": "",
            }
        )
    return rows


def topology_row(summary: Mapping[str, Any], replication: int) -> dict[str, Any]:
    """A ``/api/v1/topology/summary`` row from :meth:`Nimbus.cluster_summary`'s row."""
    row = dict(summary)
    row["encodedId"] = row["id"]
    row["uptime"] = pretty_duration(row.get("uptimeSeconds", 0))
    row["replicationCount"] = replication
    row["schedulerDisplayResource"] = False
    return row


def _error_fields(errors: list[dict[str, Any]], now: float) -> dict[str, Any]:
    if not errors:
        return {"errorHost": "", "errorPort": None, "errorTime": None, "errorLapsedSecs": None,
                "errorWorkerLogLink": ""}
    last = errors[0]
    return {
        "errorHost": last.get("host", ""),
        "errorPort": last.get("port"),
        "errorTime": int(last.get("time_secs", 0)),
        "errorLapsedSecs": int(max(0.0, now - float(last.get("time_secs", 0)))),
        "errorWorkerLogLink": "",
    }


def log_viewer_urls(supervisors: Mapping[str, SupervisorInfo], scheme: str = "http") -> dict[str, str]:
    """Supervisor id -> base URL of its log viewer (supervisors that serve none are left out); ``scheme`` is
    ``https`` on a cluster with ``storm.tls.enabled``."""
    return {
        sid: f"{scheme}://{info.hostname}:{info.logviewer_port}"
        for sid, info in supervisors.items()
        if info.logviewer_port
    }


def _workers(
    tid: str, name: str, assignment: Assignment | None, beats: Mapping[tuple[str, int], WorkerHeartbeat],
    task_component: Mapping[int, str], log_viewers: Mapping[str, str],
) -> list[dict[str, Any]]:
    if assignment is None:
        return []
    out = []
    for (node, port), executors in sorted(assignment.slots().items()):
        hb = beats.get((node, port))
        counts: dict[str, int] = {}
        for start, end in executors:
            comp = task_component.get(start, "?")
            counts[comp] = counts.get(comp, 0) + (end - start + 1)
        up = hb.uptime_secs if hb is not None else 0.0
        out.append(
            {
                "topologyId": tid,
                "topologyName": name,
                "supervisorId": node,
                "host": assignment.node_host.get(node, node),
                "port": port,
                "executorsTotal": len(executors),
                "componentNumTasks": counts,
                "uptime": pretty_duration(up),
                "uptimeSeconds": int(up),
                "workerLogLink": (
                    f"{log_viewers[node]}/log?file={tid}/{port}/worker.log" if node in log_viewers else ""
                ),
                "logviewerUrl": log_viewers.get(node, ""),
                "transfer": dict((hb.stats or {}).get("transfer", {})) if hb is not None else {},
                "dropped": int((hb.stats or {}).get("dropped", 0)) if hb is not None else 0,
            }
        )
    return out


def task_components(base: StormBase) -> dict[int, str]:
    """Task id -> component id of a topology (the layout every daemon computes from its storm base)."""
    counts = {c: (base.component_tasks.get(c, n), n) for c, n in base.component_executors.items()}
    return layout_from_counts(counts).task_to_component()


def topology_summary(reading: TopologyReading, window: str = ALL_TIME) -> dict[str, Any]:
    """Storm UI's topology page of what nimbus read (``/api/v1/topology/:id`` field names), with statistics over
    ``window`` (Storm's ``?window=``)."""
    base, tid, now = reading.base, reading.topology_id, reading.now
    comps = by_component(reading.book, tid, reading.reports, window, now)
    spouts, bolts = stats_views.component_rows(base, comps)
    for entry in spouts + bolts:
        errs = reading.errors.get(entry.get("spoutId") or entry["boltId"], [])
        entry["lastError"] = errs[0].error if errs else ""
        entry["errors"] = [e.to_json() for e in errs]
    assignment = reading.assignment
    return {
        "id": tid,
        "name": base.name,
        "window": window,
        "topologyStats": stats_views.topology_stats(reading.book, tid, reading.reports, now),
        "lastCheckpoint": stats_views.checkpoint_status(reading.reports, now),
        "status": base.status.upper(),
        "uptimeSeconds": int(max(0.0, now - base.launch_time)),
        "tasksTotal": sum(base.component_tasks.values()),
        "workersTotal": reading.workers,
        "requestedWorkers": reading.requested_workers,
        "schedulerInfo": reading.scheduler_info,
        "executorsTotal": sum(base.component_executors.values()),
        "spouts": spouts,
        "bolts": bolts,
        "configuration": base.topology_conf,
        "assignment": {f"{s}-{e}": [n, p] for (s, e), (n, p) in (assignment.executor_node_port.items()
                                                                       if assignment else [])},
    }


def topology_page(
    summary: Mapping[str, Any],
    base: StormBase,
    assignment: Assignment | None,
    beats: Mapping[tuple[str, int], WorkerHeartbeat],
    replication: int,
    now: float,
    log_viewers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``/api/v1/topology/:id`` from :func:`topology_summary`'s page plus the assignment and heartbeats.

    ``log_viewers`` (supervisor id -> log viewer URL, :func:`log_viewer_urls`) fills the workers' log links.
    """
    page = dict(summary)
    tid = str(page["id"])
    page["encodedId"] = tid
    page["uptime"] = pretty_duration(page.get("uptimeSeconds", 0))
    page["msgTimeout"] = base.topology_conf.get("topology.message.timeout.secs")
    page["debug"] = bool(setting(base.topology_conf, "topology.debug"))
    page["replicationCount"] = replication
    page.setdefault("window", ALL_TIME)
    page["windowHint"] = window_pretty(str(page["window"]))
    page["schedulerDisplayResource"] = False
    spouts = [dict(s) for s in page.get("spouts", [])]
    bolts = [dict(b) for b in page.get("bolts", [])]
    for comp in spouts + bolts:
        comp.update(_error_fields(comp.get("errors", []), now))
        comp.setdefault("encodedId", comp.get("spoutId") or comp.get("boltId"))
    page["spouts"], page["bolts"] = spouts, bolts
    page["componentSettings"] = [
        {"component": cid, "key": k, "value": v}
        for cid, settings in sorted(base.component_settings.items()) for k, v in sorted(settings.items())
    ]
    page["workers"] = _workers(tid, base.name, assignment, beats, task_components(base), log_viewers or {})
    page["spoutLag"] = stats_views.topology_lag(reports(beats))  # spouts reading a log (Kafka): lag per partition
    links = {(w["host"], w["port"]): w["workerLogLink"] for w in page["workers"]}
    for comp in spouts + bolts:  # the last error's log link: the worker on the error's host and port
        comp["errorWorkerLogLink"] = links.get((comp.get("errorHost"), comp.get("errorPort")), "")
        for err in comp.get("errors", []):
            err["errorWorkerLogLink"] = links.get((err.get("host"), err.get("port")), "")
    return page


def component_page(
    page: Mapping[str, Any],
    component: str,
    assignment: Assignment | None,
    beats: Mapping[tuple[str, int], WorkerHeartbeat],
    errors: list[ErrorInfo],
    now: float,
    book: StatsBook | None = None,
    window: str = ALL_TIME,
) -> dict[str, Any] | None:
    """``/api/v1/topology/:id/component/:component`` from a topology page; None for an unknown component.

    ``book`` holds the rolling windows (:class:`~storm_py.metrics.windows.StatsBook`); without one only the
    all-time figures are known.
    """
    comp = next((c for c in page["spouts"] if c.get("spoutId") == component), None)
    is_spout = comp is not None
    if comp is None:
        comp = next((c for c in page["bolts"] if c.get("boltId") == component), None)
    if comp is None:
        return None
    book = book if book is not None else StatsBook()
    tid = str(page["id"])
    found = [r for r in reports(beats) if r.component == component]
    rows = by_component(book, tid, found, window, now).get(component, [])
    log_links = {(w["supervisorId"], w["port"]): w["workerLogLink"] for w in page.get("workers", [])}
    host_links = {(w["host"], w["port"]): w["workerLogLink"] for w in page.get("workers", [])}  # errors name these
    hosts = assignment.node_host if assignment is not None else {}
    fig = combined(rows)
    out: dict[str, Any] = {
        "id": component,
        "encodedId": component,
        "name": page["name"],
        "topologyId": page["id"],
        "encodedTopologyId": page["id"],
        "topologyStatus": page["status"],
        "componentType": "spout" if is_spout else "bolt",
        "executors": comp.get("executors", 0),
        "tasks": comp.get("tasks", 0),
        "window": window,
        "windowHint": window_pretty(window),
        "debug": False,
        "schedulerDisplayResource": False,
        "executorStats": stats_views.executor_stats(rows, is_spout, hosts, log_links),
        "outputStats": stats.output_stats(fig, is_spout),
        "inputStats": [] if is_spout else stats.input_stats(fig),
        "componentErrors": [
            {
                "error": e.error,
                "errorHost": e.host,
                "errorPort": e.port,
                "errorTime": int(e.time_secs),
                "errorLapsedSecs": int(max(0.0, now - e.time_secs)),
                "errorWorkerLogLink": host_links.get((e.host, e.port), ""),
            }
            for e in errors
        ],
    }
    summaries = stats_views.window_summaries(book, tid, found, component, is_spout, now)
    out["spoutSummary" if is_spout else "boltStats"] = summaries
    return out
