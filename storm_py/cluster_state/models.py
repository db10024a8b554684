"""This module owns the records kept in the cluster state and their JSON shapes (Storm's names, snake_case).

Each record converts with ``to_json()`` (a JSON-ready dict) and ``from_json(obj)`` (which raises ``KeyError``,
``TypeError`` or ``ValueError`` on malformed input;
:class:`~storm_py.cluster_state.cluster_state.ClusterState` turns those into :class:`~storm_py.errors.StateError`
naming the znode).  Unknown keys are ignored when reading, so a newer writer does not break an older
reader.  Executor ids are ``(start_task, end_task)`` pairs; a worker slot is a ``(node_id, port)`` pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast, get_args

from storm_py.cluster_state import znodes

ExecutorId = tuple[int, int]
NodePort = tuple[str, int]
TopologyStatus = Literal["active", "inactive", "killed", "rebalancing"]

TOPOLOGY_STATUSES: tuple[TopologyStatus, ...] = get_args(TopologyStatus)
#: a topology's status in its storm base (Storm's ``TopologyStatus``; nimbus's actions move between them)
ACTIVE: Final = "active"
INACTIVE: Final = "inactive"
KILLED: Final = "killed"
REBALANCING: Final = "rebalancing"


def spouts_active(status: str) -> bool:
    """Spouts call ``next_tuple`` only while the topology is active."""
    return status == ACTIVE


def _status(value: Any) -> TopologyStatus:
    if value not in TOPOLOGY_STATUSES:
        raise ValueError(f"unknown topology status {value!r}")
    return cast(TopologyStatus, value)


def _executor(value: Any) -> ExecutorId:
    start, end = value
    return int(start), int(end)


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return dict(value)


@dataclass(frozen=True, slots=True)
class StormBase:
    """A live topology's summary under ``storms/<topology-id>`` (Storm's ``StormBase``).

    ``launch_time`` is wall-clock seconds.  ``topology_action_options`` describes a pending timed transition,
    e.g. ``{"action": "kill", "delay_secs": 30}`` or ``{"action": "rebalance", "delay_secs": 10,
    "num_workers": 3, "num_executors": {"split": 4}}``.
    """

    name: str
    status: TopologyStatus
    launch_time: float
    num_workers: int
    component_executors: dict[str, int] = field(default_factory=dict)
    owner: str = ""
    topology_conf: dict[str, Any] = field(default_factory=dict)
    prev_status: TopologyStatus | None = None
    topology_action_options: dict[str, Any] | None = None
    component_debug: dict[str, Any] = field(default_factory=dict)
    component_tasks: dict[str, int] = field(default_factory=dict)
    spout_ids: list[str] = field(default_factory=list)
    #: each component's subscriptions ``[source, stream, grouping]`` (for the topology graph)
    component_inputs: dict[str, list[list[str]]] = field(default_factory=dict)
    #: each component's window and state keys, where they apply (shown on the topology page)
    component_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: what one executor of each component needs (its ``topology.component.resources.*`` and
    #: ``topology.component.cpu.pcore.percent`` keys), read by the resource aware scheduler
    component_resources: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready form."""
        return {
            "name": self.name,
            "status": self.status,
            "launch_time": self.launch_time,
            "num_workers": self.num_workers,
            "component_executors": dict(self.component_executors),
            "owner": self.owner,
            "topology_conf": dict(self.topology_conf),
            "prev_status": self.prev_status,
            "topology_action_options": self.topology_action_options,
            "component_debug": dict(self.component_debug),
            "component_tasks": dict(self.component_tasks),
            "spout_ids": list(self.spout_ids),
            "component_inputs": {k: [list(i) for i in v] for k, v in self.component_inputs.items()},
            "component_settings": {k: dict(v) for k, v in self.component_settings.items()},
            "component_resources": {k: dict(v) for k, v in self.component_resources.items()},
        }

    @classmethod
    def from_json(cls, obj: Any) -> StormBase:
        """Read the form written by :meth:`to_json`."""
        d = _mapping(obj)
        options = d.get("topology_action_options")
        prev = d.get("prev_status")
        return cls(
            name=str(d["name"]),
            status=_status(d["status"]),
            launch_time=float(d["launch_time"]),
            num_workers=int(d["num_workers"]),
            component_executors={
                str(k): int(v) for k, v in _mapping(d.get("component_executors", {})).items()
            },
            owner=str(d.get("owner", "")),
            topology_conf=_mapping(d.get("topology_conf", {})),
            prev_status=None if prev is None else _status(prev),
            topology_action_options=None if options is None else _mapping(options),
            component_debug=_mapping(d.get("component_debug", {})),
            component_tasks={str(k): int(v) for k, v in _mapping(d.get("component_tasks", {})).items()},
            spout_ids=[str(x) for x in d.get("spout_ids", [])],
            component_inputs={
                str(k): [[str(x) for x in i] for i in v] for k, v in _mapping(d.get("component_inputs", {})).items()
            },
            component_settings={
                str(k): _mapping(v) for k, v in _mapping(d.get("component_settings", {})).items()
            },
            component_resources={
                str(k): _mapping(v) for k, v in _mapping(d.get("component_resources", {})).items()
            },
        )


