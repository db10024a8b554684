"""This module owns the reading of nimbus's REST request parameters (a kill's or rebalance's wait, a stats window, a
``/debug/:action/:spct`` request) and the ``debug`` / ``samplingPct`` fields pages answer with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storm_py.metrics.windows import ALL_TIME, parse_window
from storm_py.node.http_api import BadRequestError, Request


def wait_param(req: Request) -> float | None:
    """A kill's or rebalance's ``:wait`` in seconds (``None``: not given)."""
    raw = req.params.get("wait")
    if raw is None:
        return None
    try:
        wait = float(raw)
    except ValueError:
        raise BadRequestError(f"wait time must be a number of seconds, got {raw!r}") from None
    if wait < 0:
        raise BadRequestError(f"wait time must be >= 0, got {raw!r}")
    return wait


def window_param(req: Request, default: str = ALL_TIME) -> str:
    """Storm's ``?window=`` (``600``, ``10800``, ``86400``, ``:all-time``)."""
    raw = (req.query.get("window") or [default])[0]
    try:
        return parse_window(raw)
    except ValueError as err:
        raise BadRequestError(str(err)) from None


def debug_request(params: Mapping[str, str]) -> tuple[bool, float]:
    """``(enable, sampling percentage)`` of a debug request's ``action`` (``enable`` or ``disable``) and ``spct``."""
    action = params["action"]
    if action not in ("enable", "disable"):
        raise BadRequestError(f"debug action must be enable or disable, got {action!r}")
    try:
        pct = float(params["spct"])
    except ValueError:
        raise BadRequestError(f"sampling percentage must be a number, got {params['spct']!r}") from None
    if not 0 <= pct <= 100:
        raise BadRequestError(f"sampling percentage must be between 0 and 100, got {pct}")
    return action == "enable", pct


def debug_view(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Storm's ``debug`` and ``samplingPct`` of a page (10 % until debugging was ever set)."""
    options = options or {}
    return {"debug": bool(options.get("enable")), "samplingPct": options.get("samplingpct", 10)}
