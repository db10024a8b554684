"""``storm-py admin remove_corrupt_topologies``: the subcommand of Storm's ``storm admin`` that applies here.

Storm's others do not: ``zk_cli`` opens Storm's ZooKeeper shell (``storm-py heartbeats list|get`` reads the
cluster state instead) and ``creds`` prints credentials that storm_py does not keep.
"""

from __future__ import annotations

import click

from storm_py.cli.options import command_error, config_options, load_conf
from storm_py.errors import StormPyError


@click.group("admin")
def admin() -> None:
    """Cluster administration (Storm's `storm admin`)."""


@admin.command("remove_corrupt_topologies")
@config_options
def remove_corrupt_topologies(config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Kill the topologies whose code no nimbus holds any more."""
    from storm_py.client import NimbusClient

    try:
        reply = NimbusClient(load_conf(config_file, overrides)).request("POST", "/admin/removeCorruptTopologies", {})
    except StormPyError as err:
        raise command_error(err, config_file) from err
    for row in reply["removed"]:
        click.echo(f"Removed corrupt topology {row['name']} ({row['id']}): missing {', '.join(row['missing'])}")
    if not reply["removed"]:
        click.echo("No corrupt topologies.")
