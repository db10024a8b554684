"""``storm-py shell RESOURCESDIR COMMAND [ARGS...]``: Storm's ``storm shell`` for topologies written in other languages.

The directory is packed (as ``submit`` packs one) and uploaded to nimbus's blob store as ``shell-<name>-<id>.zip``;
then COMMAND runs with ARGS followed by the leading nimbus's host, its port and the uploaded package's key, as
Storm appends nimbus's host, port and the uploaded jar's location.  The command submits its topology itself,
naming the package by that key (``"packageBlob"`` in place of ``"package"`` in ``POST /api/v1/uploadTopology``,
a JSON body); it finds the cluster token (from the config or its token file, as every client does) in its
environment as ``STORM_PY_AUTH_TOKEN`` (not among its arguments, which every local user can read).
The exit code is the command's; the uploaded package is deleted once the command ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from urllib.parse import quote

import click

from storm_py.cli.options import command_error, config_options, load_conf, nimbus_client
from storm_py.errors import StormPyError
from storm_py.node.token_file import TOKEN_KEY

#: The environment variable holding the cluster token for COMMAND.
TOKEN_ENV = "STORM_PY_AUTH_TOKEN"


@click.command("shell", context_settings={"ignore_unknown_options": True})
@click.argument("resourcesdir", type=click.Path(file_okay=False))
@click.argument("command")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@config_options
def shell(resourcesdir: str, command: str, args: tuple[str, ...], config_file: str | None,
          overrides: tuple[str, ...]) -> None:
    """Upload RESOURCESDIR, then run COMMAND ARGS... NIMBUS_HOST NIMBUS_PORT PACKAGE_KEY (the token in
    $STORM_PY_AUTH_TOKEN)."""
    from storm_py.packaging.package import read_package

    if not os.path.isdir(resourcesdir):
        raise click.BadParameter(f"{resourcesdir} is not a directory", param_hint="RESOURCESDIR")
    conf = load_conf(config_file, overrides)
    client = nimbus_client(conf)
    name = "".join(c if c.isalnum() or c in "_.-" else "_" for c in os.path.basename(os.path.abspath(resourcesdir)))
    key = f"shell-{name}-{uuid.uuid4().hex[:8]}.zip"
    path = f"/blobs/{quote(key, safe='')}"
    try:
        data, _ = read_package(resourcesdir)
        client.request("POST", path, data=data)
        host, _, port = client.find_leader().rpartition(":")
    except StormPyError as err:
        raise command_error(err, config_file) from err
    try:
        env = {**os.environ, **({TOKEN_ENV: str(conf[TOKEN_KEY])} if conf.get(TOKEN_KEY) else {})}
        code = subprocess.run([command, *args, host, port, key], check=False, env=env).returncode
    except OSError as err:
        raise click.ClickException(f"cannot run {command}: {err.strerror}") from err
    finally:
        try:
            client.request("DELETE", path)
        except StormPyError as err:
            click.echo(f"Warning: could not delete the uploaded package {key}: {err.message}", err=True)
    sys.exit(code)
