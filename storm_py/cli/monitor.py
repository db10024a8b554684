"""``storm-py monitor`` (Storm's ``storm monitor``): a topology's throughput in the terminal, every interval.

The pure part, :func:`throughput_row`, turns two readings of a topology's REST page (counts of the all-time
window and when they were read) into the row printed; the command polls nimbus with the clock and prints rows
until interrupted (or ``--count`` rows).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import click

from storm_py.cli.options import command_error, config_options, load_conf
from storm_py.errors import StormPyError

HEADER = "topology\tcomponent\tstream\texecutors\t{item}\ttime-diff ms\t{item}/s"


@dataclass(frozen=True)
class Reading:
    """One poll: the watched count of a component (or of every spout) and the seconds it was read at."""

    count: int
    executors: int
    at: float


def reading(page: Mapping[str, Any], component: str | None, stream: str, item: str, at: float) -> Reading:
    """The watched count of ``component``'s ``stream`` on a component page, or of all spouts on a topology page."""
    if component is None:
        spouts = page.get("spouts", [])
        return Reading(sum(int(s.get(item, 0)) for s in spouts), sum(int(s.get("executors", 0)) for s in spouts), at)
    rows = [r for r in page.get("outputStats", []) if r.get("stream") == stream]
    return Reading(sum(int(r.get(item, 0)) for r in rows), int(page.get("executors", 0)), at)


def throughput_row(name: str, component: str | None, stream: str, prev: Reading, cur: Reading) -> str:
    """The printed row: the count's increase over the interval and its rate."""
    diff_ms = max(0.0, (cur.at - prev.at) * 1000.0)
    delta = max(0, cur.count - prev.count)
    rate = delta / (diff_ms / 1000.0) if diff_ms > 0 else 0.0
    return f"{name}\t{component or '(spouts)'}\t{stream}\t{cur.executors}\t{delta}\t{diff_ms:.0f}\t{rate:.1f}"


@click.command("monitor")
@click.argument("name")
@click.option("-m", "--component", default=None, help="Component to watch (default: all spouts).")
@click.option("-i", "--interval", default=4.0, show_default=True, type=click.FloatRange(min=0.1),
              help="Seconds between polls.")
@click.option("-s", "--stream", default="default", show_default=True, help="Stream of the component to watch.")
@click.option("-w", "--watch", "item", default="emitted", show_default=True,
              type=click.Choice(["emitted", "transferred"]), help="Which count to watch.")
@click.option("--count", "rows", default=0, type=click.IntRange(min=0), help="Stop after this many rows (0: never).")
@config_options
def monitor(
    name: str, component: str | None, interval: float, stream: str, item: str, rows: int,
    config_file: str | None, overrides: tuple[str, ...],
) -> None:
    """Print topology NAME's throughput every interval (Storm's `storm monitor`)."""
    from storm_py.client import NimbusClient
    from storm_py.clock import SYSTEM_CLOCK

    conf = load_conf(config_file, overrides)
    client = NimbusClient(conf)
    clock = SYSTEM_CLOCK

    def poll() -> Reading:
        page = client.topology(name) if component is None else client.component(name, component)
        return reading(page, component, stream, item, clock.now())

    try:
        prev = poll()
        click.echo(HEADER.format(item=item))
        printed = 0
        while rows == 0 or printed < rows:
            clock.sleep(interval)
            cur = poll()
            click.echo(throughput_row(name, component, stream, prev, cur))
            prev = cur
            printed += 1
    except StormPyError as err:
        raise command_error(err, config_file) from err
    except KeyboardInterrupt:
        pass
