"""The ``storm-py dev-redis`` command: a development Redis server on loopback until interrupted."""

from __future__ import annotations

from pathlib import Path

import click

from storm_py.cli.daemons import serve_dev_service
from storm_py.cli.options import config_options


@click.command("dev-redis")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=0, show_default=True,
              help="Port to listen on (0: a free one).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Loopback address to listen on.")
@click.option("--dir", "data_dir", type=click.Path(file_okay=False), default="dev-redis", show_default=True,
              help="Directory of the server's append-only file and log.")
@config_options
def dev_redis(port: int, host: str, data_dir: str, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Run the development Redis server (state provider "redis") and print its address."""
    from storm_py.dev.redis import RedisServerProcess

    server = RedisServerProcess(Path(data_dir), port or None, host=host, die_with_parent=True)
    serve_dev_service(server, "the Redis server", lambda: server.address, "redis")
