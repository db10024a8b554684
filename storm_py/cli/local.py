"""``storm-py local MODULE:FUNCTION``: run a topology in an in-process LocalCluster, printing progress."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from storm_py.cli.options import FiniteFloatRange, config_options, load_conf, parse_overrides
from storm_py.clock import SYSTEM_CLOCK
from storm_py.errors import StormPyError

#: seconds between two progress lines
REPORT_PERIOD = 1.0

Totals = tuple[int, int, int]


def _totals(summary: dict[str, Any]) -> Totals:
    emitted = sum(c.get("emitted", 0) for c in summary["spouts"] + summary["bolts"])
    acked = sum(s.get("acked", 0) for s in summary["spouts"])
    failed = sum(s.get("failed", 0) + s.get("timedOut", 0) for s in summary["spouts"])  # timeouts are failures
    return emitted, acked, failed


class Progress:
    """The progress lines of a run that started at ``start``: one per report while tuples move, a single
    ``idle`` line once nothing moved since the last report (a finite input all processed, or a source waiting),
    and nothing more until tuples move again."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.last: Totals = (0, 0, 0)
        self.last_at = start
        self.idle = False

    def report(self, now: float, totals: Totals) -> str | None:
        """The line to print for ``totals`` seen at ``now``, or ``None`` while idle."""
        last, dt = self.last, max(now - self.last_at, 1e-9)
        self.last, self.last_at = totals, now
        if totals == last:
            if self.idle:
                return None
            self.idle = True
            return (f"[{now - self.start:5.1f}s] idle: nothing emitted, acked or failed since the last report "
                    f"(emitted {totals[0]:,}, acked {totals[1]:,}, failed {totals[2]:,}); quiet until that changes")
        self.idle = False
        return (
            f"[{now - self.start:5.1f}s] emitted {totals[0]:>10,} ({(totals[0] - last[0]) / dt:>10,.0f}/s)  "
            f"acked {totals[1]:>10,} ({(totals[1] - last[1]) / dt:>9,.0f}/s)  failed {totals[2]:,}"
        )


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
        progress = Progress(clock.now())
        deadline = progress.start + ttl
        while (left := deadline - clock.now()) > 0:
            clock.sleep(min(REPORT_PERIOD, left))
            line = progress.report(clock.now(), _totals(cluster.get_topology_summary(name)))
            if line is not None:
                click.echo(line)
        summary = cluster.get_topology_summary(name)
        for comp in summary["spouts"] + summary["bolts"]:
            if comp.get("lastError"):
                click.echo(f"last error of {comp.get('spoutId') or comp.get('boltId')}: "
                           f"{comp['lastError'].strip().splitlines()[-1]}")
        cluster.kill_topology(name, 0)
    emitted, acked, failed = _totals(summary)
    click.echo(f"done: emitted {emitted:,}, acked {acked:,}, failed {failed:,}")
