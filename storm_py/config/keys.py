"""The table of every config key storm_py reads: its type, default, allowed values and who reads it.

This table is the single source of truth.  ``defaults.yaml`` (package data, what operators read) is generated
from it — ``python -m storm_py.config > storm_py/config/defaults.yaml`` — and a test fails when the two
differ, when the code reads a key that is not declared here, or when a declared key is read by nothing.

Adding a key is one line in the section of the part that reads it (a new part adds a section)::

    Key("kafka.spout.poll.timeout.ms", INT, 200, "kafka spout", "longest wait of one poll", min=0),

then regenerate ``defaults.yaml``.  Values are checked against the table when a config is loaded and when a
topology is submitted; an error names the key.
"""

# ruff: noqa: E501  (one line per key, by design)
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

#: Kinds of values.  ``NUMBER`` accepts ints and floats; ``STRS`` a list of strings; ``PORTS`` a list of ports.
INT, NUMBER, BOOL, STR, STRS, PORTS, LIST, MAP = "int", "number", "bool", "str", "strs", "ports", "list", "map"


@dataclass(frozen=True)
class Key:
    """One config key.  ``default=None`` makes ``null`` an allowed value (Storm's "unset")."""

    name: str
    kind: str
    default: Any
    readers: str
    doc: str
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] | None = None
    per_component: bool = False  # a component's own conf may override it (Storm's whitelist)

    @property
    def nullable(self) -> bool:
        return self.default is None


