"""``storm-py admin remove_corrupt_topologies`` and ``storm-py admin creds TOPOLOGY``: the subcommands of Storm's
``storm admin`` that apply here.

Storm's other one does not: ``zk_cli`` opens Storm's ZooKeeper shell (``storm-py heartbeats list|get`` reads the
cluster state instead).  ``creds`` prints the keys of a topology's credentials, never their values.
"""

from __future__ import annotations

from urllib.parse import quote

import click

from storm_py.cli.options import command_error, config_options, load_conf, nimbus_client
from storm_py.errors import StormPyError


@click.group("admin")
def admin() -> None:
    """Cluster administration (Storm's `storm admin`)."""


@admin.command("remove_corrupt_topologies")
@config_options
def remove_corrupt_topologies(config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Kill the topologies whose code no nimbus holds any more."""
    try:
        reply = nimbus_client(load_conf(config_file, overrides)).request("POST", "/admin/removeCorruptTopologies", {})
    except StormPyError as err:
        raise command_error(err, config_file) from err
    for row in reply["removed"]:
        click.echo(f"Removed corrupt topology {row['name']} ({row['id']}): missing {', '.join(row['missing'])}")
    if not reply["removed"]:
        click.echo("No corrupt topologies.")


@admin.command("creds")
@click.argument("topologies", metavar="TOPOLOGY...", nargs=-1, required=True)
@config_options
def creds(topologies: tuple[str, ...], config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Print the keys of each TOPOLOGY's credentials (id or name) under its id, as Storm does; never the values."""
    client = nimbus_client(load_conf(config_file, overrides))
    for topology in topologies:
        try:
            reply = client.request("GET", f"/topology/{quote(topology, safe='')}/credentials")
        except StormPyError as err:
            raise command_error(err, config_file) from err
        click.echo(f"{reply['id']}:")
        for key in reply["keys"]:
            click.echo(f"\t{key}")
