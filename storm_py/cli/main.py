"""The ``storm-py`` root command: Storm's ``storm`` verbs as click subcommands."""

from __future__ import annotations

import logging
import sys

import click

import storm_py
from storm_py import build
from storm_py.cli.admin import admin
from storm_py.cli.autoscale import autoscale
from storm_py.cli.blobstore import blobstore
from storm_py.cli.cluster_info import get_errors, heartbeats, localconfvalue, remoteconfvalue
from storm_py.cli.credentials import upload_credentials
from storm_py.cli.daemons import dev_cluster, dev_zookeeper, nimbus, supervisor, ui, worker
from storm_py.cli.drpc import drpc, drpc_client
from storm_py.cli.flux import flux
from storm_py.cli.kafka import dev_kafka
from storm_py.cli.local import local
from storm_py.cli.logs import logs
from storm_py.cli.monitor import monitor, set_log_level
from storm_py.cli.node import kill_workers, node_health_check
from storm_py.cli.profile import profile
from storm_py.cli.redis import dev_redis
from storm_py.cli.shell import shell
from storm_py.cli.spark import spark_job
from storm_py.cli.streamparse import streamparse
from storm_py.cli.topology import activate, deactivate, jar, kill, list_topologies, rebalance, submit
from storm_py.cli.users import users


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--log-level", default="WARNING", show_default=True,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False))
def cli(log_level: str) -> None:
    """storm_py: Apache Storm's stream processing, natively in Python."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@cli.command("version")
def version() -> None:
    """Print the storm_py version and which build runs (pure Python, or the hot modules compiled)."""
    click.echo(f"storm_py {storm_py.__version__} (Python {sys.version.split()[0]}; {build.describe()})")
    for line in build.report():
        click.echo(line)


cli.add_command(local)
for _command in (nimbus, supervisor, ui, worker, dev_zookeeper, dev_cluster, monitor, set_log_level,
                 submit, jar, kill, activate, deactivate, rebalance, list_topologies, logs, spark_job,
                 dev_kafka, drpc, drpc_client):
    cli.add_command(_command)
cli.add_command(dev_redis)
for _command in (localconfvalue, remoteconfvalue, get_errors, heartbeats, node_health_check, kill_workers,
                 blobstore, shell, admin, profile):
    cli.add_command(_command)
cli.add_command(streamparse)
cli.add_command(upload_credentials)
cli.add_command(flux)
cli.add_command(users)
cli.add_command(autoscale)


_NO_ARGS: tuple[type[Exception], ...] = tuple(
    c for c in (getattr(click.exceptions, "NoArgsIsHelpError", None),) if isinstance(c, type)
)


def main() -> None:
    """Entry point of the ``storm-py`` script: every failure is one line on stderr and a non-zero exit."""
    try:
        rv = cli.main(prog_name="storm-py", standalone_mode=False)
    except click.UsageError as err:
        if isinstance(err, _NO_ARGS) and err.ctx is not None:  # bare `storm-py`: show the commands
            click.echo(err.ctx.get_help())
            sys.exit(err.exit_code)
        hint = f" (see '{err.ctx.command_path} --help')" if err.ctx is not None else ""
        click.echo(f"Error: {err.format_message()}{hint}", err=True)
        sys.exit(err.exit_code)
    except click.ClickException as err:
        click.echo(f"Error: {err.format_message()}", err=True)
        sys.exit(err.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(1)
    sys.exit(rv if isinstance(rv, int) else 0)