SECTIONS: dict[str, tuple[Key, ...]] = {
    "cluster": (
        Key("storm.zookeeper.servers", STRS, ["127.0.0.1"], "all daemons", "ZooKeeper hosts (\"host\" or \"host:port\")"),
        Key("storm.zookeeper.port", INT, 2181, "all daemons", "ZooKeeper port of entries without one", min=1, max=65535),
        Key("storm.zookeeper.root", STR, "/storm", "all daemons", "root znode; clusters may share a ZooKeeper"),
        Key("storm.zookeeper.session.timeout", INT, 20000, "all daemons", "ms; ephemeral nodes vanish this long after a crash", min=1),
        Key("storm.zookeeper.connection.timeout", INT, 15000, "all daemons", "ms to wait for ZooKeeper at start", min=1),
        Key("storm.zookeeper.auth.scheme", STR, None, "all daemons", "ZooKeeper auth scheme of the cluster identity (digest)", choices=("digest",)),
        Key("storm.zookeeper.auth.payload", STR, None, "all daemons", "\"user:password\" of the cluster's ZooKeeper identity; when set every znode is readable and writable by it only (keep it secret)"),
        Key("storm.zookeeper.topology.auth.scheme", STR, None, "workers", "ZooKeeper auth scheme of a topology's identity (digest)", choices=("digest",)),
        Key("storm.zookeeper.topology.auth.payload", STR, None, "workers", "\"user:password\" of a topology's ZooKeeper identity (derived from the cluster's when unset)"),
        Key("storm.zookeeper.workers.auth.payload", STR, None, "workers", "identity every worker holds to add nodes under shared roots outside storm.zookeeper.root (supervisors hand it over)"),
        Key("storm.zookeeper.superACL", STR, None, "workers", "\"digest:user:hash\" granted everything on the nodes a topology's workers create"),
        Key("storm.local.dir", STR, ".storm-py", "nimbus, supervisor", "supervisor id, downloaded code, nimbus blobs"),
        Key("storm.local.hostname", STR, None, "supervisor, worker", "name workers and log viewers bind and peers connect to (default: 127.0.0.1, this machine only)"),
        Key("storm.log.dir", STR, "logs", "supervisor, logs command", "workers' logs under <dir>/workers-artifacts/"),
        Key("transactional.zookeeper.root", STR, "/transactional", "transactional topologies", "root of transactional state"),
        Key("dev.zookeeper.path", STR, "dev-zookeeper", "dev-zookeeper command", "data directory of the dev ZooKeeper"),
    ),
    "nimbus": (
        Key("nimbus.seeds", STRS, ["127.0.0.1"], "clients, supervisors", "where to look for the leading nimbus"),
        Key("nimbus.host", STR, "127.0.0.1", "nimbus", "this nimbus's advertised host"),
        Key("nimbus.bind.host", STR, None, "nimbus", "interface the API listens on (default: nimbus.host)"),
        Key("nimbus.thrift.port", INT, 6627, "nimbus, clients", "port of nimbus's HTTP/JSON API", min=0, max=65535),
        Key("nimbus.auth.token", STR, None, "nimbus, clients", "bearer token required by changing requests when set"),
        Key("nimbus.task.timeout.secs", NUMBER, 30, "nimbus", "a worker silent this long is reassigned", min=0),
        Key("nimbus.supervisor.timeout.secs", NUMBER, 60, "nimbus", "a supervisor silent this long loses its slots", min=0),
        Key("nimbus.monitor.freq.secs", NUMBER, 10, "nimbus", "how often the leader checks heartbeats", min=0),
        Key("nimbus.task.launch.secs", NUMBER, 120, "nimbus", "grace for a new worker's first heartbeat", min=0),
        Key("nimbus.slots.perTopology", INT, 1000, "nimbus", "most workers one topology may ask for (Storm: unlimited)", min=1),
        Key("nimbus.executors.perTopology", INT, 10000, "nimbus", "most executors one topology may have, ackers included (Storm: unlimited)", min=1),
        Key("nimbus.topology.validation.timeout.secs", NUMBER, 60, "nimbus", "limit for loading a submitted package", min=0),
        Key("topology.min.replication.count", INT, 1, "nimbus", "nimbuses holding a package before submit returns", min=1),
        Key("topology.max.replication.wait.time.secs", NUMBER, 60, "nimbus", "how long submit waits for that (-1: forever)", min=-1),
        Key("ui.host", STR, "127.0.0.1", "ui", "interface of storm-py ui"),
        Key("ui.port", INT, 8080, "ui", "port of storm-py ui (0: a free port)", min=0, max=65535),
    ),
    "clients": (
        Key("storm.nimbus.retry.times", INT, 5, "clients", "retries while nimbus is unreachable", min=0),
        Key("storm.nimbus.retry.interval.millis", NUMBER, 2000, "clients", "first retry delay", min=0),
        Key("storm.nimbus.retry.intervalceiling.millis", NUMBER, 60000, "clients", "longest retry delay", min=0),
    ),
    "supervisor / worker": (
        Key("supervisor.slots.ports", PORTS, [6700, 6701, 6702, 6703], "supervisor", "one worker process per port"),
        Key("supervisor.worker.timeout.secs", NUMBER, 30, "supervisor", "a worker with an older heartbeat is restarted", min=0),
        Key("supervisor.worker.start.timeout.secs", NUMBER, 120, "supervisor", "grace for a new worker's first heartbeat", min=0),
        Key("supervisor.worker.shutdown.sleep.secs", NUMBER, 3, "supervisor", "a stopped worker is killed after this long", min=0),
        Key("supervisor.monitor.frequency.secs", NUMBER, 3, "supervisor", "how often a supervisor syncs its slots", min=0),
        Key("supervisor.worker.restart.min.uptime.secs", NUMBER, 10, "supervisor", "dying younger starts a backoff streak", min=0),
        Key("supervisor.worker.restart.backoff.secs", NUMBER, 1, "supervisor", "first backoff of a streak", min=0),
        Key("supervisor.worker.restart.backoff.max.secs", NUMBER, 30, "supervisor", "longest backoff", min=0),
        Key("worker.heartbeat.frequency.secs", NUMBER, 1, "worker", "how often a worker heartbeats", min=0),
        Key("worker.log.level.reset.poll.secs", NUMBER, 30, "worker", "how often a worker reads set_log_level's levels", min=0),
        Key("worker.gc.threshold0", INT, 100000, "worker, LocalCluster", "CPython's generation-0 collection threshold in a worker process (CPython's default: 700; 0: no automatic collection); a LocalCluster sets it in its own process, until it shuts down, only when its daemon_conf names the key", min=0),
        Key("zmq.hwm", INT, 100, "worker", "frames queued per peer socket before the sender holds back", min=1),
        Key("zmq.socket.buffer.bytes", INT, None, "worker", "kernel send/receive buffer of each worker TCP socket (null: the kernel's own sizing; at least 64 KiB, since a buffer below one loopback segment stalls TCP)", min=65536),
        Key("zmq.max.message.bytes", INT, 16777216, "worker", "largest frame a worker accepts; a peer sending more is disconnected (-1: no limit)", min=-1),
        Key("logviewer.host", STR, None, "supervisor", "interface the log viewer binds (default: storm.local.hostname)"),
        Key("logviewer.port", INT, 8000, "supervisor", "log viewer port (0: a free port)", min=0, max=65535),
        Key("logviewer.max.per.worker.logs.size.mb", NUMBER, 2048, "supervisor", "a worker's logs (worker.log, .out, .err and one backup each) stay under this", min=0.001),
        Key("logviewer.cleanup.age.mins", NUMBER, 10080, "supervisor", "a gone worker's artifacts are removed after this long untouched", min=0),
    ),
    "topology": (
        Key("topology.name", STR, None, "nimbus", "set by nimbus to the submitted name"),
        Key("topology.workers", INT, 1, "nimbus, worker", "worker processes of the topology", min=1),
        Key("topology.acker.executors", INT, None, "nimbus", "acker tasks (null: one per worker; 0: no acking)", min=0),
        Key("topology.ras.acker.executors.per.worker", INT, 1, "nimbus", "ackers per worker when the above is null", min=0),
        Key("topology.eventlogger.executors", INT, 0, "nimbus, worker", "__eventlogger tasks writing the emits debug sampling picks to each worker's events.log (0: none, debug sampling logs nothing)", min=0),
        Key("topology.message.timeout.secs", NUMBER, 30, "nimbus, spouts, acker", "a tuple tree not done in this time fails", min=1),
        Key("topology.enable.message.timeouts", BOOL, True, "spouts, acker", "whether trees time out at all"),
        Key("topology.max.spout.pending", INT, None, "spouts", "unacked tuples per spout task (null: unbounded)", min=0, per_component=True),
        Key("topology.debug", BOOL, False, "executors", "log every emitted tuple to the worker log (\"Emitting: component stream values\")", per_component=True),
        Key("topology.max.task.parallelism", INT, None, "builder, nimbus", "cap on a component's tasks", min=0, per_component=True),
        Key("topology.tasks", INT, None, "builder, nimbus", "a component's tasks (null: its parallelism)", min=0, per_component=True),
        Key("topology.tick.tuple.freq.secs", NUMBER, None, "executors", "seconds between tick tuples (null: none)", min=0, per_component=True),
        Key("topology.executor.receive.buffer.size", INT, 32768, "worker", "tuples a worker queues before spouts pause", min=1),
        Key("topology.batch.flush.interval.millis", NUMBER, 1, "spouts", "a spout's emits leave its worker at least this often (ms; 0: after 128 next_tuple calls)", min=0),
        Key("topology.testing.always.try.serialize", BOOL, False, "LocalCluster, worker", "every emitted tuple goes through the codec, between the tasks of one worker too; between LocalCluster workers through the frames (on in the test kit)"),
        Key("topology.transactional.id", STR, None, "transactional topologies", "id of a transactional topology's state", per_component=True),
        Key("topology.auto.task.hooks", STRS, None, "executors", "task hooks (\"module:Class\", built without arguments) added to every task"),
        Key("topology.kryo.register", LIST, None, "nimbus, worker", "classes the codec carries: \"module:Class\" or {\"module:Class\": \"module:Serializer\"}; merged from every component, topology wins"),
        Key("topology.codec.register", LIST, None, "nimbus, worker", "the Python-named alias of topology.kryo.register (both apply)"),
        Key("topology.fall.back.on.java.serialization", BOOL, False, "nimbus, worker", "no fallback serializer exists (never pickle on the wire): true is refused"),
        Key("topology.kryo.decorators", STRS, None, "nimbus", "serialization decorators; union over the components"),
    ),
    "metrics": (
        Key("topology.metrics.consumer.register", LIST, None, "nimbus, executors", "metrics consumers: [{class: \"module:Class\", parallelism.hint, argument}]"),
        Key("topology.builtin.metrics.bucket.size.secs", NUMBER, 60, "workers", "seconds between built-in metrics sent to consumers", min=1),
    ),
}

