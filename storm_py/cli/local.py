"""``storm-py local MODULE:FUNCTION``: run a topology in an in-process LocalCluster, printing progress."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from storm_py.cli.options import FiniteFloatRange, config_options, load_conf, parse_overrides
from storm_py.clock import SYSTEM_CLOCK
from storm_py.errors import StormPyError


def _totals(summary: dict[str, Any]) -> tuple[int, int, int]:
    emitted = sum(c.get("emitted", 0) for c in summary["spouts"] + summary["bolts"])
    acked = sum(s.get("acked", 0) for s in summary["spouts"])
    failed = sum(s.get("failed", 0) + s.get("timedOut", 0) for s in summary["spouts"])  # timeouts are failures
    return emitted, acked, failed


@click.command("local")
@click.argument("entry", metavar="MODULE:FUNCTION")
@click.option("--ttl", type=FiniteFloatRange(min=0), default=20.0, show_default=True,
              help="Seconds to run before killing the topology.")
@click.option("--name", default=None, help="Topology name (default: the function's module).")
@config_options
def local(entry: str, ttl: float, name: str | None, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Run MODULE:FUNCTION's topology in-process for --ttl seconds."""
    from storm_py.local import LocalCluster
    from storm_py.multilang.process import show_component_logs
    from storm_py.packaging.code_loader import load_topology

    show_component_logs()
    conf = load_conf(config_file, overrides)
    topo_conf = {k: v for k, v in conf.items() if k.startswith("topology.")}
    topo_conf.update(parse_overrides(overrides))
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        topology = load_topology(entry, topo_conf)
    except StormPyError as err:
        raise click.ClickException(err.message) from err
    name = name or entry.partition(":")[0].rsplit(".", 1)[-1].replace("_", "-")
    with LocalCluster(daemon_conf=conf) as cluster:
        try:
            cluster.submit_topology(name, topo_conf, topology)
        except StormPyError as err:
            raise click.ClickException(err.message) from err
        click.echo(f"running {name} in-process for {ttl:g}s")
        clock = SYSTEM_CLOCK
        start = clock.now()
        last = (0, 0, 0)
        last_t = start
        while clock.now() - start < ttl:
            clock.sleep(min(1.0, max(0.0, ttl - (clock.now() - start))))
            summary = cluster.get_topology_summary(name)
            now = clock.now()
            cur = _totals(summary)
            dt = max(now - last_t, 1e-9)
            click.echo(
                f"[{now - start:5.1f}s] emitted {cur[0]:>10,} ({(cur[0] - last[0]) / dt:>10,.0f}/s)  "
                f"acked {cur[1]:>10,} ({(cur[1] - last[1]) / dt:>9,.0f}/s)  failed {cur[2]:,}"
            )
            last, last_t = cur, now
        summary = cluster.get_topology_summary(name)
        for comp in summary["spouts"] + summary["bolts"]:
            if comp.get("lastError"):
                click.echo(f"last error of {comp.get('spoutId') or comp.get('boltId')}: "
                           f"{comp['lastError'].strip().splitlines()[-1]}")
        cluster.kill_topology(name, 0)
    emitted, acked, failed = last
    click.echo(f"done: emitted {emitted:,}, acked {acked:,}, failed {failed:,}")
