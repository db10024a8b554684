"""``storm-py node-health-check | kill_workers``: commands run on a supervisor's machine, about that machine.

``node-health-check`` runs the scripts of ``storm.health.check.dir`` as the supervisor does
(:mod:`storm_py.supervisor.healthcheck`) and exits non-zero when the node is unhealthy.  ``kill_workers`` stops
every worker process recorded under this machine's ``workers-artifacts`` (each one's ``worker.yaml``): SIGTERM,
then SIGKILL after ``supervisor.worker.shutdown.sleep.secs``; a worker is only signalled when its command line
still names its own log file, so a reused pid is left alone.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from storm_py.cli.options import config_options, load_conf
from storm_py.clock import SYSTEM_CLOCK
from storm_py.config.keys import setting
from storm_py.node.local_state import read_json, workers_artifacts_root
from storm_py.supervisor.healthcheck import health_check_dir, run_health_checks


@click.command("node-health-check")
@config_options
def node_health_check(config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Run this node's health-check scripts (storm.health.check.dir); exit 1 when one fails."""
    conf = load_conf(config_file, overrides)
    report = run_health_checks(conf)
    if not report.healthy:
        for reason in report.failures:
            click.echo(f"Health check failed: {reason}", err=True)
        sys.exit(1)
    where = health_check_dir(conf)
    ran = f"{len(report.scripts)} script(s) in {where}" if report.scripts else f"no scripts in {where}"
    click.echo(f"Health check passed ({ran})")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def worker_processes(conf: Mapping[str, Any]) -> list[tuple[int, str]]:
    """``(pid, "<topology-id>:<port>")`` of the worker processes of this machine that still run."""
    root = workers_artifacts_root(conf)
    out: list[tuple[int, str]] = []
    for meta_path in sorted(root.glob("*/*/worker.yaml")):
        meta = read_json(meta_path)
        if not isinstance(meta, dict) or not isinstance(meta.get("pid"), int):
            continue
        pid = int(meta["pid"])
        if pid > 0 and str(meta_path.parent / "worker.log") in _cmdline(pid):
            out.append((pid, f"{meta.get('topology-id')}:{meta.get('port')}"))
    return out


@click.command("kill_workers")
@config_options
def kill_workers(config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Stop every worker running on this machine (its supervisor starts the assigned ones anew)."""
    conf = load_conf(config_file, overrides)
    found = worker_processes(conf)
    for pid, what in found:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        click.echo(f"Stopping worker {what} (pid {pid})")
    grace = float(setting(conf, "supervisor.worker.shutdown.sleep.secs"))
    deadline = SYSTEM_CLOCK.now() + grace
    waiting = [pid for pid, _ in found]
    while waiting and SYSTEM_CLOCK.now() < deadline:
        waiting = [pid for pid in waiting if _cmdline(pid) and not _zombie(pid)]
        if waiting:
            SYSTEM_CLOCK.sleep(0.1)
    for pid in waiting:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if not found:
        click.echo(f"No workers run under {workers_artifacts_root(conf)}")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True