@dataclass(frozen=True, slots=True)
class Assignment:
    """Where a topology's executors run, under ``assignments/<topology-id>`` (Storm's ``Assignment``).

    ``node_host`` maps a supervisor id to its hostname; ``executor_node_port`` maps each executor to its slot;
    ``executor_start_time_secs`` is when each executor was (re)assigned, in wall-clock seconds.
    """

    node_host: dict[str, str] = field(default_factory=dict)
    executor_node_port: dict[ExecutorId, NodePort] = field(default_factory=dict)
    executor_start_time_secs: dict[ExecutorId, float] = field(default_factory=dict)

    def slots(self) -> dict[NodePort, list[ExecutorId]]:
        """The executors of each assigned worker slot, sorted."""
        out: dict[NodePort, list[ExecutorId]] = {}
        for executor, slot in sorted(self.executor_node_port.items()):
            out.setdefault(slot, []).append(executor)
        return out

    def slots_on(self, node_id: str) -> dict[int, list[ExecutorId]]:
        """The executors of each port this assignment gives supervisor ``node_id``."""
        return {port: executors for (node, port), executors in self.slots().items() if node == node_id}

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready form (executor maps become lists, since JSON keys are strings)."""
        return {
            "node_host": dict(self.node_host),
            "executor_node_port": [
                [start, end, node, port]
                for (start, end), (node, port) in sorted(self.executor_node_port.items())
            ],
            "executor_start_time_secs": [
                [start, end, secs] for (start, end), secs in sorted(self.executor_start_time_secs.items())
            ],
        }

    @classmethod
    def from_json(cls, obj: Any) -> Assignment:
        """Read the form written by :meth:`to_json`."""
        d = _mapping(obj)
        return cls(
            node_host={str(k): str(v) for k, v in _mapping(d.get("node_host", {})).items()},
            executor_node_port={
                (int(start), int(end)): (str(node), int(port))
                for start, end, node, port in d.get("executor_node_port", [])
            },
            executor_start_time_secs={
                (int(start), int(end)): float(secs)
                for start, end, secs in d.get("executor_start_time_secs", [])
            },
        )


@dataclass(frozen=True, slots=True)
class SupervisorInfo:
    """A supervisor's registration under ``supervisors/<supervisor-id>`` (Storm's ``SupervisorInfo``).

    ``ports`` are its configured slots; ``used_ports`` those running workers.  ``time_secs`` is the wall-clock
    time of the last heartbeat; ``logviewer_port`` where its log viewer listens (0: none).
    """

    hostname: str
    time_secs: float
    uptime_secs: float = 0.0
    ports: list[int] = field(default_factory=list)
    used_ports: list[int] = field(default_factory=list)
    version: str = ""
    scheduler_meta: dict[str, str] = field(default_factory=dict)
    resources: dict[str, float] = field(default_factory=dict)
    logviewer_port: int = 0

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready form."""
        return {
            "hostname": self.hostname,
            "logviewer_port": self.logviewer_port,
            "time_secs": self.time_secs,
            "uptime_secs": self.uptime_secs,
            "ports": list(self.ports),
            "used_ports": list(self.used_ports),
            "version": self.version,
            "scheduler_meta": dict(self.scheduler_meta),
            "resources": dict(self.resources),
        }

    @classmethod
    def from_json(cls, obj: Any) -> SupervisorInfo:
        """Read the form written by :meth:`to_json`."""
        d = _mapping(obj)
        return cls(
            hostname=str(d["hostname"]),
            time_secs=float(d["time_secs"]),
            uptime_secs=float(d.get("uptime_secs", 0.0)),
            ports=[int(p) for p in d.get("ports", [])],
            used_ports=[int(p) for p in d.get("used_ports", [])],
            version=str(d.get("version", "")),
            scheduler_meta={str(k): str(v) for k, v in _mapping(d.get("scheduler_meta", {})).items()},
            resources={str(k): float(v) for k, v in _mapping(d.get("resources", {})).items()},
            logviewer_port=int(d.get("logviewer_port", 0)),
        )


