"""``storm-py streamparse run | submit | quickstart``: a streamparse project folder run unchanged, locally or on a
cluster, and streamparse's quickstart project written without Leiningen."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import click

from storm_py.cli.options import command_error, config_options, load_conf, parse_overrides
from storm_py.clock import SYSTEM_CLOCK
from storm_py.errors import StormPyError

#: the module written into a submitted project's package; the worker calls its ``topology()``
ENTRY_MODULE = "storm_py_streamparse_entry"
_ENTRY_SOURCE = '''"""Builds the streamparse topology {name!r} from this package's topologies/ and src/."""

from pathlib import Path

from storm_py.streamparse.translate import build_topology, load_topology_class

HERE = Path(__file__).resolve().parent


def topology():
    cls = load_topology_class(HERE / "topologies" / "{name}.py", HERE / "src")
    return build_topology(cls, HERE / "src", {serializer!r})
'''


def _sparse_options(fn: Any) -> Any:
    """streamparse's own options: ``-o key=value``, ``--ackers``, ``--workers``, and the project folder."""
    fn = click.option("--workers", type=click.IntRange(min=1), default=None,
                      help="topology.workers (streamparse's --workers).")(fn)
    fn = click.option("--ackers", type=click.IntRange(min=0), default=None,
                      help="topology.acker.executors (streamparse's --ackers).")(fn)
    fn = click.option("-o", "--option", "options", multiple=True, metavar="KEY=VALUE",
                      help="A Storm option for the topology (value parsed as YAML); repeatable.")(fn)
    fn = click.option("-p", "--project", "project_dir", type=click.Path(), default=".", show_default=True,
                      help="The streamparse project folder.")(fn)
    return fn


def _prepare(project_dir: str, name: str | None, options: tuple[str, ...], ackers: int | None,
             workers: int | None) -> tuple[Any, Any, dict[str, Any]]:
    """The project, its Topology class and the topology conf; every problem a one-line error."""
    from storm_py.streamparse.project import find_project
    from storm_py.streamparse.translate import load_topology_class, refuse_java, topology_conf

    overrides = parse_overrides(options)
    if ackers is not None:
        overrides["topology.acker.executors"] = ackers
    if workers is not None:
        overrides["topology.workers"] = workers
    try:
        project = find_project(project_dir, name)
        for notice in project.notices:
            click.echo(f"Notice: {notice}", err=True)
        cls = load_topology_class(project.topology_file, project.src)
        refuse_java(cls)
        serializer = project.serializer if "serializer" in project.config else None
        conf = topology_conf(cls, project.options(), serializer, overrides)
    except StormPyError as err:
        raise click.ClickException(err.message) from err
    return project, cls, conf


@click.group("streamparse")
def streamparse() -> None:
    """Run a streamparse project (config.json, topologies/, src/, virtualenvs/) unchanged."""


@streamparse.command("run")
@click.argument("name", required=False)
@click.option("-t", "--time", "secs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seconds to run; 0 runs until interrupted.")
@click.option("--in-process", is_flag=True,
              help="Run pystorm bolts and spouts inside the executors (no process, no serialization).")
@_sparse_options
@config_options
def run(name: str | None, secs: int, in_process: bool, project_dir: str, options: tuple[str, ...], ackers: int | None,
        workers: int | None, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Run the project's topology NAME in an in-process LocalCluster (streamparse's `sparse run`)."""
    from storm_py.local import LocalCluster
    from storm_py.multilang.process import show_component_logs
    from storm_py.streamparse.translate import build_topology

    daemon_conf = load_conf(config_file, overrides)
    project, cls, conf = _prepare(project_dir, name, options, ackers, workers)
    show_component_logs()  # the components' log messages, as `sparse run` shows them
    try:
        topology = build_topology(cls, project.src, project.serializer if "serializer" in project.config else None,
                                  in_process)
    except StormPyError as err:
        raise click.ClickException(err.message) from err
    with LocalCluster(daemon_conf=daemon_conf) as cluster:
        try:
            cluster.submit_topology(project.name, conf, topology)
        except StormPyError as err:
            raise click.ClickException(err.message) from err
        click.echo(f"running {project.name} locally " + (f"for {secs}s" if secs else "until interrupted"))
        start = SYSTEM_CLOCK.now()
        try:
            while not secs or SYSTEM_CLOCK.now() - start < secs:
                left = secs - (SYSTEM_CLOCK.now() - start) if secs else 1.0
                SYSTEM_CLOCK.sleep(max(0.0, min(1.0, left)))
        except KeyboardInterrupt:
            click.echo("interrupted")
        summary = cluster.get_topology_summary(project.name)
        cluster.kill_topology(project.name, 0)
    _report(summary)


def _report(summary: dict[str, Any]) -> None:
    for comp in summary["spouts"] + summary["bolts"]:
        if comp.get("lastError"):
            click.echo(f"last error of {comp.get('spoutId') or comp.get('boltId')}: "
                       f"{comp['lastError'].strip().splitlines()[-1]}")
    emitted = sum(c.get("emitted", 0) for c in summary["spouts"] + summary["bolts"])
    acked = sum(s.get("acked", 0) for s in summary["spouts"])
    failed = sum(s.get("failed", 0) + s.get("timedOut", 0) for s in summary["spouts"])
    click.echo(f"done: emitted {emitted}, acked {acked}, failed {failed}")


def stage_package(project: Any, serializer: str | None, into: Path) -> Path:
    """A directory holding what a worker needs: ``src/``, ``topologies/NAME.py``, the entry module, and
    ``virtualenvs/NAME.txt`` as ``requirements.txt`` (the topology's Python requirements)."""
    pkg: Path = into / project.name
    shutil.copytree(project.src, pkg / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (pkg / "topologies").mkdir()
    shutil.copy2(project.topology_file, pkg / "topologies" / f"{project.name}.py")
    if project.requirements is not None:
        shutil.copy2(project.requirements, pkg / "requirements.txt")
    (pkg / f"{ENTRY_MODULE}.py").write_text(_ENTRY_SOURCE.format(name=project.name, serializer=serializer))
    return pkg


@streamparse.command("submit")
@click.argument("name", required=False)
@click.option("-n", "--name", "topology_name", default=None, help="Topology name on the cluster (default: NAME).")
@click.option("--wheelhouse", type=click.Path(file_okay=False), default=None,
              help="A folder of wheels for the topology's requirements (virtualenvs/NAME.txt).")
@_sparse_options
@config_options
def submit(name: str | None, topology_name: str | None, wheelhouse: str | None, project_dir: str,
           options: tuple[str, ...], ackers: int | None, workers: int | None, config_file: str | None,
           overrides: tuple[str, ...]) -> None:
    """Submit the project's topology NAME to the cluster named by --config (streamparse's `sparse submit`)."""
    from storm_py.client import NimbusClient
    from storm_py.packaging.package import TopologyPackage, read_package
    from storm_py.streamparse.translate import build_topology

    client_conf = load_conf(config_file, overrides)
    project, cls, conf = _prepare(project_dir, name, options, ackers, workers)
    serializer = project.serializer if "serializer" in project.config else None
    topology_name = topology_name or project.name
    if wheelhouse is not None:
        click.echo(f"Notice: --wheelhouse {wheelhouse}: the requirements are packaged as requirements.txt; "
                   "this cluster installs none of them (its workers use the supervisor's environment)", err=True)
    try:
        build_topology(cls, project.src, serializer)  # every spec checked here, before the upload
        with tempfile.TemporaryDirectory(prefix="storm-py-sparse-") as tmp:
            pkg = stage_package(project, serializer, Path(tmp))
            data, filename = read_package(pkg)
        reply = NimbusClient(client_conf).submit(
            topology_name, TopologyPackage(data, f"{ENTRY_MODULE}:topology", filename), conf, False)
    except StormPyError as err:
        raise command_error(err, config_file) from err
    click.echo(f"Finished submitting topology: {topology_name} (id {reply['id']})")


@streamparse.command("quickstart")
@click.argument("name")
@click.option("-d", "--directory", type=click.Path(file_okay=False, exists=True), default=".", show_default=True,
              help="The folder to write the project folder NAME in.")
def quickstart(name: str, directory: str) -> None:
    """Write streamparse's quickstart project NAME (`sparse quickstart`, without Leiningen or LEIN_ROOT)."""
    from storm_py.streamparse.translate import write_quickstart

    try:
        root = write_quickstart(name, Path(directory))
    except StormPyError as err:
        raise click.ClickException(err.message) from err
    click.echo(f"Run it with storm_py:\n\n\tcd {root}\n\tstorm-py streamparse run")
