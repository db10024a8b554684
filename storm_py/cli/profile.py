"""``storm-py profile NAME [--component C | --worker HOST:PORT] --stack | --cpu SECS | --memory``: profile a running
topology's workers through nimbus's profiling routes, wait for the results and say where they are.

Without ``--component`` or ``--worker`` every worker of the topology is profiled.  Each result is printed as
``host:port action tool file size url`` once its supervisor has written it; ``--download DIR`` also saves it
there (through the supervisor's log viewer, with the cluster's token).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from storm_py.cli.options import command_error, config_options, load_conf, nimbus_client
from storm_py.client import LogViewerClient, NimbusClient
from storm_py.clock import SYSTEM_CLOCK, Deadline
from storm_py.errors import StormPyError

#: Seconds to wait for a result beyond the profile's own length.
RESULT_GRACE_SECS = 120.0
POLL_SECS = 0.5


def target_workers(client: NimbusClient, tid: str, component: str | None, worker: str | None) -> list[str]:
    """The ``host:port`` of the workers to profile."""
    if worker is not None:
        return [worker]
    if component is not None:
        page = client.request("GET", f"/topology/{quote(tid, safe='')}/component/{quote(component, safe='')}")
        found = sorted({f"{row['host']}:{row['port']}" for row in page.get("executorStats", [])
                        if row.get("host") and row.get("port")})
        if not found:
            raise StormPyError(f"no executor of component {component!r} has reported from a worker yet; try again "
                               "in a few seconds", component=component)
        return found
    rows = client.request("GET", f"/topology-workers/{quote(tid, safe='')}")["hostPortList"]
    found = sorted({f"{row['host']}:{row['port']}" for row in rows})
    if not found:
        raise StormPyError(f"topology {tid} has no workers assigned yet", topology=tid)
    return found


def start_action(client: NimbusClient, tid: str, where: str, action: str, seconds: int) -> dict[str, Any]:
    """Start one action on worker ``where`` (``host:port``); nimbus's reply."""
    base = f"/topology/{quote(tid, safe='')}/profiling"
    hp = quote(where, safe=":")
    if action == "stack":
        path = f"{base}/dumpjstack/{hp}"
    elif action == "memory":
        path = f"{base}/dumpheap/{hp}"
    else:
        path = f"{base}/start/{hp}/{max(1, seconds // 60)}?seconds={seconds}"
    return dict(client.request("POST", path))


def wait_result(client: NimbusClient, tid: str, where: str, file: str, timeout: float) -> dict[str, Any]:
    """The result ``file`` of worker ``where`` once it is listed."""
    deadline = Deadline(timeout, SYSTEM_CLOCK)
    path = f"/topology/{quote(tid, safe='')}/profiling/dumps/{quote(where, safe=':')}"
    while True:
        for row in client.request("GET", path)["dumps"]:
            if row.get("file") == file:
                return dict(row)
        if deadline.expired():
            raise StormPyError(f"no result {file} from worker {where} after {timeout:.0f} s (see its worker.log)",
                               worker=where, file=file)
        SYSTEM_CLOCK.sleep(POLL_SECS)


def download(conf: Mapping[str, Any], row: Mapping[str, Any], into: Path) -> Path:
    """Save result ``row`` (its ``url`` names the log viewer) under ``into``."""
    viewer = LogViewerClient(str(row["url"]).split("/api/v1/", 1)[0], conf=conf)
    into.mkdir(parents=True, exist_ok=True)
    target = into / str(row["file"]).replace("/", "-")
    target.write_bytes(viewer.download(str(row["file"])))
    return target


@click.command("profile")
@click.argument("name")
@click.option("--component", default=None, help="Profile the workers running this component's executors.")
@click.option("--worker", default=None, metavar="HOST:PORT", help="Profile this worker only.")
@click.option("--stack", "action", flag_value="stack", help="A stack dump of every thread.")
@click.option("--cpu", type=click.IntRange(1, 3600), default=None, metavar="SECS",
              help="A CPU profile over SECS seconds (a flame graph SVG, or a speedscope JSON).")
@click.option("--memory", "action", flag_value="memory", help="A memory snapshot (top allocating lines).")
@click.option("--download", "into", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Save the results into this directory.")
@config_options
def profile(name: str, component: str | None, worker: str | None, action: str | None, cpu: int | None,
            into: Path | None, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Profile the workers of topology NAME and print where the results are."""
    if component is not None and worker is not None:
        raise click.UsageError("give --component or --worker, not both")
    if (action is not None) == (cpu is not None):
        raise click.UsageError("give exactly one of --stack, --cpu SECS, --memory")
    what = action or "cpu"
    seconds = cpu or 1
    conf = load_conf(config_file, overrides)
    try:
        client = nimbus_client(conf)
        tid = client.topology_id(name)
        started = [start_action(client, tid, where, what, seconds)
                   for where in target_workers(client, tid, component, worker)]
        for reply in started:
            click.echo(f"{reply['id']}: {what} by {reply['tool']} started -> {reply['file']}")
        for reply in started:
            secs = float(reply.get("seconds") or seconds)
            row = wait_result(client, tid, str(reply["id"]), str(reply["file"]), secs + RESULT_GRACE_SECS)
            click.echo(f"{reply['id']} {what} {reply['tool']} {row['file']} {row['size']} {row['url']}")
            if into is not None:
                click.echo(f"saved {download(conf, row, into)}")
    except StormPyError as err:
        raise command_error(err, config_file) from err