@dataclass(frozen=True, slots=True)
class WorkerHeartbeat:
    """A worker's heartbeat under ``workerbeats/<topology-id>/<node>-<port>`` (per worker, never per tuple).

    ``stats`` is an opaque JSON object of the worker's executor statistics (its shape belongs to the runtime).
    """

    topology_id: str
    executors: list[ExecutorId]
    time_secs: float
    uptime_secs: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready form."""
        return {
            "topology_id": self.topology_id,
            "executors": [[start, end] for start, end in self.executors],
            "time_secs": self.time_secs,
            "uptime_secs": self.uptime_secs,
            "stats": dict(self.stats),
        }

    @classmethod
    def from_json(cls, obj: Any) -> WorkerHeartbeat:
        """Read the form written by :meth:`to_json`."""
        d = _mapping(obj)
        return cls(
            topology_id=str(d["topology_id"]),
            executors=[_executor(e) for e in d.get("executors", [])],
            time_secs=float(d["time_secs"]),
            uptime_secs=float(d.get("uptime_secs", 0.0)),
            stats=_mapping(d.get("stats", {})),
        )


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """One error a component reported (Storm's ``ErrorInfo``); ``time_secs`` is wall-clock seconds."""

    error: str
    time_secs: float
    host: str = ""
    port: int = 0

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready form."""
        return {"error": self.error, "time_secs": self.time_secs, "host": self.host, "port": self.port}

    @classmethod
    def from_json(cls, obj: Any) -> ErrorInfo:
        """Read the form written by :meth:`to_json`."""
        d = _mapping(obj)
        return cls(
            error=str(d["error"]),
            time_secs=float(d["time_secs"]),
            host=str(d.get("host", "")),
            port=int(d.get("port", 0)),
        )


@dataclass(frozen=True, slots=True)
class NimbusInfo:
    """A nimbus's registration under ``nimbuses/<host:port>``; ``start_time`` is wall-clock seconds."""

    host: str
    port: int
    version: str = ""
    start_time: float = 0.0

    @property
    def id(self) -> str:
        """``host:port``, the nimbus's identity (also its election identifier)."""
        return znodes.nimbus_id(self.host, self.port)

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready form."""
        return {"host": self.host, "port": self.port, "version": self.version, "start_time": self.start_time}

    @classmethod
    def from_json(cls, obj: Any) -> NimbusInfo:
        """Read the form written by :meth:`to_json`."""
        d = _mapping(obj)
        return cls(
            host=str(d["host"]),
            port=int(d["port"]),
            version=str(d.get("version", "")),
            start_time=float(d.get("start_time", 0.0)),
        )


@dataclass(frozen=True, slots=True)
class Credentials:
    """A topology's credentials under ``credentials/<topology-id>`` (Storm's ``Credentials``): string keys to
    string values, uploaded by ``storm-py upload-credentials`` and handed to the topology's spouts and bolts."""

    creds: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready form."""
        return {"creds": dict(self.creds)}

    @classmethod
    def from_json(cls, obj: Any) -> Credentials:
        """Read the form written by :meth:`to_json` (every key and value must be a string)."""
        creds = _mapping(_mapping(obj)["creds"])
        for key, value in creds.items():
            if not isinstance(value, str):
                raise TypeError(f"credential {key!r} is a {type(value).__name__}, not a string")
        return cls(creds=creds)
