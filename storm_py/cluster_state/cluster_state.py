"""This module owns the typed view of the cluster state that every daemon uses: :class:`ClusterState`.

It maps Storm's records (:mod:`storm_py.cluster_state.models`) onto the znode layout of
:mod:`storm_py.cluster_state.znodes` over any :class:`~storm_py.cluster_state.storage.StateStorage`, with values
stored as UTF-8 JSON. It holds no cache and no thread of its own; watch callbacks take no arguments and run on the
storage thread, so they should only post an event to their daemon's loop.

Storm bases, assignments and credentials are signed by the writer and checked by every reader
(:mod:`storm_py.cluster_state.signing`): a record that does not verify is logged, counted in
:attr:`ClusterState.refused` and read as absent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from storm_py.cluster_state import znodes
from storm_py.cluster_state.election import current_leader
from storm_py.cluster_state.models import (
    Assignment,
    Credentials,
    ErrorInfo,
    NimbusInfo,
    NodePort,
    StormBase,
    SupervisorInfo,
    WorkerHeartbeat,
)
from storm_py.cluster_state.signing import RecordSigner, signer_from_conf
from storm_py.cluster_state.storage import LeaderElection, StateStorage, Watch
from storm_py.config.keys import setting
from storm_py.errors import StateError

log = logging.getLogger(__name__)

#: Largest record written (ZooKeeper's jute.maxbuffer is 1 MiB; a write over it costs the writer its session).
MAX_RECORD_BYTES = 1_000_000
#: How many errors are kept per component (Storm keeps 10).
MAX_ERRORS_PER_COMPONENT = 10



class _Record(Protocol):
    def to_json(self) -> dict[str, Any]: ...


R = TypeVar("R")


def encode_json(value: Any) -> bytes:
    """The stored form of a JSON value (compact, keys sorted, UTF-8)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_json(path: str, data: bytes) -> Any:
    """Parse the JSON stored at ``path``; malformed data is a :class:`StateError` naming the path."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise StateError(f"znode {path} does not hold JSON: {err}", path=path) from err


class ClusterState:
    """Typed access to the cluster state (Storm's ``IStormClusterState``).

    Args:
        storage: the session to use; :meth:`close` closes it.
        conf: the daemon's configuration; ``storm.zookeeper.root`` and ``transactional.zookeeper.root`` place
            the two trees.
    """

    def __init__(self, storage: StateStorage, conf: Mapping[str, Any] | None = None) -> None:
        conf = conf or {}
        self.storage = storage
        self.root = znodes.normalize(str(setting(conf, "storm.zookeeper.root")))
        self.tx_root = znodes.normalize(str(setting(conf, "transactional.zookeeper.root")))
        self.signer: RecordSigner | None = signer_from_conf(conf)
        #: storm bases and assignments refused because their signature is missing or wrong
        self.refused = 0

    def stop_waiting(self) -> None:
        """Let every call that finds no connection fail at once from now on: the daemon is shutting down."""
        self.storage.stop_waiting()

    def close(self) -> None:
        """Close the storage session (this client's ephemeral registrations vanish)."""
        self.storage.close()

    # --------------------------------------------------------------------------------------- storm bases
    def set_storm_base(self, topology_id: str, base: StormBase) -> None:
        """Write a topology's storm base (creating or replacing it)."""
        self._put(znodes.storm(self.root, topology_id), base, signed=True)

    def storm_base(self, topology_id: str) -> StormBase | None:
        """A topology's storm base, or None if it is not live."""
        return self._read(znodes.storm(self.root, topology_id), StormBase.from_json, signed=True)

    def remove_storm_base(self, topology_id: str) -> None:
        """Forget a topology's storm base."""
        self.storage.delete(znodes.storm(self.root, topology_id))

    def active_topology_ids(self) -> list[str]:
        """The ids of the topologies that have a storm base, sorted."""
        return self.storage.children(znodes.storms(self.root))

    def storm_bases(self) -> dict[str, StormBase]:
        """Every storm base by topology id."""
        return self._read_all(znodes.storms(self.root), StormBase.from_json, signed=True)

    def watch_storm_bases(self, callback: Callable[[], None]) -> Watch:
        """Call ``callback()`` when a topology's storm base appears or goes."""
        return self.storage.watch_children(znodes.storms(self.root), lambda _path: callback())

    def watch_storm_base(self, topology_id: str, callback: Callable[[], None]) -> Watch:
        """Call ``callback()`` when a topology's storm base is written or removed."""
        return self.storage.watch_data(znodes.storm(self.root, topology_id), lambda _path: callback())

    # ---------------------------------------------------------------------------------------- assignments
    def set_assignment(self, topology_id: str, assignment: Assignment) -> None:
        """Write a topology's assignment, and make sure the directories its workers write into exist (made here,
        by a daemon, they carry the ACL that lets the topology's own identity write there and no other)."""
        self._put(znodes.assignment(self.root, topology_id), assignment, signed=True)
        for directory in (znodes.workerbeats_of(self.root, topology_id), znodes.errors_of(self.root, topology_id)):
            if not self.storage.exists(directory):
                try:
                    self.storage.create(directory)
                except StateError as err:
                    if err.fields.get("reason") != "node_exists":
                        raise

    def assignment(self, topology_id: str) -> Assignment | None:
        """A topology's assignment, or None."""
        return self._read(znodes.assignment(self.root, topology_id), Assignment.from_json, signed=True)

    def remove_assignment(self, topology_id: str) -> None:
        """Remove a topology's assignment."""
        self.storage.delete(znodes.assignment(self.root, topology_id))

    def assignment_ids(self) -> list[str]:
        """The ids of the topologies that have an assignment, sorted."""
        return self.storage.children(znodes.assignments(self.root))

    def assignments(self) -> dict[str, Assignment]:
        """Every assignment by topology id."""
        return self._read_all(znodes.assignments(self.root), Assignment.from_json, signed=True)

    def watch_assignments(self, callback: Callable[[], None]) -> Watch:
        """Call ``callback()`` when an assignment appears or goes (for changes: :meth:`watch_assignment`)."""
        return self.storage.watch_children(znodes.assignments(self.root), lambda _path: callback())

    def watch_assignment(self, topology_id: str, callback: Callable[[], None]) -> Watch:
        """Call ``callback()`` when a topology's assignment is written or removed."""
        return self.storage.watch_data(znodes.assignment(self.root, topology_id), lambda _path: callback())

    # ----------------------------------------------------------------------------------------- supervisors
    def set_supervisor_info(self, supervisor_id: str, info: SupervisorInfo) -> None:
        """Register a supervisor, or refresh its registration (its heartbeat).

        The node is ephemeral: it vanishes when this session ends and is restored after a session loss.
        """
        self.storage.set_ephemeral(znodes.supervisor(self.root, supervisor_id), encode_json(info.to_json()))

    def supervisor_info(self, supervisor_id: str) -> SupervisorInfo | None:
        """A supervisor's registration, or None if it is not alive."""
        return self._read(znodes.supervisor(self.root, supervisor_id), SupervisorInfo.from_json)

    def remove_supervisor(self, supervisor_id: str) -> None:
        """Withdraw a supervisor's registration (on clean shutdown)."""
        self.storage.delete(znodes.supervisor(self.root, supervisor_id))

    def supervisor_ids(self) -> list[str]:
        """The ids of the registered supervisors, sorted."""
        return self.storage.children(znodes.supervisors(self.root))

    def supervisors(self) -> dict[str, SupervisorInfo]:
        """Every registered supervisor's info by id."""
        return self._read_all(znodes.supervisors(self.root), SupervisorInfo.from_json)

    def watch_supervisors(self, callback: Callable[[], None]) -> Watch:
        """Call ``callback()`` when a supervisor registers or goes away."""
        return self.storage.watch_children(znodes.supervisors(self.root), lambda _path: callback())

    # ---------------------------------------------------------------------------------- worker heartbeats
    def set_worker_heartbeat(
        self, topology_id: str, node: str, port: int, heartbeat: WorkerHeartbeat
    ) -> None:
        """Write a worker's heartbeat."""
        self._put(znodes.workerbeat(self.root, topology_id, node, port), heartbeat)

    def worker_heartbeat(self, topology_id: str, node: str, port: int) -> WorkerHeartbeat | None:
        """One worker's last heartbeat, or None."""
        return self._read(znodes.workerbeat(self.root, topology_id, node, port), WorkerHeartbeat.from_json)

    def worker_heartbeats(self, topology_id: str) -> dict[NodePort, WorkerHeartbeat]:
        """The last heartbeat of each of a topology's workers, by ``(node, port)``."""
        parent = znodes.workerbeats_of(self.root, topology_id)
        out: dict[NodePort, WorkerHeartbeat] = {}
        for name in self.storage.children(parent):
            heartbeat = self._read(znodes.join(parent, name), WorkerHeartbeat.from_json)
            if heartbeat is not None:
                out[znodes.parse_worker_name(name)] = heartbeat
        return out

    def remove_worker_heartbeat(self, topology_id: str, node: str, port: int) -> None:
        """Remove one worker's heartbeat."""
        self.storage.delete(znodes.workerbeat(self.root, topology_id, node, port))

    def remove_worker_heartbeats(self, topology_id: str) -> None:
        """Remove every heartbeat of a topology."""
        self.storage.delete(znodes.workerbeats_of(self.root, topology_id))

    def heartbeat_topology_ids(self) -> list[str]:
        """The ids of the topologies with heartbeat directories (for cleaning up after dead topologies)."""
        return self.storage.children(znodes.workerbeats(self.root))

    # ---------------------------------------------------------------------------------------------- errors
    def report_error(
        self,
        topology_id: str,
        component_id: str,
        error_text: str,
        host: str,
        port: int,
        time_secs: float,
    ) -> None:
        """Record an error of a component, keeping only its last :data:`MAX_ERRORS_PER_COMPONENT` errors."""
        info = ErrorInfo(error=error_text, time_secs=time_secs, host=host, port=port)
        self.storage.create(
            znodes.error_prefix(self.root, topology_id, component_id),
            encode_json(info.to_json()),
            sequential=True,
        )
        names = self._error_names(topology_id, component_id)
        for name in names[:-MAX_ERRORS_PER_COMPONENT]:
            self.storage.delete(znodes.error(self.root, topology_id, component_id, name))

    def errors(self, topology_id: str, component_id: str) -> list[ErrorInfo]:
        """A component's kept errors, newest first."""
        out: list[ErrorInfo] = []
        for name in reversed(self._error_names(topology_id, component_id)):
            info = self._read(znodes.error(self.root, topology_id, component_id, name), ErrorInfo.from_json)
            if info is not None:
                out.append(info)
        return out

    def last_error(self, topology_id: str, component_id: str) -> ErrorInfo | None:
        """A component's most recent error, or None."""
        for name in reversed(self._error_names(topology_id, component_id)):
            info = self._read(znodes.error(self.root, topology_id, component_id, name), ErrorInfo.from_json)
            if info is not None:
                return info
        return None

    def topology_errors(self, topology_id: str) -> dict[str, list[ErrorInfo]]:
        """Every component's kept errors (newest first), by component id."""
        parent = znodes.errors_of(self.root, topology_id)
        out: dict[str, list[ErrorInfo]] = {}
        for name in self.storage.children(parent):
            component_id = znodes.decode_name(name)
            errors = self.errors(topology_id, component_id)
            if errors:
                out[component_id] = errors
        return out

    def error_topology_ids(self) -> list[str]:
        """The ids of the topologies with recorded errors."""
        return self.storage.children(znodes.errors(self.root))

    def remove_errors(self, topology_id: str) -> None:
        """Remove every error of a topology."""
        self.storage.delete(znodes.errors_of(self.root, topology_id))

    def _error_names(self, topology_id: str, component_id: str) -> list[str]:
        names = self.storage.children(znodes.component_errors(self.root, topology_id, component_id))
        ranked = [(seq, name) for name in names if (seq := znodes.sequence_of(name)) is not None]
        return [name for _, name in sorted(ranked)]

    # ---------------------------------------------------------------------------------------------- nimbus
    def register_nimbus(self, info: NimbusInfo) -> None:
        """Register a nimbus (ephemeral, restored after a session loss) or refresh its registration."""
        self.storage.set_ephemeral(
            znodes.nimbus(self.root, info.host, info.port), encode_json(info.to_json())
        )

    def unregister_nimbus(self, host: str, port: int) -> None:
        """Withdraw a nimbus's registration."""
        self.storage.delete(znodes.nimbus(self.root, host, port))

    def nimbuses(self) -> list[NimbusInfo]:
        """Every registered nimbus, by id."""
        return [
            info
            for _, info in sorted(self._read_all(znodes.nimbuses(self.root), NimbusInfo.from_json).items())
        ]

    def nimbus_election(self, identifier: str) -> LeaderElection:
        """Enter the nimbus leader election as ``identifier`` (a nimbus's ``host:port``)."""
        return self.storage.elect(znodes.leader_lock(self.root), identifier)

    def nimbus_leader(self) -> str | None:
        """The identifier of the leading nimbus, or None (usable by any client, not only candidates)."""
        return current_leader(self.storage, znodes.leader_lock(self.root))

    def watch_nimbus_leader(self, callback: Callable[[], None]) -> Watch:
        """Call ``callback()`` when the set of election candidates changes (the leader may have changed)."""
        return self.storage.watch_children(znodes.leader_lock(self.root), lambda _path: callback())

    # ------------------------------------------------------------------------------------------- blobstore
    def register_blob_holder(self, key: str, holder_id: str, version: int, *, follow: bool = False) -> bool:
        """Record that nimbus ``holder_id`` (``host:port``) holds version ``version`` of blob ``key``; a ``follow``er
        (holding a copy) only while the blob is still registered, so a delete stays done.  Whether it recorded."""
        path, data = znodes.blob_holder(self.root, key, holder_id), encode_json({"version": int(version)})
        if follow:
            return self.storage.set_if_parent(path, data)
        self.storage.set(path, data)
        return True

    def remove_blob_holder(self, key: str, holder_id: str) -> None:
        """Record that ``holder_id`` no longer holds blob ``key``."""
        self.storage.delete(znodes.blob_holder(self.root, key, holder_id))

    def blob_holders(self, key: str) -> dict[str, int]:
        """The nimbuses holding blob ``key``, with the version each holds."""
        parent = znodes.blob(self.root, key)
        read = {h: self._read(znodes.join(parent, h), lambda obj: int(obj["version"]))
                for h in self.storage.children(parent)}
        return {holder_id: version for holder_id, version in read.items() if version is not None}

    def blob_keys(self) -> list[str]:
        """Every registered blob key, sorted."""
        return sorted(znodes.decode_name(name) for name in self.storage.children(znodes.blobstore(self.root)))

    def remove_blob(self, key: str) -> None:
        """Forget blob ``key`` and all its holders."""
        self.storage.delete(znodes.blob(self.root, key))

    # ----------------------------------------------------------------------------------------- transactional
    def transactional_get(self, tx_id: str, *parts: str) -> Any | None:
        """The JSON value at ``<tx_root>/<tx_id>/<parts>``, or None."""
        path = znodes.transactional(self.tx_root, tx_id, *parts)
        data = self.storage.get(path)
        return None if data is None else decode_json(path, data)

    def transactional_set(self, tx_id: str, *parts: str, value: Any) -> None:
        """Write the JSON ``value`` at ``<tx_root>/<tx_id>/<parts>``."""
        self.storage.set(znodes.transactional(self.tx_root, tx_id, *parts), encode_json(value))

    def transactional_delete(self, tx_id: str, *parts: str) -> None:
        """Delete ``<tx_root>/<tx_id>/<parts>`` and everything below it."""
        self.storage.delete(znodes.transactional(self.tx_root, tx_id, *parts))

    def transactional_children(self, tx_id: str, *parts: str) -> list[str]:
        """The children of ``<tx_root>/<tx_id>/<parts>``, sorted."""
        return self.storage.children(znodes.transactional(self.tx_root, tx_id, *parts))

    # ------------------------------------------------------------------------------------------ kafka offsets
    def kafka_offset_get(self, zk_root: str, spout_id: str, partition: int, topic: str | None = None) -> Any | None:
        """The JSON a Kafka spout keeps for a partition in ZooKeeper offsets mode (storm-kafka's znode), or None."""
        path = znodes.kafka_spout_partition(zk_root, spout_id, partition, topic)
        data = self.storage.get(path)
        return None if data is None else decode_json(path, data)

    def kafka_offset_set(self, zk_root: str, spout_id: str, partition: int, value: Any,
                         topic: str | None = None) -> None:
        """Write a Kafka spout partition's offset JSON (storm-kafka's znode layout); the spout's offsets root is
        created on its own first, so it belongs to the writing topology, not to every worker."""
        root = znodes.kafka_spout_root(zk_root, spout_id)
        if not self.storage.exists(root):
            try:
                self.storage.set(root, b"")
            except StateError:
                if not self.storage.exists(root):  # made meanwhile by another task of the topology: fine
                    raise
        self.storage.set(znodes.kafka_spout_partition(zk_root, spout_id, partition, topic), encode_json(value))

    # ------------------------------------------------------------------------------------------ log levels
    def set_log_config(self, topology_id: str, config: Mapping[str, Any]) -> None:
        """Write a topology's dynamic log levels (``{logger: {target_level, reset_level, timeout_epoch}}``)."""
        self.storage.set(znodes.log_config(self.root, topology_id), encode_json(dict(config)))

    def log_config(self, topology_id: str) -> dict[str, Any]:
        """A topology's dynamic log levels (empty when none were set)."""
        path = znodes.log_config(self.root, topology_id)
        data = self.storage.get(path)
        value = {} if data is None else decode_json(path, data)
        return dict(value) if isinstance(value, Mapping) else {}

    # ----------------------------------------------------------------------------------------- credentials
    def set_credentials(self, topology_id: str, credentials: Credentials) -> None:
        """Write a topology's credentials (replacing any; signed, readable by its own workers only)."""
        self._put(znodes.credentials(self.root, topology_id), credentials, signed=True)

    def credentials(self, topology_id: str) -> Credentials | None:
        """A topology's credentials, or None when none were uploaded (or they do not verify)."""
        return self._read(znodes.credentials(self.root, topology_id), Credentials.from_json, signed=True)

    def remove_credentials(self, topology_id: str) -> None:
        """Forget a topology's credentials."""
        self.storage.delete(znodes.credentials(self.root, topology_id))

    # ------------------------------------------------------------------------------------------ autoscaler
    def set_autoscale_events(self, topology_id: str, events: Mapping[str, Any]) -> None:
        """Write a topology's autoscaler events (``{"decisions": [...], "diagnoses": [...]}``)."""
        self._write(znodes.autoscale(self.root, topology_id), dict(events))

    def autoscale_events(self, topology_id: str) -> dict[str, Any]:
        """A topology's autoscaler events (empty when it has none)."""
        path = znodes.autoscale(self.root, topology_id)
        data = self.storage.get(path)
        value = {} if data is None else decode_json(path, data)
        return dict(value) if isinstance(value, Mapping) else {}

    def autoscale_topology_ids(self) -> list[str]:
        """The topologies with autoscaler events."""
        return self.storage.children(znodes.autoscale_root(self.root))

    def remove_autoscale_events(self, topology_id: str) -> None:
        """Forget a topology's autoscaler events."""
        self.storage.delete(znodes.autoscale(self.root, topology_id))

    # ------------------------------------------------------------------------------------------ rescales
    def set_rescales(self, name: str, history: Mapping[str, Any]) -> None:
        """Keep the rescale history of the topologies named ``name`` (``topology.state.rescales``'s JSON form)."""
        self._write(znodes.rescales(self.root, name), dict(history))

    def rescales(self, name: str) -> dict[str, Any] | None:
        """The rescale history kept for the topologies named ``name`` (None when none was ever rescaled); a
        topology's removal keeps it."""
        path = znodes.rescales(self.root, name)
        data = self.storage.get(path)
        value = None if data is None else decode_json(path, data)
        return dict(value) if isinstance(value, Mapping) else None

    # ------------------------------------------------------------------------------------------- cleanup
    def remove_topology(self, topology_id: str) -> None:
        """Remove everything kept about a topology: storm base, assignment, heartbeats, errors, log levels, creds."""
        self.remove_storm_base(topology_id)
        self.remove_assignment(topology_id)
        self.remove_worker_heartbeats(topology_id)
        self.remove_errors(topology_id)
        self.storage.delete(znodes.log_config(self.root, topology_id))
        self.remove_credentials(topology_id)
        self.remove_autoscale_events(topology_id)
        log.info("removed the cluster state of topology %s", topology_id)

    # ------------------------------------------------------------------------------------------ internals
    def _put(self, path: str, record: _Record, signed: bool = False) -> None:
        obj = record.to_json()
        if signed and self.signer is not None:
            obj = self.signer.sign(path, obj)
        self._write(path, obj)

    def _write(self, path: str, obj: Any) -> None:
        """Write ``obj`` as JSON at ``path``, refusing a record over :data:`MAX_RECORD_BYTES`."""
        data = encode_json(obj)
        if len(data) > MAX_RECORD_BYTES:
            raise StateError(
                f"refusing to write {len(data)} bytes at {path}: over the {MAX_RECORD_BYTES}-byte limit of a "
                "record (ZooKeeper refuses nodes over 1 MiB and drops the session that tries)",
                path=path, reason="too_large",
            )  # fmt: skip
        self.storage.set(path, data)

    def _read(self, path: str, parse: Callable[[Any], R], signed: bool = False) -> R | None:
        data = self.storage.get(path)
        if data is None:
            return None
        obj = decode_json(path, data)
        if signed and self.signer is not None:
            opened = self.signer.verify(path, obj) if isinstance(obj, Mapping) else None
            if opened is None:
                self.refused += 1
                log.error("refusing %s: its signature is missing or wrong (not written by this cluster's nimbus; "
                          "%d refused so far)", path, self.refused)  # fmt: skip
                return None
            obj = opened
        try:
            return parse(obj)
        except (KeyError, TypeError, ValueError) as err:
            raise StateError(f"znode {path} holds a malformed record: {err!r}", path=path) from err

    def _read_all(self, parent: str, parse: Callable[[Any], R], signed: bool = False) -> dict[str, R]:
        out: dict[str, R] = {}
        for name in self.storage.children(parent):
            value = self._read(znodes.join(parent, name), parse, signed)
            if value is not None:
                out[name] = value
        return out