#: Storm's per-component keys that storm_py passes through to components without reading them itself
#: (windowed and stateful bolts, spout wait strategies of Storm).
PASS_THROUGH_COMPONENT_KEYS = frozenset(
    {
        "topology.sleep.spout.wait.strategy.time.ms",
        "topology.spout.wait.strategy",
        "topology.bolts.window.length.count",
        "topology.bolts.window.length.duration.ms",
        "topology.bolts.sliding.interval.count",
        "topology.bolts.sliding.interval.duration.ms",
        "topology.bolts.tuple.timestamp.field.name",
        "topology.bolts.tuple.timestamp.max.lag.ms",
        "topology.bolts.message.id.field.name",
        "topology.state.provider",
        "topology.state.provider.config",
    }
)


def all_keys() -> Iterator[Key]:
    """Every declared key, in table order."""
    for keys in SECTIONS.values():
        yield from keys


KEYS: Mapping[str, Key] = {k.name: k for k in all_keys()}


def render_defaults_yaml() -> str:
    """The text of ``defaults.yaml``: every key with its default and a one-line comment."""
    lines = [
        "# storm_py defaults, generated from storm_py/config/keys.py: edit the table there, then run",
        "#   python -m storm_py.config > storm_py/config/defaults.yaml",
        "# Merge order: these < conf/storm.yaml (or --config FILE) < -c key=value < topology conf < component conf.",
    ]
    for section, keys in SECTIONS.items():
        lines += ["", f"### {section}"]
        for k in keys:
            lines.append(f"{k.name}: {json.dumps(k.default)}  # {k.doc} [{k.readers}]")
    return "\n".join(lines) + "\n"
