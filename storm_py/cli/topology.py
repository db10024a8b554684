"""``storm-py submit | kill | activate | deactivate | rebalance | list | logs``: client commands over the REST API."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from storm_py.cli.options import config_options, load_conf, parse_overrides
from storm_py.errors import NotAliveException, StormPyError

#: Worker files ``logs`` shows, in this order.
LOG_FILES = ("worker.log", "worker.log.out", "worker.log.err")
FOLLOW_POLL_SECS = 0.5


def _client(conf: Mapping[str, Any]) -> Any:
    from storm_py.client import NimbusClient

    return NimbusClient(conf)


def _default_name(entry: str) -> str:
    return entry.partition(":")[0].rsplit(".", 1)[-1].replace("_", "-")


@click.command("submit")
@click.argument("package", metavar="WHEEL_OR_DIR", type=click.Path())
@click.argument("entry", metavar="MODULE:FUNCTION")
@click.option("--name", default=None, help="Topology name (default: the function's module).")
@click.option("--inactive", is_flag=True, help="Submit deactivated (spouts start on `activate`).")
@config_options
def submit(
    package: str, entry: str, name: str | None, inactive: bool, config_file: str | None, overrides: tuple[str, ...]
) -> None:
    """Upload WHEEL_OR_DIR and run MODULE:FUNCTION's topology on the cluster (Storm's `storm jar`)."""
    from storm_py.daemons.code_loader import parse_entry
    from storm_py.daemons.package import TopologyPackage, read_package

    conf = load_conf(config_file, overrides)
    topo_conf = parse_overrides(overrides)
    try:
        parse_entry(entry)
        data, filename = read_package(package)
        name = name or _default_name(entry)
        reply = _client(conf).submit(name, TopologyPackage(data, entry, filename), topo_conf, inactive)
    except StormPyError as err:
        raise click.ClickException(err.message) from err
    click.echo(f"Finished submitting topology: {name} (id {reply['id']})")


@click.command("kill")
@click.argument("name")
@click.option("-w", "--wait", "wait", type=click.FloatRange(min=0), default=None,
              help="Seconds to wait after deactivating before removing (default: its message timeout).")
@config_options
def kill(name: str, wait: float | None, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Kill topology NAME."""
    try:
        _client(load_conf(config_file, overrides)).kill(name, wait)
    except StormPyError as err:
        raise click.ClickException(err.message) from err
    click.echo(f"Killed topology: {name}")


@click.command("activate")
@click.argument("name")
@config_options
def activate(name: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Activate topology NAME's spouts."""
    try:
        _client(load_conf(config_file, overrides)).activate(name)
    except StormPyError as err:
        raise click.ClickException(err.message) from err
    click.echo(f"Activated topology: {name}")


@click.command("deactivate")
@click.argument("name")
@config_options
def deactivate(name: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Deactivate topology NAME's spouts."""
    try:
        _client(load_conf(config_file, overrides)).deactivate(name)
    except StormPyError as err:
        raise click.ClickException(err.message) from err
    click.echo(f"Deactivated topology: {name}")


def _executor_counts(values: tuple[str, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        comp, sep, n = v.rpartition("=")
        if not sep or not comp or not n.strip().isdigit():
            raise click.UsageError(f"-e takes COMPONENT=N, got {v!r}")
        out[comp] = int(n)
    return out


@click.command("rebalance")
@click.argument("name")
@click.option("-w", "--wait", "wait", type=click.FloatRange(min=0), default=None,
              help="Seconds to stay deactivated before rescheduling (default: its message timeout).")
@click.option("-n", "--num-workers", type=click.IntRange(min=1), default=None, help="New number of workers.")
@click.option("-e", "--executors", multiple=True, metavar="COMPONENT=N", help="New executor count; repeatable.")
@config_options
def rebalance(
    name: str,
    wait: float | None,
    num_workers: int | None,
    executors: tuple[str, ...],
    config_file: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Spread topology NAME anew over the cluster, optionally with new worker/executor counts."""
    counts = _executor_counts(executors)
    try:
        _client(load_conf(config_file, overrides)).rebalance(name, wait, num_workers, counts)
    except StormPyError as err:
        raise click.ClickException(err.message) from err
    click.echo(f"Topology {name} is rebalancing")


@click.command("list")
@config_options
def list_topologies(config_file: str | None, overrides: tuple[str, ...]) -> None:
    """List the running topologies (Storm's columns)."""
    try:
        rows = _client(load_conf(config_file, overrides)).topology_summaries()
    except StormPyError as err:
        raise click.ClickException(err.message) from err
    if not rows:
        click.echo("No topologies running.")
        return
    fmt = "{:<20} {:<10} {:<10} {:<12} {:<10}"
    click.echo(fmt.format("Topology_name", "Status", "Num_tasks", "Num_workers", "Uptime_secs"))
    click.echo("-" * 66)
    for r in rows:
        click.echo(fmt.format(r["name"], r["status"], r["tasksTotal"], r["workersTotal"], r["uptimeSeconds"]))


def _log_dirs(conf: Mapping[str, Any], name: str) -> tuple[str, list[Path]]:
    from storm_py.daemons.local_state import log_dir

    root = log_dir(conf) / "workers-artifacts"
    try:
        tid = _client(conf).topology_id(name)
    except NotAliveException:
        pattern = re.compile(rf"^{re.escape(name)}-\d+-\d+$")
        found = sorted((d for d in root.glob("*") if pattern.match(d.name)), key=lambda d: d.stat().st_mtime)
        if not found:
            raise
        tid = found[-1].name
    dirs = sorted((d for d in (root / tid).glob("*") if d.is_dir()), key=lambda d: d.name)
    return tid, dirs


@click.command("logs")
@click.argument("name")
@click.option("-f", "--follow", is_flag=True, help="Keep printing what the workers write (Ctrl-C stops).")
@config_options
def logs(name: str, follow: bool, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Print the worker logs of topology NAME kept on this machine (storm.log.dir/workers-artifacts)."""
    from storm_py.daemons.local_state import log_dir

    conf = load_conf(config_file, overrides)
    try:
        tid, dirs = _log_dirs(conf, name)
    except StormPyError as err:
        raise click.ClickException(err.message) from err
    if not dirs and not follow:
        raise click.ClickException(f"no worker logs of {name} under {log_dir(conf) / 'workers-artifacts' / tid}")
    offsets: dict[Path, int] = {}
    try:
        while True:
            for d in dirs:
                for fname in LOG_FILES:
                    path = d / fname
                    if not path.is_file():
                        continue
                    start = offsets.get(path, 0)
                    with path.open("rb") as f:
                        f.seek(start)
                        chunk = f.read()
                    if chunk:
                        if start == 0 or not follow:
                            click.echo(f"==> {tid}/{d.name}/{fname} <==")
                        sys.stdout.write(chunk.decode("utf-8", "replace"))
                        sys.stdout.flush()
                        offsets[path] = start + len(chunk)
            if not follow:
                return
            time.sleep(FOLLOW_POLL_SECS)
            root = log_dir(conf) / "workers-artifacts" / tid
            dirs = sorted((p for p in root.glob("*") if p.is_dir()), key=lambda p: p.name)
    except KeyboardInterrupt:
        return
