"""This module owns the nimbus process: leader election, blob store, REST API and the loop driving :class:`Nimbus`.

Every nimbus registers itself (``nimbuses/<host:port>``), enters the election and serves the API.  The leader
runs :meth:`Nimbus.step` (timed kills and rebalances, reassignment of dead workers and supervisors) every
``nimbus.monitor.freq.secs`` or sooner when something is due, and the autoscaler
(:mod:`storm_py.nimbus.autoscaler`) when a topology's period is up; every nimbus copies the blobs it lacks from
their holders.  Submitted packages are validated in a subprocess (:mod:`storm_py.nimbus.topology_check`).
"""

from __future__ import annotations

import logging
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import storm_py
from storm_py.api.topology import StormTopology
from storm_py.client import NimbusClient
from storm_py.clock import Clock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.models import NimbusInfo
from storm_py.cluster_state.storage import ConnectionState, LeaderElection, StateStorage, Watch
from storm_py.config.keys import setting
from storm_py.errors import StormPyError, TopologyLoadError
from storm_py.nimbus.access import NimbusGate
from storm_py.nimbus.api import NimbusApi
from storm_py.nimbus.autoscaler import Autoscaler
from storm_py.nimbus.blobstore import BlobReplicator, LocalFsBlobStore, NimbusCodeStore
from storm_py.nimbus.core import Nimbus
from storm_py.nimbus.topology_check import check_package
from storm_py.node.http_api import JsonApiServer
from storm_py.node.http_guard import allowed_hosts
from storm_py.node.local_state import nimbus_blob_dir
from storm_py.node.loop import DaemonLoop
from storm_py.node.session import open_storage
from storm_py.node.tls import server_context
from storm_py.node.token_file import with_token
from storm_py.packaging.package import TopologyPackage, UnpackLimits

log = logging.getLogger(__name__)

#: Shortest pause between two rounds of the loop.
MIN_ROUND_SECS = 0.05


