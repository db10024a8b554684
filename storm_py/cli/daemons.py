"""``storm-py nimbus | supervisor | ui | dev-zookeeper | dev-cluster`` and the hidden ``worker``: the daemon commands.

Each daemon runs in the foreground until SIGINT or SIGTERM, then shuts down cleanly; a bad configuration or an
unreachable ZooKeeper is a one-line error and a non-zero exit.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

import click

from storm_py.cli.options import FiniteFloatRange, config_file_used, config_options, load_conf
from storm_py.clock import SYSTEM_CLOCK
from storm_py.config import parse_override
from storm_py.config import validate as validate_conf
from storm_py.config.keys import setting
from storm_py.errors import ConfigError, StormPyError
from storm_py.node.loop import STOP_POLL_SECS, until_stopped

log = logging.getLogger(__name__)


@contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """An event set by SIGINT or SIGTERM (the previous handlers come back afterwards).  Wait for it
    with :func:`~storm_py.node.loop.until_stopped` or timed waits, never an untimed one."""
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _info_logging() -> None:
    root = logging.getLogger()
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)


def _fail(err: StormPyError) -> click.ClickException:
    return click.ClickException(err.message)


class DevService(Protocol):
    """A development service process: ZooKeeper, the Kafka broker, Redis."""

    @property
    def running(self) -> bool: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def exited(self) -> str | None: ...


def serve_dev_service(service: DevService, what: str, address: Callable[[], str], label: str,
                      then: Callable[[], None] | None = None) -> None:
    """Start ``service`` (and run ``then``), print ``label: address``, and keep it until SIGINT or SIGTERM; a start
    that fails, or ``service`` (``what``) exiting meanwhile, is a one-line error.  It is stopped in every case."""
    with _stop_on_signals() as stop:
        try:
            try:
                service.start()
                if then is not None:
                    then()
            except (StormPyError, ValueError) as err:
                raise click.ClickException(str(err)) from err
            except OSError as err:  # its directory is a file, unwritable, ...
                raise click.ClickException(f"{what} could not start: {err}") from err
            click.echo(f"{label}: {address()}")
            while not stop.wait(0.5):
                if not service.running:
                    raise click.ClickException(service.exited() or f"{what} exited")
        finally:
            service.stop()


def with_daemon_token(conf: dict[str, Any], config_file: str | None) -> dict[str, Any]:
    """``conf`` with the cluster token: the configured one, else the token file's (generated if absent), whose
    path is printed once."""
    from storm_py.node.token_file import TOKEN_KEY, ensure_token, read_token, token_path

    path = token_path(conf, config_file)
    configured = conf.get(TOKEN_KEY)
    if configured and configured != read_token({}, str(path)):
        return conf  # the config names it (load_conf fills it in from the token file otherwise)
    try:
        token, _ = ensure_token({**conf, TOKEN_KEY: None}, config_file)
    except OSError as err:
        raise click.ClickException(f"cannot write the token file {path}: {err}") from err
    click.echo(f"token: {path}")
    return {**conf, "nimbus.auth.token": token}


class _Daemon(Protocol):
    """What :func:`_run_daemon` runs: nimbus and the supervisor."""

    def start(self) -> None: ...

    def run(self, stop: threading.Event | None = None) -> None: ...

    def interrupt(self) -> None: ...

    def stop(self) -> None: ...


def _interrupt_when_set(stop: threading.Event, ended: threading.Event, daemon: _Daemon) -> None:
    """Interrupt ``daemon`` once ``stop`` is set (a signal), so that a round waiting for ZooKeeper ends at once;
    returns without doing anything once ``ended`` is set."""
    while not ended.is_set():
        if stop.wait(STOP_POLL_SECS):
            daemon.interrupt()
            return


def _run_daemon(make: Callable[[], _Daemon], what: str) -> None:
    _info_logging()
    try:
        daemon = make()
    except StormPyError as err:
        raise _fail(err) from err
    with _stop_on_signals() as stop:
        ended = threading.Event()
        # from before the start: a signal while the start waits for ZooKeeper ends that wait too
        interrupter = threading.Thread(target=_interrupt_when_set, args=(stop, ended, daemon), daemon=True,
                                       name=f"{what}-interrupt")  # fmt: skip
        interrupter.start()
        try:
            try:
                daemon.start()
            except StormPyError as err:
                if not stop.is_set():
                    raise _fail(err) from err
                log.info("%s stopped while starting (%s)", what, err.message)  # asked to: a clean exit
            else:
                daemon.run(stop)
        finally:
            ended.set()
            interrupter.join()
            log.info("%s stopping", what)
            daemon.stop()


@click.command("nimbus")
@config_options
def nimbus(config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Run a nimbus: leader election, scheduling, the REST API on nimbus.thrift.port."""
    from storm_py.nimbus.daemon import NimbusDaemon

    conf = with_daemon_token(load_conf(config_file, overrides), config_file_used(config_file))
    _run_daemon(lambda: NimbusDaemon(conf), "nimbus")


