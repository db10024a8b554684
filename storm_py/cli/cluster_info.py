"""``storm-py localconfvalue | remoteconfvalue | get-errors | heartbeats``: reading a cluster's settings and state.

``localconfvalue KEY`` prints the value this machine's configuration gives KEY (defaults < ``--config`` file
< ``-c``); ``remoteconfvalue KEY`` the value the leading nimbus runs with.  Both print ``KEY: VALUE`` as Storm
does, values in JSON.  ``get-errors NAME`` prints each component's last error as JSON.  ``heartbeats list PATH``
and ``heartbeats get PATH`` read the cluster state (paths relative to ``storm.zookeeper.root``, such as
``/workerbeats/<topology-id>``), as Storm's command reads its heartbeat store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import click

from storm_py.cli.options import command_error, config_options, load_conf, nimbus_client
from storm_py.cluster_state import znodes
from storm_py.config.keys import KEYS, setting
from storm_py.errors import StormPyError


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _known_key(key: str, conf: Mapping[str, Any]) -> str:
    if key not in KEYS and key not in conf:
        raise click.BadParameter(f"{key!r} is not a storm_py config key, nor set in the configuration",
                                 param_hint="KEY")
    return key


@click.command("localconfvalue")
@click.argument("key")
@config_options
def localconfvalue(key: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Print KEY's value in this machine's configuration."""
    conf = load_conf(config_file, overrides)
    click.echo(f"{_known_key(key, conf)}: {_show(conf.get(key))}")


@click.command("remoteconfvalue")
@click.argument("key")
@config_options
def remoteconfvalue(key: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Print KEY's value in the leading nimbus's configuration."""
    try:
        remote = nimbus_client(load_conf(config_file, overrides)).request("GET", "/cluster/configuration")
    except StormPyError as err:
        raise command_error(err, config_file) from err
    _known_key(key, remote)
    if key not in remote:
        raise click.ClickException(f"nimbus does not show {key!r} (a secret, or not set)")
    click.echo(f"{key}: {_show(remote[key])}")


def component_errors(page: Mapping[str, Any]) -> dict[str, str]:
    """Each spout's and bolt's last error on a topology page (components without one left out)."""
    out: dict[str, str] = {}
    for kind, id_field in (("spouts", "spoutId"), ("bolts", "boltId")):
        for row in page.get(kind) or []:
            if row.get("lastError"):
                out[str(row[id_field])] = str(row["lastError"])
    return out


@click.command("get-errors")
@click.argument("name")
@config_options
def get_errors(name: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Print the last error of each component of topology NAME, as JSON."""
    try:
        page = nimbus_client(load_conf(config_file, overrides)).topology(name)
    except StormPyError as err:
        raise command_error(err, config_file) from err
    click.echo(json.dumps({"Topology Name": name, "Comp-Errors": component_errors(page)}, sort_keys=True))


def _state_path(path: str) -> str:
    parts = [p for p in path.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise click.BadParameter(f"{path!r} must not contain '.' or '..'", param_hint="PATH")
    return "/".join(parts)


@click.group("heartbeats")
def heartbeats() -> None:
    """Read heartbeats and other records of the cluster state (paths under storm.zookeeper.root)."""


def _open(config_file: str | None, overrides: tuple[str, ...]) -> tuple[Any, str]:
    from storm_py.node.session import open_storage

    conf = load_conf(config_file, overrides)
    root = str(setting(conf, "storm.zookeeper.root")).rstrip("/")
    try:
        return open_storage(conf, wait_secs=0), root
    except StormPyError as err:
        raise command_error(err, config_file) from err


@heartbeats.command("list")
@click.argument("path", default=znodes.SEPARATOR + znodes.WORKERBEATS)
@config_options
def heartbeats_list(path: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """List the children of PATH (by default the worker heartbeats' root: the topologies with worker heartbeats)."""
    rel = _state_path(path)
    storage, root = _open(config_file, overrides)
    try:
        full = f"{root}/{rel}" if rel else root or "/"
        if not storage.exists(full):
            raise click.ClickException(f"no such path {path!r} in the cluster state")
        for name in sorted(storage.children(full)):
            click.echo(name)
    except StormPyError as err:
        raise command_error(err, config_file) from err
    finally:
        storage.close()


@heartbeats.command("get")
@click.argument("path")
@config_options
def heartbeats_get(path: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Print the record at PATH (JSON), e.g. a worker's heartbeat (the heartbeats' root, topology id, node-port)."""
    rel = _state_path(path)
    storage, root = _open(config_file, overrides)
    try:
        data = storage.get(f"{root}/{rel}" if rel else root)
        if data is None:
            raise click.ClickException(f"no record at {path!r} in the cluster state")
    except StormPyError as err:
        raise command_error(err, config_file) from err
    finally:
        storage.close()
    try:
        click.echo(json.dumps(json.loads(data.decode("utf-8")), sort_keys=True, indent=2))
    except (UnicodeDecodeError, ValueError):
        click.echo(data.decode("utf-8", "replace"))