class NimbusDaemon:
    """One nimbus process (see the module docstring).

    Args:
        conf: the daemon configuration; ``nimbus.host`` and ``nimbus.thrift.port`` place the API (port 0 picks
            a free port), ``storm.local.dir`` the blob store; without ``nimbus.auth.token`` the token of
            ``storm.local.dir``'s token file is used (generated if absent: :mod:`storm_py.node.token_file`).
        storage: the state store session (default: ZooKeeper from ``storm.zookeeper.*``).
    """

    def __init__(self, conf: Mapping[str, Any], storage: StateStorage | None = None) -> None:
        conf = with_token(conf)  # never without a token, on loopback too
        self.conf = dict(conf)
        self.clock = Clock()
        self.host = str(setting(conf, "nimbus.host"))
        bind = str(conf.get("nimbus.bind.host") or self.host)
        tls = server_context(conf)
        self.state = ClusterState(storage if storage is not None else open_storage(conf), conf)
        self.loop = DaemonLoop("nimbus", self.clock, self.round, min_wait=MIN_ROUND_SECS)
        self.started = self.clock.wall()
        self.election: LeaderElection | None = None
        self._watches: list[Watch] = []
        self._was_leader = False
        try:
            self.api = JsonApiServer(
                bind,
                int(setting(conf, "nimbus.thrift.port")),
                [],
                token=str(conf["nimbus.auth.token"]),
                name="nimbus",
                hosts=allowed_hosts(conf, bind),
                tls=tls,
            )
        except OSError as err:
            self.state.close()
            raise StormPyError(
                f"nimbus cannot listen on {self.host}:{conf.get('nimbus.thrift.port')}: {err.strerror}"
            ) from err
        self.port = self.api.port
        self.id = f"{self.host}:{self.port}"
        self.blobs = LocalFsBlobStore(nimbus_blob_dir(conf), self.clock)
        self.code_store = NimbusCodeStore(self.blobs, self.state, self.id)
        self.nimbus = Nimbus(self.conf, self.state, self.code_store, self.clock, loader=self._validate)
        self.nimbus.is_leader = self.is_leader
        self.autoscaler = Autoscaler(self.nimbus, self.state, self.clock)
        self.client = NimbusClient(conf)
        self.replicator = BlobReplicator(self.blobs, self.state, self.id, self.client.fetch_blob, self.clock)
        self.gate = NimbusGate(self.conf, self.state, self.nimbus.topology_id, self.clock)
        self.api.gate = self.gate
        self.api.routes = NimbusApi(self).routes()

    # ------------------------------------------------------------------------------------------- leadership

    def is_leader(self) -> bool:
        """Whether this nimbus leads now."""
        return self.election is not None and self.election.is_leader()

    def leader_id(self) -> str | None:
        """``host:port`` of the leading nimbus."""
        try:
            return self.state.nimbus_leader()
        except StormPyError:
            return self.id if self.is_leader() else None

    def wake(self) -> None:
        """Run the loop's next round now."""
        self.loop.wake()

    def _on_leadership(self, leader: bool) -> None:
        log.info("nimbus %s is %s", self.id, "the leader" if leader else "not the leader")
        self.wake()

    def _on_connection(self, state: ConnectionState) -> None:
        if state == "connected":
            # Time spent disconnected is not held against the workers' heartbeats.
            self.nimbus.reset_heartbeat_tracking()
            self.wake()

    # ------------------------------------------------------------------------------------------- submit

    def _validate(self, code: Any, conf: dict[str, Any]) -> StormTopology:
        if not isinstance(code, TopologyPackage):
            raise TopologyLoadError(f"nimbus needs a topology package, got {type(code).__name__}")
        timeout = float(setting(self.conf, "nimbus.topology.validation.timeout.secs"))
        with tempfile.TemporaryDirectory(prefix="storm-py-upload-") as tmp:
            path = Path(tmp) / "package.zip"
            path.write_bytes(code.data)
            return check_package(path, code.entry, conf, timeout, UnpackLimits.from_conf(self.conf))

    # ------------------------------------------------------------------------------------------- running

    def start(self) -> None:
        """Serve the API, register, enter the election."""
        self.api.start()
        self.state.register_nimbus(NimbusInfo(self.host, self.port, storm_py.__version__, self.started))
        self.state.storage.add_connection_listener(self._on_connection)
        election = self.state.nimbus_election(self.id)
        election.add_listener(self._on_leadership)
        self.election = election
        self._watches = [
            self.state.watch_storm_bases(self.wake),
            self.state.watch_supervisors(self.wake),
            self.state.watch_nimbus_leader(self.wake),
        ]
        log.info("nimbus %s serving %s://%s:%d (leader: %s)", self.id, "https" if self.api.tls else "http", self.host,
                 self.port, self.leader_id())

    def round(self) -> float:
        """One round of the loop; returns how long to wait before the next."""
        freq = float(setting(self.conf, "nimbus.monitor.freq.secs"))
        leader = self.is_leader()
        if leader and not self._was_leader:
            self.nimbus.reset_heartbeat_tracking()
            self.autoscaler.reset()
        self._was_leader = leader
        self.replicator.sync()
        if not leader:
            return freq
        self.nimbus.step()
        due = [d + 0.01 for d in (self.nimbus.next_action_secs(), self.autoscaler.step()) if d is not None]
        return min([freq, *due])

    def run(self, stop: threading.Event | None = None) -> None:
        """Loop until ``stop`` (or :meth:`stop`) is set."""
        self.loop.run(stop)

    def interrupt(self) -> None:
        """Begin shutting down from another thread (a signal): the loop ends after its round, and that round's
        ZooKeeper calls stop waiting for a lost connection, so that :meth:`stop` follows at once."""
        self.loop.stop()
        self.state.stop_waiting()

    def stop(self) -> None:
        """Leave the election, unregister and release the port and the state session."""
        self.loop.stop()
        for watch in self._watches:
            watch.cancel()
        if self.election is not None:
            self.election.cancel()
        try:
            self.state.unregister_nimbus(self.host, self.port)
        except StormPyError as err:
            log.debug("could not unregister nimbus %s: %s", self.id, err)
        self.api.stop()
        self.state.close()
