"""``storm-py drpc`` (the DRPC server daemon) and ``storm-py drpc-client FUNC ARGS...``."""

from __future__ import annotations

import logging
import sys

import click

from storm_py.cli.options import FiniteFloatRange, config_file_used, config_options, load_conf
from storm_py.config.keys import setting
from storm_py.errors import StormPyError

log = logging.getLogger(__name__)


@click.command("drpc")
@config_options
def drpc(config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Run a DRPC server: drpc.port for clients, drpc.invocations.port for topologies, drpc.http.port for HTTP."""
    from storm_py.cli.daemons import _info_logging, _stop_on_signals, with_daemon_token
    from storm_py.drpc.server import DRPCServer

    conf = with_daemon_token(load_conf(config_file, overrides), config_file_used(config_file))
    _info_logging()
    try:
        server = DRPCServer(conf)
    except StormPyError as err:
        raise click.ClickException(err.message) from err
    with _stop_on_signals() as stop:
        server.start()
        scheme = "https" if conf.get("storm.tls.enabled") else "http"
        http = f"{scheme}://{server.host}:{server.http_port}" if server.http_port is not None else "off"
        click.echo(f"drpc: {server.host}:{server.port} invocations: {server.host}:{server.invocations_port} "
                   f"http: {http}")
        sys.stdout.flush()
        try:
            server.run(stop)
        finally:
            log.info("drpc stopping")
            server.stop()


@click.command("drpc-client")
@click.argument("function")
@click.argument("args", nargs=-1)
@click.option("--timeout", type=FiniteFloatRange(min=0, min_open=True), default=None,
              help="Seconds to wait for each result (default: as long as the server waits).")
@config_options
def drpc_client(function: str, args: tuple[str, ...], timeout: float | None, config_file: str | None,
                overrides: tuple[str, ...]) -> None:
    """Run FUNCTION on each ARG through the DRPC servers of drpc.servers; print each result on its own line."""
    from storm_py.drpc.client import DRPCClient
    from storm_py.drpc.errors import UNREACHABLE, DRPCExecutionException
    from storm_py.drpc.wire import parse_servers
    from storm_py.node.tls import client_context
    from storm_py.node.token_file import read_token

    conf = load_conf(config_file, overrides)
    servers = parse_servers(conf.get("drpc.servers"), int(setting(conf, "drpc.port")))
    if not servers:
        raise click.ClickException("no DRPC server: set drpc.servers in the config (or -c drpc.servers=[HOST])")
    token = read_token(conf, config_file)
    clients = [DRPCClient(h, p, timeout, token, client_context(conf)) for h, p in servers]
    try:
        for arg in args or ("",):
            for i, client in enumerate(clients):
                try:
                    click.echo(client.execute(function, arg))
                    break
                except DRPCExecutionException as err:
                    if err.type != UNREACHABLE or i == len(clients) - 1:
                        raise click.ClickException(err.message) from err
    finally:
        for client in clients:
            client.close()
