"""This module owns the development cluster: ZooKeeper, nimbus(es), supervisors and a DRPC server as processes
on one machine.

:class:`DevCluster` picks free loopback ports, writes one configuration file per daemon plus the client
configuration ``<workdir>/storm.yaml``, starts each daemon as ``python -m storm_py <daemon> --config FILE``
(output in ``<workdir>/logs/<daemon>.log``), records what runs in ``<workdir>/dev-cluster.json`` and waits
until a nimbus leads, every supervisor is registered and the DRPC server listens.  Every configuration names
the DRPC server (``drpc.servers`` and its ports), so topologies and ``storm-py drpc-client`` find it.  It is
not a process manager: a daemon that dies stays dead (the chaos tests kill them on purpose).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from storm_py.client import NimbusClient
from storm_py.clock import wait_until
from storm_py.config.keys import setting
from storm_py.dev.child import exit_message, log_tail
from storm_py.dev.secret import with_secrets, write_private
from storm_py.dev.tls_ca import make_dev_tls
from storm_py.dev.zookeeper import ZooKeeperProcess, free_port
from storm_py.errors import StormPyError, WaitTimeoutError
from storm_py.node.local_state import read_json, write_json

log = logging.getLogger(__name__)

#: The record of a running dev cluster, in its work dir (a directory holding one is a dev-cluster work dir).
RECORD = "dev-cluster.json"


class WorkDirInUseError(StormPyError):
    """A dev cluster was asked to start in the work dir of one that still runs."""

    code = "workdir_in_use"


def running_owner(workdir: Path) -> str:
    """Which processes recorded in ``workdir``'s dev-cluster record still run (``""`` when none does)."""
    record = read_json(workdir / RECORD)
    if not isinstance(record, dict):
        return ""
    named: list[tuple[str, Any]] = [("dev-cluster", record.get("pid")), ("zookeeper", record.get("zookeeper_pid"))]
    named += [(str(d.get("name")), d.get("pid")) for d in record.get("daemons") or [] if isinstance(d, dict)]
    alive = [f"{name} pid {pid}" for name, pid in named if isinstance(pid, int) and _runs_ours(pid)]
    return ", ".join(alive)


def _runs_ours(pid: int) -> bool:
    """Whether ``pid`` runs and (where /proc tells) is a storm_py or ZooKeeper process, not a reused pid."""
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().lower()
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z" and (b"storm" in cmdline or b"zookeeper" in cmdline)

#: How long a stopped daemon gets before it is killed.
STOP_TIMEOUT_SECS = 15.0


@dataclass
class Daemon:
    """One daemon process of the cluster."""

    name: str
    kind: str
    conf_path: Path
    log_path: Path
    port: int | None
    proc: subprocess.Popen[bytes] | None = None

    def alive(self) -> bool:
        """Whether the process runs."""
        return self.proc is not None and self.proc.poll() is None

    def describe(self) -> dict[str, Any]:
        """A JSON-ready record."""
        return {"name": self.name, "kind": self.kind, "pid": self.proc.pid if self.proc else None,
                "port": self.port, "config": str(self.conf_path), "log": str(self.log_path)}


