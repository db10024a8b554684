"""``storm-py submit (jar) | kill | activate | deactivate | rebalance | list``: client commands over the REST API."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import click

from storm_py.cli.options import (
    FiniteFloatRange,
    command_error,
    config_options,
    load_conf,
    nimbus_client,
    parse_overrides,
)
from storm_py.errors import StormPyError


def _client(conf: Mapping[str, Any]) -> Any:
    return nimbus_client(conf)


def default_name(filename: str, entry: str) -> str:
    """The name of a topology submitted without ``--name``: the project name of a wheel ``filename``
    (``my_topology-0.1-py3-none-any.whl``: ``my-topology``), else the module of ``entry`` (``MODULE:FUNCTION``;
    ``wordcount.topology:build``: ``wordcount-topology``), as a topology name may hold neither ``.`` nor ``:``."""
    if filename.endswith(".whl"):
        return filename.split("-", 1)[0].replace("_", "-")
    return entry.partition(":")[0].replace(".", "-").replace("_", "-")


@click.command("submit")
@click.argument("package", metavar="WHEEL_OR_DIR", type=click.Path())
@click.argument("entry", metavar="MODULE:FUNCTION")
@click.option("--name", default=None,
              help="Topology name (default: the wheel's project name, else the function's module).")
@click.option("--inactive", is_flag=True, help="Submit deactivated (spouts start on `activate`).")
@click.option("--wheelhouse", default=None, type=click.Path(), metavar="DIR",
              help="Wheels found first when resolving the topology's requirements (uploaded with it).")
@config_options
def submit(
    package: str, entry: str, name: str | None, inactive: bool, wheelhouse: str | None, config_file: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Upload WHEEL_OR_DIR and run MODULE:FUNCTION's topology on the cluster (Storm's `storm jar`)."""
    from storm_py.deps.wheelhouse import with_dependencies
    from storm_py.packaging.code_loader import parse_entry
    from storm_py.packaging.package import TopologyPackage, read_package

    conf = load_conf(config_file, overrides)
    topo_conf = parse_overrides(overrides)
    try:
        parse_entry(entry)
        left_out: list[str] = []
        data, filename = read_package(package, left_out)
        data, wheels = with_dependencies(data, filename, conf, wheelhouse)
        name = name or default_name(filename, entry)
        reply = _client(conf).submit(name, TopologyPackage(data, entry, filename), topo_conf, inactive)
    except StormPyError as err:
        raise command_error(err, config_file) from err
    if left_out:
        click.echo(f"Left out of the package: {', '.join(left_out)}")
    if wheels:
        click.echo(f"Uploaded with its dependencies: {', '.join(wheels)}")
    click.echo(f"Finished submitting topology: {name} (id {reply['id']})")
    _warn_if_short_of_slots(conf, name)


def _warn_if_short_of_slots(conf: Mapping[str, Any], name: str) -> None:
    """Say on stderr when the cluster had fewer free slots than the topology's workers (Storm runs it on what
    fits, or not at all while no slot is free); its scheduling info is also in ``list`` and the UI."""
    try:
        summary = _client(conf).topology(name)
    except StormPyError:
        return  # submitted all the same; `list` tells the rest
    info = summary.get("schedulerInfo")
    if info:
        click.echo(f"Warning: topology {name} asked for {summary.get('requestedWorkers')} workers but the cluster "
                   f"had fewer free slots: {info}", err=True)


#: Storm users type ``storm jar``: the same command under that name.
jar = click.Command(
    "jar",
    callback=submit.callback,
    params=submit.params,
    help="Same as `submit` (Storm's `storm jar`): upload WHEEL_OR_DIR and run MODULE:FUNCTION's topology.",
)


@click.command("kill")
@click.argument("name")
@click.option("-w", "--wait", "wait", type=FiniteFloatRange(min=0), default=None,
              help="Seconds to wait after deactivating before removing (default: its message timeout).")
