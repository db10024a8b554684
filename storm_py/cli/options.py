"""Options every command accepts after its name: ``--config FILE`` and ``-c key=value``."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from storm_py.config import read_storm_config
from storm_py.errors import StormPyError
from storm_py.node.token_file import TOKEN_KEY, read_token

if TYPE_CHECKING:
    from storm_py.client import NimbusClient

F = TypeVar("F", bound=Callable[..., Any])

#: Where commands look for ``storm.yaml`` when ``--config`` is not given (Storm's ``storm`` looks in ``conf/``).
SEARCH_DIRS = ("conf",)


class FiniteFloatRange(click.FloatRange):
    """click's ``FloatRange`` that also refuses ``nan`` and infinities (``-w nan`` must not reach nimbus)."""

    name = "finite float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        converted = super().convert(value, param, ctx)
        if not math.isfinite(converted):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return converted


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


class ConfigFileError(click.ClickException):
    """A config file that cannot be read or holds a bad value: a one-line error naming the file, without the
    usage hint of a bad option (exit code 2, as for a bad option)."""

    exit_code = 2


def load_conf(config_file: str | None, overrides: tuple[str, ...]) -> dict[str, Any]:
    """Defaults < config file < overrides; a bad override is a usage error, a bad file an error naming it.

    A config naming no ``nimbus.auth.token`` gets the token file's (:mod:`storm_py.node.token_file`) when there
    is one: the token a daemon started with that config generated."""
    try:
        conf = read_storm_config(config_file, overrides, SEARCH_DIRS)
    except StormPyError as err:
        given = {o.partition("=")[0].strip() for o in overrides}
        if "path" not in err.fields and ("override" in err.fields or err.fields.get("key") in given):
            raise click.UsageError(err.message) from err
        used = config_file_used(config_file)
        in_file = "" if "path" in err.fields or used is None else f" (in config file {used})"
        raise ConfigFileError(err.message + in_file) from err
    if not conf.get(TOKEN_KEY):
        token = read_token(conf, config_file_used(config_file))
        if token:
            conf[TOKEN_KEY] = token
    return conf


def config_file_used(config_file: str | None) -> str | None:
    """The configuration file :func:`load_conf` reads (None: defaults and ``-c`` only)."""
    if config_file:
        return config_file
    found = (Path(d) / "storm.yaml" for d in SEARCH_DIRS)
    return next((str(p) for p in found if p.is_file()), None)


def nimbus_client(conf: Mapping[str, Any]) -> NimbusClient:
    """A client of the cluster ``conf`` names that says on stderr, at once, when it starts retrying nimbus."""
    from storm_py.client import NimbusClient

    return NimbusClient(conf, on_retry=lambda line: click.echo(line, err=True))


def command_error(err: StormPyError, config_file: str | None) -> click.ClickException:
    """A command's one-line error.  When no nimbus answered it tells "which config?" (no config file was given
    or found: where it looked) from "is the cluster running?" (the config names nimbus, nothing listens there)."""
    message = err.message
    if err.code == "nimbus_unreachable":
        used = config_file_used(config_file)
        if used is None:
            looked = ", ".join(f"{d}/storm.yaml" for d in SEARCH_DIRS)
            message += (f"; used no config file ({looked} not found): name the cluster's config with --config FILE "
                        "(or -c nimbus.seeds=[...])")
        elif err.fields.get("refused"):
            where = err.fields.get("nimbuses") or "its address"
            message += f"; nothing listens at {where}, the nimbus config {used} names: is the cluster running?"
        else:
            message += f"; used config {used}"
    return click.ClickException(message)


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