class DevCluster:
    """ZooKeeper (unless ``zookeeper`` names a running one), ``nimbuses`` nimbus(es) and ``supervisors``."""

    def __init__(
        self,
        workdir: Path,
        conf: Mapping[str, Any] | None = None,
        supervisors: int = 2,
        nimbuses: int = 1,
        ports_per_supervisor: int = 4,
        zookeeper: str | None = None,
        host: str = "127.0.0.1",
        tls: bool = False,
        supervisor_confs: Mapping[int, Mapping[str, Any]] | None = None,
    ) -> None:
        self.workdir = workdir.resolve()
        #: keys for one supervisor only (1-based number -> conf), e.g. its ``supervisor.resources.map``
        self.supervisor_confs = {int(k): dict(v) for k, v in (supervisor_confs or {}).items()}
        self.tls = tls
        self.base_conf = dict(conf or {})
        self.num_supervisors = supervisors
        self.num_nimbuses = nimbuses
        self.ports_per_supervisor = ports_per_supervisor
        self.external_zookeeper = zookeeper
        self.host = host
        self.zookeeper: ZooKeeperProcess | None = None
        self.daemons: list[Daemon] = []
        self.client_conf: dict[str, Any] = {}

    @property
    def client_conf_path(self) -> Path:
        """The client configuration to pass as ``--config``."""
        return self.workdir / "storm.yaml"

    def nimbus_url(self) -> str:
        """The API address of the first nimbus."""
        port = next(d.port for d in self.daemons if d.kind == "nimbus")
        return f"{self.scheme}://{self.host}:{port}"

    def ui_link(self) -> str:
        """The web UI (served by the first nimbus) with the cluster's token in the link's fragment: a browser never
        sends a fragment to the server; the UI's page moves the token into the tab's session storage."""
        token = quote(str(self.client_conf["nimbus.auth.token"]), safe="")  # with_secrets always sets one
        return f"{self.nimbus_url()}/#token={token}"

    @property
    def scheme(self) -> str:
        """``https`` with ``tls``, else ``http``."""
        return "https" if self.tls else "http"

    def drpc_address(self) -> str:
        """``host:port`` of the DRPC server's client port."""
        return f"{self.host}:{self.client_conf['drpc.port']}"

    def drpc_http_url(self) -> str:
        """The DRPC server's HTTP endpoint (``GET <url>/FUNC/ARGS``)."""
        return f"{self.scheme}://{self.host}:{self.client_conf['drpc.http.port']}/drpc"

    def leader(self) -> Daemon | None:
        """The nimbus daemon that leads now (None when none does)."""
        try:
            address = NimbusClient({**self.client_conf, "storm.nimbus.retry.times": 0}).find_leader()
        except StormPyError:
            return None
        return next((d for d in self.daemons if d.kind == "nimbus" and f"{self.host}:{d.port}" == address), None)

    def start(self, timeout: float = 60.0) -> None:
        """Start everything and wait until the cluster accepts topologies; stops what it started on failure."""
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, timeout: float) -> None:
        owner = running_owner(self.workdir)
        if owner:
            raise WorkDirInUseError(
                f"{self.workdir} belongs to a running dev cluster ({owner}): stop it, or pass another --workdir",
                workdir=str(self.workdir),
            )
        logs = self.workdir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        if self.external_zookeeper:
            zk_host, _, zk_port = self.external_zookeeper.rpartition(":")
            if not zk_host or not zk_port.isdigit():
                raise StormPyError(f"--zookeeper must be HOST:PORT, got {self.external_zookeeper!r}")
        else:
            self.zookeeper = ZooKeeperProcess(self.workdir / "zookeeper", free_port(self.host), self.host)
            self.zookeeper.start()
            zk_host, zk_port = self.host, str(self.zookeeper.port)
        nimbus_ports = [free_port(self.host) for _ in range(self.num_nimbuses)]
        drpc_ports = [free_port(self.host) for _ in range(3)]
        common = {
            **self.base_conf,
            **self._state_defaults(),
            "storm.zookeeper.servers": [zk_host],
            "storm.zookeeper.port": int(zk_port),
            "nimbus.seeds": [f"{self.host}:{p}" for p in nimbus_ports],
            "nimbus.thrift.port": nimbus_ports[0],
            "nimbus.host": self.host,
            "storm.local.hostname": self.host,
            "storm.log.dir": str(logs),
            "storm.local.dir": str(self.workdir / "client"),
            "drpc.servers": [self.host],
            "drpc.host": self.host,
            "drpc.port": drpc_ports[0],
            "drpc.invocations.port": drpc_ports[1],
            "drpc.http.port": drpc_ports[2],
        }
        if self.tls:  # a throwaway CA and a certificate for this host; every HTTP endpoint speaks TLS only
            common.update(make_dev_tls(self.workdir / "tls", [self.host]))
        common = with_secrets(common)  # authentication on: a fresh token and ZooKeeper payload per cluster
        self.client_conf = common
        write_private(self.client_conf_path, common)
        for i, port in enumerate(nimbus_ports, 1):
            self._spawn(f"nimbus-{i}", "nimbus", {**common, "nimbus.thrift.port": port,
                                                  "storm.local.dir": str(self.workdir / f"nimbus-{i}")}, port)
        for i in range(1, self.num_supervisors + 1):
            slots = [free_port(self.host) for _ in range(self.ports_per_supervisor)]
            self._spawn(f"supervisor-{i}", "supervisor", {**common, "supervisor.slots.ports": slots,
                                                          "storm.local.dir": str(self.workdir / f"supervisor-{i}"),
                                                          "logviewer.port": 0, **self.supervisor_confs.get(i, {})})
        self._spawn("drpc", "drpc", {**common, "storm.local.dir": str(self.workdir / "drpc")}, drpc_ports[0])
        self._record()
        self._wait_ready(timeout)

    def _state_defaults(self) -> dict[str, Any]:
        """Managed state is durable by default: the checkpoint_dir provider under the work directory (every
        worker of this host reaches it), unless the conf names another provider than the built-in default
        (``memory`` is then asked per topology: its conf wins over the cluster's)."""
        if setting(self.base_conf, "topology.state.provider") != "memory":
            return {}
        return {"topology.state.provider": "checkpoint_dir",
                "topology.state.checkpoint.dir": self.base_conf.get("topology.state.checkpoint.dir")
                or str(self.workdir / "state")}

    def _spawn(self, name: str, kind: str, conf: Mapping[str, Any], port: int | None = None) -> None:
        conf_path = self.workdir / f"{name}.yaml"
        write_private(conf_path, conf)
        daemon = Daemon(name, kind, conf_path, self.workdir / "logs" / f"{name}.log", port)
        with daemon.log_path.open("ab") as out:
            daemon.proc = subprocess.Popen(
                [sys.executable, "-m", "storm_py", "--log-level", "INFO", kind, "--config", str(conf_path)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=self.workdir,
            )
        self.daemons.append(daemon)
        log.info("started %s (pid %d)", name, daemon.proc.pid)

    def _record(self) -> None:
        write_json(
            self.workdir / RECORD,
            {
                "pid": os.getpid(),
                "zookeeper": self.external_zookeeper
                or (self.zookeeper.connect_string if self.zookeeper is not None else None),
                "zookeeper_pid": self.zookeeper.pid if self.zookeeper is not None else None,
                "config": str(self.client_conf_path),
                "daemons": [d.describe() for d in self.daemons],
            },
        )

    def _wait_ready(self, timeout: float) -> None:
        client = NimbusClient({**self.client_conf, "storm.nimbus.retry.times": 0})
        problem = "nothing answered yet"

        def ready() -> bool:
            nonlocal problem
            for d in self.daemons:
                if not d.alive():
                    code = d.proc.returncode if d.proc is not None else None
                    raise StormPyError(exit_message(d.name, code, log_tail(d.log_path), d.log_path), daemon=d.name)
            try:
                client.find_leader()
                registered = int(client.cluster_summary()["supervisors"])
            except StormPyError as err:
                problem = err.message
                return False
            problem = f"{registered} of {self.num_supervisors} supervisors registered"
            if registered < self.num_supervisors:
                return False
            problem = "the DRPC server does not listen yet"
            return _listens(self.host, int(self.client_conf["drpc.port"]))

        try:
            wait_until(ready, timeout, interval=0.1, what="the dev cluster")
        except WaitTimeoutError as err:
            raise WaitTimeoutError(f"the dev cluster was not ready within {timeout:g}s: {problem}") from err

    def dead_daemons(self) -> list[Daemon]:
        """Daemons whose process has exited."""
        return [d for d in self.daemons if d.proc is not None and not d.alive()]

    def stop(self) -> None:
        """Stop supervisors (they stop their workers), then nimbuses and the DRPC server, then ZooKeeper."""
        for kind in ("supervisor", "nimbus", "drpc"):
            group = [d for d in self.daemons if d.kind == kind and d.alive()]
            for d in group:
                assert d.proc is not None
                d.proc.send_signal(signal.SIGTERM)
            for d in group:
                assert d.proc is not None
                try:
                    d.proc.wait(STOP_TIMEOUT_SECS)
                except subprocess.TimeoutExpired:
                    log.warning("%s did not stop within %.0fs; killing it", d.name, STOP_TIMEOUT_SECS)
                    d.proc.kill()
                    d.proc.wait()
        if self.zookeeper is not None:
            self.zookeeper.stop()


def _listens(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False