@click.command("supervisor")
@config_options
def supervisor(config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Run a supervisor: one worker process per assigned slot of supervisor.slots.ports."""
    from storm_py.supervisor.daemon import SupervisorDaemon

    conf = with_daemon_token(load_conf(config_file, overrides), config_file_used(config_file))
    _run_daemon(lambda: SupervisorDaemon(conf), "supervisor")


@click.command("ui")
@config_options
def ui(config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Serve Storm UI (its pages at /, the REST API at /api/v1/...) on ui.port, relayed to the leading nimbus."""
    from storm_py.ui.daemon import UiDaemon

    conf = with_daemon_token(load_conf(config_file, overrides), config_file_used(config_file))
    _info_logging()
    try:
        daemon = UiDaemon(conf)
    except StormPyError as err:
        raise _fail(err) from err
    with _stop_on_signals() as stop:
        daemon.start()
        click.echo(f"ui: {daemon.url}", err=False)
        try:
            until_stopped(stop)
        finally:
            daemon.stop()


@click.command("worker", hidden=True)
@click.argument("topology_id")
@click.argument("supervisor_id")
@click.argument("port", type=int)
@click.option("--worker-id", required=True)
@click.option("--supervisor-pid", type=int, default=None)
@click.option("--log-file", type=click.Path(dir_okay=False), default=None)
@config_options
def worker(
    topology_id: str,
    supervisor_id: str,
    port: int,
    worker_id: str,
    supervisor_pid: int | None,
    log_file: str | None,
    config_file: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Run one worker (started by a supervisor)."""
    from storm_py.worker.daemon import configure_logging, run_worker

    conf = load_conf(config_file, overrides)
    configure_logging(Path(log_file) if log_file else None)
    sys.exit(run_worker(conf, topology_id, supervisor_id, port, worker_id, supervisor_pid))


@click.command("dev-zookeeper")
@click.option("--port", type=int, default=None, help="Port (default: storm.zookeeper.port).")
@click.option("--dir", "data_dir", type=click.Path(file_okay=False), default=None,
              help="Data directory (default: dev.zookeeper.path, else ./dev-zookeeper).")
@config_options
def dev_zookeeper(port: int | None, data_dir: str | None, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Run a development ZooKeeper on loopback until interrupted."""
    from storm_py.dev.zookeeper import ZooKeeperProcess

    conf = load_conf(config_file, overrides)
    path = Path(data_dir or setting(conf, "dev.zookeeper.path"))
    zk = ZooKeeperProcess(path.resolve(), int(port or setting(conf, "storm.zookeeper.port")))
    serve_dev_service(zk, "ZooKeeper", lambda: zk.connect_string, "zookeeper")


def supervisor_confs(items: Iterable[str], supervisors: int) -> dict[int, dict[str, Any]]:
    """``--supervisor-conf N:KEY=VALUE`` items as supervisor number -> its own keys, checked against the key
    table; a bad item is a :class:`click.BadParameter` naming it."""
    out: dict[int, dict[str, Any]] = {}
    for text in items:
        number, _, setting_text = text.partition(":")
        if not number.strip().isdigit() or not 1 <= int(number) <= supervisors:
            raise click.BadParameter(f"{text!r} must start with a supervisor number from 1 to {supervisors}",
                                     param_hint="--supervisor-conf")
        try:
            key, value = parse_override(setting_text)
        except ConfigError as err:
            raise click.BadParameter(err.message, param_hint="--supervisor-conf") from err
        out.setdefault(int(number), {})[key] = value
    for index, extra in out.items():
        try:
            validate_conf(extra, f"--supervisor-conf of supervisor {index}:")
        except ConfigError as err:
            raise click.BadParameter(err.message, param_hint="--supervisor-conf") from err
    return out


@click.command("dev-cluster")
@click.option("--supervisors", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--nimbuses", type=click.IntRange(min=1), default=1, show_default=True,
              help="Nimbuses (more than one: a leader and standbys).")
@click.option("--ports-per-supervisor", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--workdir", type=click.Path(file_okay=False), default="dev-cluster", show_default=True,
              help="Where configuration, logs and local state go; DIR/storm.yaml is the client config.")
@click.option("--zookeeper", default=None, metavar="HOST:PORT", help="Use this ZooKeeper instead of starting one.")
@click.option("--timeout", type=FiniteFloatRange(min=1), default=90.0, show_default=True,
              help="Seconds to wait for the cluster to accept work.")
@click.option("--tls", is_flag=True, default=False,
              help="Serve every HTTP endpoint over TLS with a throwaway CA (needs the cryptography package).")
@click.option("--supervisor-conf", "supervisor_conf", multiple=True, metavar="N:KEY=VALUE",
              help="A key for supervisor N only (from 1), e.g. '2:supervisor.resources.map={gpu.count: 1}'; "
                   "repeatable.")
@config_options
def dev_cluster(
    supervisors: int,
    nimbuses: int,
    ports_per_supervisor: int,
    workdir: str,
    zookeeper: str | None,
    timeout: float,
    tls: bool,
    supervisor_conf: tuple[str, ...],
    config_file: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Start ZooKeeper, nimbus and supervisors on this machine; stop them all on SIGINT/SIGTERM."""
    from storm_py.dev.cluster import DevCluster

    conf = load_conf(config_file, overrides)
    per_supervisor = supervisor_confs(supervisor_conf, supervisors)
    cluster = DevCluster(Path(workdir), conf, supervisors, nimbuses, ports_per_supervisor, zookeeper, tls=tls,
                         supervisor_confs=per_supervisor)
    with _stop_on_signals() as stop:
        try:
            cluster.start(timeout)
        except StormPyError as err:
            raise _fail(err) from err
        try:
            click.echo(f"config: {cluster.client_conf_path}")
            click.echo(f"nimbus: {cluster.nimbus_url()}", nl=True)
            click.echo(f"ui: {cluster.ui_link()}")
            click.echo(f"drpc: {cluster.drpc_address()} (HTTP: {cluster.drpc_http_url()})")
            if nimbuses > 1:
                leader = cluster.leader()
                where = f"{leader.name} ({cluster.scheme}://{cluster.host}:{leader.port})" if leader else "none yet"
                click.echo(f"leader: {where}")
            sys.stdout.flush()
            reported: set[str] = set()
            while not stop.wait(0.5):
                for d in cluster.dead_daemons():
                    if d.name not in reported:
                        reported.add(d.name)
                        code = d.proc.returncode if d.proc is not None else None
                        click.echo(f"{d.name} exited with code {code} (see {d.log_path})", err=True)
        finally:
            started = SYSTEM_CLOCK.now()
            cluster.stop()
            log.info("dev cluster stopped in %.1fs", SYSTEM_CLOCK.now() - started)
