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

from storm_py.cli.options import FiniteFloatRange, command_error, config_options, load_conf, nimbus_client
from storm_py.errors import StormPyError

#: the columns, the first three text (left-aligned), the rest numbers (right-aligned)
COLUMNS = ("topology", "component", "stream", "executors", "{item}", "time-diff ms", "{item}/s")
#: the least width of a number column: counts and rates of up to ten characters keep every row straight
NUMBER_WIDTH = 10
_TEXT_COLUMNS = 3


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


def throughput_cells(name: str, component: str | None, stream: str, prev: Reading, cur: Reading) -> list[str]:
    """One row's cells: the count's increase over the interval and its rate."""
    diff_ms = max(0.0, (cur.at - prev.at) * 1000.0)
    delta = max(0, cur.count - prev.count)
    rate = delta / (diff_ms / 1000.0) if diff_ms > 0 else 0.0
    return [name, component or "(spouts)", stream, str(cur.executors), str(delta), f"{diff_ms:.0f}", f"{rate:.1f}"]


class MonitorTable:
    """The columns of one ``monitor`` run, their widths fixed before the first row (rows come one by one): each
    text column as wide as its header or its one value, each number column at least :data:`NUMBER_WIDTH`."""

    def __init__(self, name: str, component: str | None, stream: str, item: str) -> None:
        self.headers = [c.format(item=item) for c in COLUMNS]
        texts = [name, component or "(spouts)", stream]
        self.widths = [max(len(h), len(t)) for h, t in zip(self.headers, texts, strict=False)]
        self.widths += [max(len(h), NUMBER_WIDTH) for h in self.headers[_TEXT_COLUMNS:]]

    def line(self, cells: list[str]) -> str:
        """``cells`` in their columns, two spaces apart, text left and numbers right."""
        parts = [c.ljust(w) if i < _TEXT_COLUMNS else c.rjust(w)
                 for i, (c, w) in enumerate(zip(cells, self.widths, strict=True))]
        return "  ".join(parts).rstrip()

    def header(self) -> str:
        """The header line."""
        return self.line(self.headers)

    def row(self, name: str, component: str | None, stream: str, prev: Reading, cur: Reading) -> str:
        """The printed row of one interval."""
        return self.line(throughput_cells(name, component, stream, prev, cur))


@click.command("monitor")
@click.argument("name")
@click.option("-m", "--component", default=None, help="Component to watch (default: all spouts).")
@click.option("-i", "--interval", default=4.0, show_default=True, type=FiniteFloatRange(min=0.1),
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
    from storm_py.clock import SYSTEM_CLOCK

    conf = load_conf(config_file, overrides)
    client = nimbus_client(conf)
    clock = SYSTEM_CLOCK

    def poll() -> Reading:
        page = client.topology(name) if component is None else client.component(name, component)
        return reading(page, component, stream, item, clock.now())

    try:
        prev = poll()
        table = MonitorTable(name, component, stream, item)
        click.echo(table.header())
        printed = 0
        while rows == 0 or printed < rows:
            clock.sleep(interval)
            cur = poll()
            click.echo(table.row(name, component, stream, prev, cur))
            prev = cur
            printed += 1
    except StormPyError as err:
        raise command_error(err, config_file) from err
    except KeyboardInterrupt:
        pass


def parse_level_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``LOGGER=LEVEL[:TIMEOUT]`` (Storm's ``-l``) as a logger name and its ``namedLoggerLevels`` entry."""
    from storm_py.worker.log_levels import level_number

    name, sep, rest = spec.partition("=")
    level, _, timeout = rest.partition(":")
    if not sep or not name or not level:
        raise click.BadParameter(f"{spec!r} is not LOGGER=LEVEL[:TIMEOUT] (e.g. ROOT=DEBUG:30)")
    if level_number(level) is None:
        raise click.BadParameter(f"{level!r} in {spec!r} is not a log level (TRACE, DEBUG, INFO, WARN, ERROR ...)")
    try:
        secs = int(timeout) if timeout else 0
    except ValueError:
        raise click.BadParameter(f"timeout {timeout!r} in {spec!r} is not a whole number of seconds") from None
    if secs < 0:
        raise click.BadParameter(f"timeout in {spec!r} must be >= 0")
    return name, {"target_level": level.upper(), "timeout": secs}


@click.command("set_log_level")
@click.argument("name")
@click.option("-l", "levels", multiple=True, metavar="LOGGER=LEVEL[:TIMEOUT]",
              help="Set LOGGER (ROOT: the root logger) to LEVEL, back after TIMEOUT seconds; repeatable.")
@click.option("-r", "resets", multiple=True, metavar="LOGGER", help="Put LOGGER back to its level; repeatable.")
@config_options
def set_log_level(
    name: str, levels: tuple[str, ...], resets: tuple[str, ...], config_file: str | None, overrides: tuple[str, ...]
) -> None:
    """Change log levels in topology NAME's workers (Storm's `storm set_log_level`)."""
    from urllib.parse import quote

    if not levels and not resets:
        raise click.UsageError("give -l LOGGER=LEVEL[:TIMEOUT] or -r LOGGER")
    named: dict[str, Any] = dict(parse_level_spec(spec) for spec in levels)
    for logger in resets:
        named[logger] = {"target_level": None}
    conf = load_conf(config_file, overrides)
    try:
        client = nimbus_client(conf)
        tid = client.topology_id(name)
        client.request("POST", f"/topology/{quote(tid, safe='')}/logconfig", {"namedLoggerLevels": named})
    except StormPyError as err:
        raise command_error(err, config_file) from err
    for logger, entry in named.items():
        if entry["target_level"] is None:
            click.echo(f"Reset log level of {logger} in topology {name}")
        else:
            after = f" for {entry['timeout']}s" if entry["timeout"] else ""
            click.echo(f"Set log level of {logger} to {entry['target_level']}{after} in topology {name}")
