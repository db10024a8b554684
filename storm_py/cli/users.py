"""``storm-py users add|list|rotate|remove``: the users of a shared cluster (each needs an admin's token).

``add`` and ``rotate`` print the user's new token once, on stdout, alone on its line (nimbus keeps only its hash):
hand it to the user, whose client config (a ``storm.yaml``) names it as ``nimbus.auth.token``.  ``list`` prints
names and roles, never tokens.
"""

from __future__ import annotations

from urllib.parse import quote

import click

from storm_py.cli.options import command_error, config_options, load_conf, nimbus_client
from storm_py.cluster_state.users import ROLES, USER
from storm_py.errors import StormPyError


@click.group("users")
def users() -> None:
    """The users of a shared cluster: their tokens and roles."""


@users.command("add")
@click.argument("name")
@click.option("--role", type=click.Choice(ROLES), default=USER, show_default=True,
              help="admin: every right; user: submits and runs its topologies; readonly: reads everything")
@config_options
def add(name: str, role: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Create user NAME and print its token (once: only its hash is kept)."""
    try:
        reply = nimbus_client(load_conf(config_file, overrides)).request("POST", "/users", {"name": name, "role": role})
    except StormPyError as err:
        raise command_error(err, config_file) from err
    click.echo(reply["token"])
    click.echo(f"Added user {reply['name']} (role {reply['role']}); the line above is its token, shown only now",
               err=True)


@users.command("list")
@config_options
def list_users(config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Print every user and its role."""
    try:
        reply = nimbus_client(load_conf(config_file, overrides)).request("GET", "/users")
    except StormPyError as err:
        raise command_error(err, config_file) from err
    for row in reply["users"]:
        click.echo(f"{row['name']}\t{row['role']}")


@users.command("rotate")
@click.argument("name")
@config_options
def rotate(name: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Give user NAME a new token and print it; the old one is refused from now on."""
    try:
        client = nimbus_client(load_conf(config_file, overrides))
        reply = client.request("POST", f"/users/{quote(name, safe='')}/rotate", {})
    except StormPyError as err:
        raise command_error(err, config_file) from err
    click.echo(reply["token"])
    click.echo(f"Rotated the token of user {reply['name']}; the old one is refused from now on", err=True)


@users.command("remove")
@click.argument("name")
@config_options
def remove(name: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Remove user NAME (its token is refused from now on)."""
    try:
        nimbus_client(load_conf(config_file, overrides)).request("DELETE", f"/users/{quote(name, safe='')}")
    except StormPyError as err:
        raise command_error(err, config_file) from err
    click.echo(f"Removed user {name}")
