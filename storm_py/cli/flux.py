"""``storm-py flux FILE``: run a topology defined in a Flux YAML file, in-process (``--local``, the default) or on
the cluster (``--remote``), or only build and check it (``--dry-run``)."""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import click

from storm_py.cli.local import _totals
from storm_py.cli.options import command_error, config_options, load_conf, parse_overrides
from storm_py.clock import SYSTEM_CLOCK
from storm_py.errors import StormPyError

SPLASH = r"""
  ___ _
 | __| |_  ___ __     storm-py flux
 | _|| | || \ \ /     topologies defined in YAML
 |_| |_|\_,_/_\_\
"""


def _one_line(err: StormPyError) -> click.ClickException:
    return click.ClickException(" ".join(err.message.split()))


@contextlib.contextmanager
def _package_root(package: str | None, file: str, resource: bool) -> Iterator[Path]:
    """The package's folder (a wheel unpacked into a temporary one); without ``--package``, FILE's folder."""
    if package is None:
        yield Path(file).resolve().parent
        return
    path = Path(package)
    if path.is_dir():
        yield path.resolve()
        return
    if not path.is_file() or not zipfile.is_zipfile(path):
        raise click.ClickException(f"--package {package}: no such folder or wheel")
    with tempfile.TemporaryDirectory(prefix="storm-py-flux-") as tmp:
        with zipfile.ZipFile(path) as z:
            z.extractall(tmp)
        yield Path(tmp)


def _shell_dir(root: Path) -> Path:
    return root / "resources" if (root / "resources").is_dir() else root


@contextlib.contextmanager
def _first_on_path(folder: Path) -> Iterator[None]:
    entry = str(folder)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)


def _resolve_config(td: Any, conf: dict[str, Any], overrides: tuple[str, ...]) -> None:
    """Packaged defaults < --config < the file's ``config`` < ``-c``: into the definition's config."""
    from storm_py.config import defaults

    base = defaults()
    from_file = {k: v for k, v in conf.items() if k.startswith("topology.") and base.get(k, object()) != v}
    given = parse_overrides(overrides)
    td.config = {**from_file, **td.config, **given}
    for key in (*from_file, *given):
        td.config_sources.setdefault(key, "the command line")


class _Interrupted(Exception):
    """SIGTERM during a local run."""


def _on_term(signum: int, frame: FrameType | None) -> None:
    raise _Interrupted()


def _run_local(t: Any, conf: dict[str, Any], sleep_ms: int, inactive: bool) -> None:
    from storm_py.local import LocalCluster

    secs = sleep_ms / 1000.0
    previous = signal.signal(signal.SIGTERM, _on_term)
    last = (0, 0, 0)
    try:
        with LocalCluster(daemon_conf=conf) as cluster:
            try:
                cluster.submit_topology(t.name, t.conf, t.topology, inactive=inactive)
            except StormPyError as err:
                raise _one_line(err) from err
            click.echo(f"running {t.name} in-process for {secs:g}s" + (" (inactive)" if inactive else ""))
            start = last_t = SYSTEM_CLOCK.now()
            try:
                while SYSTEM_CLOCK.now() - start < secs:
                    SYSTEM_CLOCK.sleep(min(1.0, max(0.0, secs - (SYSTEM_CLOCK.now() - start))))
                    now = SYSTEM_CLOCK.now()
                    cur = _totals(cluster.get_topology_summary(t.name))
                    dt = max(now - last_t, 1e-9)
                    click.echo(f"[{now - start:5.1f}s] emitted {cur[0]:>10,} ({(cur[0] - last[0]) / dt:>10,.0f}/s)  "
                               f"acked {cur[1]:>10,} ({(cur[1] - last[1]) / dt:>9,.0f}/s)  failed {cur[2]:,}")
                    last, last_t = cur, now
            except (KeyboardInterrupt, _Interrupted):
                click.echo("interrupted")
            summary = cluster.get_topology_summary(t.name)
            last = _totals(summary)
            for comp in summary["spouts"] + summary["bolts"]:
                if comp.get("lastError"):
                    click.echo(f"last error of {comp.get('spoutId') or comp.get('boltId')}: "
                               f"{comp['lastError'].strip().splitlines()[-1]}")
            cluster.kill_topology(t.name, 0)
    finally:
        signal.signal(signal.SIGTERM, previous)
    emitted, acked, failed = last
    click.echo(f"done: emitted {emitted:,}, acked {acked:,}, failed {failed:,}")


