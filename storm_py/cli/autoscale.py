"""``storm-py autoscale NAME``: what the autoscaler did to a topology, read from nimbus's
``GET /api/v1/topology/:id/autoscale``, and the pure rendering of that answer (:func:`render`).

It prints the autoscaler's settings, each bolt's executors, tasks and bounds, then the decisions (time in UTC,
bolt, executors from and to, reason), oldest first, and the diagnoses of bolts it would not scale; ``--json``
prints the route's answer as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import click

from storm_py.cli.options import command_error, config_options, load_conf, nimbus_client
from storm_py.errors import StormPyError


def _when(epoch: Any) -> str:
    """An epoch time as UTC, to the second."""
    if isinstance(epoch, bool) or not isinstance(epoch, (int, float)):
        return "?"
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _num(x: Any) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else "?"


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]]


def render(view: Mapping[str, Any]) -> list[str]:
    """The lines ``storm-py autoscale`` prints for the route's answer ``view``."""
    name = view.get("name", "?")
    if not view.get("enabled"):
        lines = [f"the autoscaler is off for {name} (topology.autoscale.enabled: false)"]
    else:
        lines = [f"the autoscaler of {name}: target capacity {_num(view.get('targetCapacity'))}, cooldown "
                 f"{_num(view.get('cooldownSecs'))}s, period {_num(view.get('periodSecs'))}s"]
    bolts = view.get("bolts") or {}
    if bolts:
        lines += _table(("bolt", "executors", "tasks", "min", "max"),
                        [(b, str(v.get("executors")), str(v.get("tasks")), str(v.get("min")), str(v.get("max")))
                         for b, v in bolts.items()])
    decisions = view.get("decisions") or []
    lines.append("")
    if decisions:
        lines += _table(("time (UTC)", "component", "from", "to", "reason"),
                        [(_when(d["time"]), d["component"], str(d["from"]), str(d["to"]), d["reason"])
                         for d in decisions])
    else:
        lines.append("no decisions yet")
    diagnoses = view.get("diagnoses") or []
    if diagnoses:
        lines += ["", *_table(("time (UTC)", "component", "diagnosis", "reason"),
                              [(_when(d["time"]), d["component"], d["kind"], d["reason"]) for d in diagnoses])]
    return lines


@click.command("autoscale")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the REST answer (JSON) as it is.")
@config_options
def autoscale(name: str, as_json: bool, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Show what the autoscaler decided for topology NAME (its executor changes, with their reasons)."""
    try:
        view = nimbus_client(load_conf(config_file, overrides)).request(
            "GET", f"/topology/{quote(name, safe='')}/autoscale")
    except StormPyError as err:
        raise command_error(err, config_file) from err
    if as_json:
        click.echo(json.dumps(view, indent=2, sort_keys=True))
        return
    for line in render(view):
        click.echo(line)
