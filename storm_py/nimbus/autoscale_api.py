"""This module owns nimbus's autoscaler route; it needs the token, as every route but the UI's files.

``GET /api/v1/topology/{id}/autoscale`` (``{id}`` a topology id or name) -> ``{"topologyId", "name", "enabled",
"targetCapacity", "cooldownSecs", "periodSecs", "bolts", "decisions", "diagnoses"}``: ``bolts`` maps each bolt
to ``{"executors", "tasks", "min", "max"}``; ``decisions`` lists the autoscaler's changes, oldest first, each
``{"time" (epoch seconds), "component", "from", "to", "reason"}``; ``diagnoses`` the bolts it would not scale
(``{"time", "component", "kind", "reason"}``, ``kind`` ``stuck``, ``skewed``, ``at-maximum`` or ``recovered``).
Any nimbus answers (the events are read from the cluster state, where only entries of the right shape are
passed on).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.models import StormBase
from storm_py.config.keys import setting
from storm_py.errors import StormPyError
from storm_py.nimbus.autoscale_policy import ENABLED
from storm_py.nimbus.autoscaler import bolts_of, settings_of
from storm_py.node.http_api import Request, Route

API = "/api/v1"


class AutoscaleNode(Protocol):
    """What the autoscaler route needs of the nimbus daemon."""

    state: ClusterState


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _text(x: Any) -> bool:
    return isinstance(x, str) and 0 < len(x) <= 2000


def well_formed_decisions(raw: Any) -> list[dict[str, Any]]:
    """The decisions of a stored record that have the published shape (others are left out)."""
    if not isinstance(raw, list):
        return []
    return [
        {"time": e["time"], "component": e["component"], "from": e["from"], "to": e["to"], "reason": e["reason"]}
        for e in raw
        if isinstance(e, dict) and _number(e.get("time")) and _text(e.get("component")) and _text(e.get("reason"))
        and type(e.get("from")) is int and type(e.get("to")) is int
    ]


def well_formed_diagnoses(raw: Any) -> list[dict[str, Any]]:
    """The diagnoses of a stored record that have the published shape (others are left out)."""
    if not isinstance(raw, list):
        return []
    return [
        {"time": e["time"], "component": e["component"], "kind": e["kind"], "reason": e["reason"]}
        for e in raw
        if isinstance(e, dict) and _number(e.get("time")) and _text(e.get("component")) and _text(e.get("kind"))
        and _text(e.get("reason"))
    ]


def autoscale_view(tid: str, base: StormBase, events: dict[str, Any]) -> dict[str, Any]:
    """The route's answer for one topology."""
    try:
        settings = settings_of(base)
        low, high = settings.min_executors, settings.max_executors
    except StormPyError:  # a rebalance -t gave bounds that no longer fit: shown without them
        settings, low, high = None, {}, {}
    conf = base.topology_conf
    return {
        "topologyId": tid,
        "name": base.name,
        "enabled": bool(setting(conf, ENABLED)) and settings is not None,
        "targetCapacity": settings.target if settings else None,
        "cooldownSecs": settings.cooldown_secs if settings else None,
        "periodSecs": settings.period_secs if settings else None,
        "bolts": {b: {"executors": base.component_executors.get(b, 0), "tasks": tasks, "min": low.get(b),
                      "max": high.get(b)} for b, tasks in sorted(bolts_of(base).items())},
        "decisions": well_formed_decisions(events.get("decisions")),
        "diagnoses": well_formed_diagnoses(events.get("diagnoses")),
    }


def autoscale_routes(node: AutoscaleNode, base: Callable[[str], tuple[str, StormBase]]) -> list[Route]:
    """The autoscaler route of ``node``; ``base`` finds a live topology by id or name."""

    def autoscale(req: Request) -> dict[str, Any]:
        tid, found = base(req.params["id"])
        return autoscale_view(tid, found, node.state.autoscale_events(tid))

    return [Route("GET", API + "/topology/{id}/autoscale", autoscale)]