def _wheel_requirements(folder: Path) -> None:
    """An unpacked wheel's ``Requires-Dist`` as the folder's ``requirements.txt``, so the folder submitted in its
    place carries the same requirements."""
    if (folder / "requirements.txt").exists():
        return
    found = [line.partition(":")[2].strip() for meta in folder.glob("*.dist-info/METADATA")
             for line in meta.read_text(encoding="utf-8").splitlines() if line.startswith("Requires-Dist:")]
    wanted = [r for r in found if "extra ==" not in r.replace("extra==", "extra ==")]
    if wanted:
        (folder / "requirements.txt").write_text("\n".join(wanted) + "\n", encoding="utf-8")


def _submit_remote(td: Any, root: Path, conf: dict[str, Any], inactive: bool, config_file: str | None) -> None:
    from storm_py.client import NimbusClient
    from storm_py.deps.wheelhouse import with_dependencies
    from storm_py.flux.resolved import stage
    from storm_py.packaging.package import TopologyPackage, read_package

    with tempfile.TemporaryDirectory(prefix="storm-py-flux-") as tmp:
        pkg = Path(tmp) / (td.name or "flux")
        shutil.copytree(root, pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        _wheel_requirements(pkg)
        entry = stage(td, pkg)
        try:
            data, filename = read_package(pkg)
            data, wheels = with_dependencies(data, filename, conf)
            reply = NimbusClient(conf).submit(td.name, TopologyPackage(data, entry, filename), dict(td.config),
                                              inactive)
        except StormPyError as err:
            raise command_error(err, config_file) from err
    if wheels:
        click.echo(f"Uploaded with its dependencies: {', '.join(wheels)}")
    click.echo(f"Finished submitting topology: {td.name} (id {reply['id']})")


@click.command("flux")
@click.argument("file", metavar="FILE")
@click.option("-l", "--local", "local_mode", is_flag=True, help="Run in an in-process LocalCluster (the default).")
@click.option("-r", "--remote", is_flag=True, help="Submit to the cluster named by --config.")
@click.option("-s", "--sleep", "sleep_ms", type=click.IntRange(min=0), default=60000, show_default=True,
              metavar="MS", help="How long a local run lasts, in milliseconds.")
@click.option("-d", "--dry-run", is_flag=True, help="Build and check the topology, print it, run nothing.")
@click.option("-i", "--inactive", is_flag=True, help="Submit the topology inactive.")
@click.option("-f", "--filter", "filter_file", default=None, metavar="FILE",
              help="A properties file whose values replace ${...} placeholders.")
@click.option("-e", "--env-filter", is_flag=True, help="Replace ${ENV-NAME} placeholders from the environment.")
@click.option("--package", default=None, metavar="WHEEL_OR_DIR",
              help="The topology's code (default: the folder holding FILE); first on the import path.")
@click.option("-R", "--resource", is_flag=True, help="FILE is a resource of the package (needs --package).")
@click.option("-n", "--no-splash", is_flag=True, help="Do not print the splash.")
@click.option("-q", "--no-detail", is_flag=True, help="Do not print the topology's details.")
@click.option("-z", "--zookeeper", default=None, metavar="HOST:PORT", help="Accepted and ignored (as Storm 2.x).")
@config_options
def flux(file: str, local_mode: bool, remote: bool, sleep_ms: int, dry_run: bool, inactive: bool,
         filter_file: str | None, env_filter: bool, package: str | None, resource: bool, no_splash: bool,
         no_detail: bool, zookeeper: str | None, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Build the topology Flux FILE defines and run it locally, submit it (--remote) or only check it (--dry-run)."""
    from storm_py.flux.builder import build, describe
    from storm_py.flux.parser import load

    if local_mode and remote:
        raise click.UsageError("--local and --remote exclude each other")
    if resource and package is None:
        raise click.UsageError("-R/--resource reads FILE from the package: it needs --package")
    conf = load_conf(config_file, overrides)
    if zookeeper is not None:
        click.echo(f"Notice: --zookeeper {zookeeper} is ignored (as in Storm 2.x's Flux)", err=True)
    if remote and sleep_ms != 60000:
        click.echo("Notice: --sleep is ignored with --remote (as in Storm 2.x's Flux)", err=True)
    if filter_file is not None and not Path(filter_file).is_file():
        raise click.ClickException(f"--filter {filter_file}: no such file")
    with _package_root(package, file, resource) as root, _first_on_path(root):
        try:
            td = load(file, filter_file, env_filter, resource)
            _resolve_config(td, conf, overrides)
            if not no_splash:
                click.echo(SPLASH)
            t = build(td, working_dir=_shell_dir(root))
        except StormPyError as err:
            raise _one_line(err) from err
        if not no_detail:
            for line in describe(td):
                click.echo(line)
        if dry_run:
            click.echo("Not running or submitting the topology: --dry-run")
            return
        if remote:
            _submit_remote(td, root, conf, inactive, config_file)
        else:
            _run_local(t, conf, sleep_ms, inactive)
