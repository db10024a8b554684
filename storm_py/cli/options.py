"""Options every command accepts after its name: ``--config FILE`` and ``-c key=value``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from storm_py.config import read_storm_config
from storm_py.errors import StormPyError

F = TypeVar("F", bound=Callable[..., Any])


def config_options(fn: F) -> F:
    """Add ``--config`` and ``-c/--conf`` to a command."""
    fn = click.option(
        "-c", "--conf", "overrides", multiple=True, metavar="KEY=VALUE",
        help="Override a config key (value parsed as YAML); repeatable.",
    )(fn)
    fn = click.option(
        "--config", "config_file", type=click.Path(dir_okay=False), default=None,
        help="Config file (default: conf/storm.yaml if present).",
    )(fn)
    return fn


def load_conf(config_file: str | None, overrides: tuple[str, ...]) -> dict[str, Any]:
    """Defaults < config file < overrides; a bad file or override is a one-line usage error."""
    try:
        return read_storm_config(config_file, overrides)
    except StormPyError as err:
        raise click.UsageError(err.message) from err


def parse_overrides(overrides: tuple[str, ...]) -> dict[str, Any]:
    """Only the ``-c`` overrides as a dict (they also land in the topology conf)."""
    from storm_py.config import parse_override

    out: dict[str, Any] = {}
    for o in overrides:
        try:
            k, v = parse_override(o)
        except StormPyError as err:
            raise click.UsageError(err.message) from err
        out[k] = v
    return out