@config_options
def kill(name: str, wait: float | None, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Kill topology NAME."""
    try:
        _client(load_conf(config_file, overrides)).kill(name, wait)
    except StormPyError as err:
        raise command_error(err, config_file) from err
    click.echo(f"Killed topology: {name}")


@click.command("activate")
@click.argument("name")
@config_options
def activate(name: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Activate topology NAME's spouts."""
    try:
        _client(load_conf(config_file, overrides)).activate(name)
    except StormPyError as err:
        raise command_error(err, config_file) from err
    click.echo(f"Activated topology: {name}")


@click.command("deactivate")
@click.argument("name")
@config_options
def deactivate(name: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Deactivate topology NAME's spouts."""
    try:
        _client(load_conf(config_file, overrides)).deactivate(name)
    except StormPyError as err:
        raise command_error(err, config_file) from err
    click.echo(f"Deactivated topology: {name}")


def _executor_counts(values: tuple[str, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        comp, sep, n = v.rpartition("=")
        if not sep or not comp or not n.strip().isdigit():
            raise click.UsageError(f"-e takes COMPONENT=N, got {v!r}")
        out[comp] = int(n)
    return out


def _task_counts(values: tuple[str, ...]) -> dict[str, Any]:
    """``--tasks COMPONENT=N`` pairs; a count that is not an integer is passed on as given, and nimbus refuses it
    naming the component."""
    out: dict[str, Any] = {}
    for v in values:
        comp, sep, n = v.rpartition("=")
        if not sep or not comp:
            raise click.UsageError(f"--tasks takes COMPONENT=N, got {v!r}")
        text = n.strip()
        out[comp] = int(text) if text.lstrip("-").isdigit() else text
    return out


def _json_object(text: str, hint: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as err:
        raise click.BadParameter(f"not JSON: {err}", param_hint=hint) from err
    if not isinstance(value, dict):
        raise click.BadParameter(f"must be a JSON object, got {text!r}", param_hint=hint)
    return value


@click.command("rebalance")
@click.argument("name")
@click.option("-w", "--wait", "wait", type=FiniteFloatRange(min=0), default=None,
              help="Seconds to stay deactivated before rescheduling (default: its message timeout).")
@click.option("-n", "--num-workers", type=click.IntRange(min=1), default=None, help="New number of workers.")
@click.option("-e", "--executors", multiple=True, metavar="COMPONENT=N", help="New executor count; repeatable.")
@click.option("--tasks", "tasks", multiple=True, metavar="COMPONENT=N",
              help="New task count; keyed state moves by key group; repeatable.")
@click.option("-t", "--topology-conf", "topology_conf", default=None, metavar="JSON",
              help="Topology conf overrides, a JSON object (workers started from the rebalance on use them).")
@click.option("-r", "--resources", default=None, metavar="JSON",
              help='Component resources, a JSON object such as \'{"split": {"onheap.memory.mb": 512, '
                   '"cpu.pcore.percent": 50}}\' (storm.scheduler: resource_aware).')
@config_options
def rebalance(
    name: str,
    wait: float | None,
    num_workers: int | None,
    executors: tuple[str, ...],
    tasks: tuple[str, ...],
    topology_conf: str | None,
    resources: str | None,
    config_file: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Spread topology NAME anew over the cluster, optionally with new worker/executor/task counts and conf."""
    counts = _executor_counts(executors)
    task_counts = _task_counts(tasks) or None
    conf_overrides = _json_object(topology_conf, "-t / --topology-conf") if topology_conf is not None else None
    resource_overrides = _json_object(resources, "-r / --resources") if resources is not None else None
    try:
        _client(load_conf(config_file, overrides)).rebalance(name, wait, num_workers, counts, conf_overrides,
                                                             resource_overrides, task_counts)
    except StormPyError as err:
        raise command_error(err, config_file) from err
    click.echo(f"Topology {name} is rebalancing")


@click.command("list")
@config_options
def list_topologies(config_file: str | None, overrides: tuple[str, ...]) -> None:
    """List the running topologies (Storm's columns)."""
    try:
        rows = _client(load_conf(config_file, overrides)).topology_summaries()
    except StormPyError as err:
        raise command_error(err, config_file) from err
    if not rows:
        click.echo("No topologies running.")
        return
    for line in topology_table(rows):
        click.echo(line)
    for r in rows:
        if r.get("schedulerInfo"):
            click.echo(f"{r['name']}: {r['schedulerInfo']}")


#: Spaces between two columns of ``list`` (one would make a full-width cell, such as REBALANCING, run into the next).
COLUMN_GAP = "  "


def _workers_cell(row: Mapping[str, Any]) -> str:
    """Workers running, and of how many when fewer run than the topology asks for (``8/100``)."""
    running, wanted = row["workersTotal"], row.get("requestedWorkers")
    return f"{running}/{wanted}" if wanted is not None and running < wanted else str(running)


def topology_table(rows: list[Mapping[str, Any]]) -> list[str]:
    """``storm list``'s table, each column as wide as its widest cell (long names keep the columns aligned)."""
    header = ("Topology_name", "Status", "Num_tasks", "Num_workers", "Uptime_secs")
    cells = [header] + [
        (str(r["name"]), str(r["status"]), str(r["tasksTotal"]), _workers_cell(r), str(r["uptimeSeconds"]))
        for r in rows
    ]
    widths = [max(minimum, *(len(c[i]) for c in cells)) for i, minimum in enumerate((20, 10, 10, 12, 11))]
    lines = [COLUMN_GAP.join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "-" * (sum(widths) + len(COLUMN_GAP) * (len(widths) - 1)))
    return lines


