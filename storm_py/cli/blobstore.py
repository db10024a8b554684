"""``storm-py blobstore create | update | cat | delete | list | set-acl``: the users' blobs kept by nimbus.

Storm's subcommands and flags: contents come from ``-f FILE`` or standard input, ``cat`` writes to ``-f FILE``
or standard output, ACLs are ``[uo]:[user]:[r-][w-][a-]`` separated by commas.  A topology names the blobs its
workers need in ``topology.blobstore.map`` (``{key: {localname: name}}``); supervisors keep each worker's copy
current as blobs are updated.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import click

from storm_py.cli.options import command_error, config_options, load_conf, nimbus_client
from storm_py.errors import StormPyError


def _client(config_file: str | None, overrides: tuple[str, ...]) -> Any:

    return nimbus_client(load_conf(config_file, overrides))


def _path(key: str) -> str:
    from storm_py.nimbus.userblobs import check_key

    try:
        check_key(key)
    except StormPyError as err:
        raise click.BadParameter(err.message, param_hint="KEY") from err
    return f"/blobs/{quote(key, safe='')}"


def _acl(text: str, hint: str) -> list[str]:
    from storm_py.nimbus.userblobs import parse_acl

    try:
        return parse_acl(text)
    except StormPyError as err:
        raise click.BadParameter(err.message, param_hint=hint) from err


def _contents(file: str | None) -> bytes:
    if file is None:
        return sys.stdin.buffer.read()
    try:
        return Path(file).read_bytes()
    except OSError as err:
        raise click.BadParameter(f"cannot read {file}: {err.strerror}", param_hint="'-f' / '--file'") from err


def _call(config_file: str | None, overrides: tuple[str, ...], method: str, path: str, **kw: Any) -> Any:
    try:
        return _client(config_file, overrides).request(method, path, **kw)
    except StormPyError as err:
        raise command_error(err, config_file) from err


@click.group("blobstore")
def blobstore() -> None:
    """Create, update, read, delete and list the users' blobs (Storm's `storm blobstore`)."""


@blobstore.command("create")
@click.argument("key")
@click.option("-f", "--file", "file", type=click.Path(dir_okay=False), default=None,
              help="Read the contents from FILE (default: standard input).")
@click.option("-a", "--acl", default="", help="ACL: [uo]:[user]:[r-][w-][a-], comma separated (default o::rwa).")
@click.option("--replication-factor", type=click.IntRange(min=1), default=None,
              help="Accepted for Storm's sake; every nimbus keeps a copy.")
@config_options
def create(key: str, file: str | None, acl: str, replication_factor: int | None, config_file: str | None,
           overrides: tuple[str, ...]) -> None:
    """Create blob KEY."""
    query = f"?{urlencode({'acl': ','.join(_acl(acl, '-a / --acl'))})}" if acl else ""
    reply = _call(config_file, overrides, "POST", _path(key) + query, data=_contents(file))
    click.echo(f"Created blob {key} (version {reply['version']}, {reply['size']} bytes)")


@blobstore.command("update")
@click.argument("key")
@click.option("-f", "--file", "file", type=click.Path(dir_okay=False), default=None,
              help="Read the contents from FILE (default: standard input).")
@config_options
def update(key: str, file: str | None, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Replace the contents of blob KEY (a new version reaches the workers that map it)."""
    reply = _call(config_file, overrides, "PUT", _path(key), data=_contents(file))
    click.echo(f"Updated blob {key} (version {reply['version']}, {reply['size']} bytes)")


@blobstore.command("cat")
@click.argument("key")
@click.option("-f", "--file", "file", type=click.Path(dir_okay=False), default=None,
              help="Write the contents to FILE (default: standard output).")
@config_options
def cat(key: str, file: str | None, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Print blob KEY's contents."""
    data: bytes = _call(config_file, overrides, "GET", _path(key), raw=True)
    if file is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        Path(file).write_bytes(data)


@blobstore.command("delete")
@click.argument("key")
@config_options
def delete(key: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Delete blob KEY."""
    _call(config_file, overrides, "DELETE", _path(key))
    click.echo(f"Deleted blob {key}")


@blobstore.command("list")
@click.argument("keys", nargs=-1)
@config_options
def list_blobs(keys: tuple[str, ...], config_file: str | None, overrides: tuple[str, ...]) -> None:
    """List the blobs (or the KEYS named): key, version, size and ACL."""
    query = f"?{urlencode([('key', k) for k in keys])}" if keys else ""
    for blob in _call(config_file, overrides, "GET", "/blobs" + query)["blobs"]:
        click.echo(f"{blob['key']} {blob['version']} {blob['size']} ({','.join(blob['acl'])})")


@blobstore.command("set-acl")
@click.argument("key")
@click.option("-s", "--set", "acl", required=True, help="ACL: [uo]:[user]:[r-][w-][a-], comma separated.")
@config_options
def set_acl(key: str, acl: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Set blob KEY's ACL."""
    entries = _acl(acl, "-s / --set")
    reply = _call(config_file, overrides, "POST", _path(key) + "/acl", payload={"acl": entries})
    click.echo(f"Set the ACL of {key} to {','.join(reply['acl'])}")
