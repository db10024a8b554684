"""The table of every config key storm_py reads: its type, default, allowed values and who reads it.

This table is the single source of truth.  ``defaults.yaml`` (package data, what operators read) is generated
from it — ``python -m storm_py.config > storm_py/config/defaults.yaml`` — and a test fails when the two
differ, when the code reads a key that is not declared here, or when a declared key is read by nothing.

Adding a key is one line in the section of the part that reads it (a new part adds a section)::

    Key("kafka.spout.poll.timeout.ms", INT, 200, "kafka spout", "longest wait of one poll", min=0),

then regenerate ``defaults.yaml``.  Values are checked against the table when a config is loaded and when a
topology is submitted; an error names the key.  Code reads a key through :func:`setting` (or a conf already
merged with the defaults), so each default is stated here only: a literal fallback such as
``conf.get(key) or 30`` fails a test.  A key no storm_py code reads says why in ``not_read``.
"""

# ruff: noqa: E501  (one line per key, by design)
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

#: Kinds of values.  ``NUMBER`` accepts ints and floats; ``STRS`` a list of strings; ``PORTS`` a list of ports.
INT, NUMBER, BOOL, STR, STRS, PORTS, LIST, MAP = "int", "number", "bool", "str", "strs", "ports", "list", "map"
#: a mapping, or a string holding one as JSON
MAP_OR_JSON = "map-or-json"
#: an integer, or a mapping of names to integers (a value for all components, or one per component)
INT_OR_MAP = "int-or-map"


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
    #: why no storm_py code reads the key (it is passed through to the topology's own code, or accepted for
    #: compatibility); empty for every key storm_py reads, which a test checks both ways
    not_read: str = ""

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
        Key("storm.zookeeper.start.wait.secs", NUMBER, 300, "nimbus, supervisor", "how long a daemon started before its ZooKeeper keeps trying to reach it, saying so at each attempt (0: fail at once)", min=0),
        Key("storm.zookeeper.auth.scheme", STR, None, "all daemons", "ZooKeeper auth scheme of the cluster identity (digest)", choices=("digest",)),
        Key("storm.zookeeper.auth.payload", STR, None, "all daemons", "\"user:password\" of the cluster's ZooKeeper identity; when set every znode is readable and writable by it only (keep it secret)"),
        Key("storm.zookeeper.topology.auth.scheme", STR, None, "workers", "ZooKeeper auth scheme of a topology's identity (digest)", choices=("digest",)),
        Key("storm.zookeeper.topology.auth.payload", STR, None, "workers", "\"user:password\" of a topology's ZooKeeper identity (derived from the cluster's when unset)"),
        Key("storm.zookeeper.workers.auth.payload", STR, None, "workers", "identity every worker holds to add nodes under shared roots outside storm.zookeeper.root (supervisors hand it over)"),
        Key("storm.zookeeper.topology.name.auth.payload", STR, None, "workers", "identity of a topology's name, owning its Kafka spouts' ZooKeeper offsets roots (supervisors derive it from the cluster's and hand it over)"),
        Key("storm.zookeeper.superACL", STR, None, "workers", "\"digest:user:hash\" granted everything on the nodes a topology's workers create"),
        Key("storm.local.dir", STR, ".storm-py", "nimbus, supervisor", "supervisor id, downloaded code, nimbus blobs"),
        Key("storm.local.hostname", STR, "127.0.0.1", "supervisor, worker", "name workers and log viewers bind and peers connect to (127.0.0.1: this machine only; a cluster of several hosts sets it on each)"),
        Key("storm.log.dir", STR, "logs", "supervisor, logs command", "workers' logs under <dir>/workers-artifacts/"),
        Key("transactional.zookeeper.root", STR, "/transactional", "transactional topologies", "root of transactional state"),
        Key("dev.zookeeper.path", STR, "dev-zookeeper", "dev-zookeeper command", "data directory of the dev ZooKeeper"),
    ),
    "nimbus": (
        Key("nimbus.seeds", STRS, ["127.0.0.1"], "clients, supervisors", "where to look for the leading nimbus"),
        Key("nimbus.host", STR, "127.0.0.1", "nimbus", "this nimbus's advertised host"),
        Key("nimbus.bind.host", STR, None, "nimbus", "interface the API listens on (default: nimbus.host)"),
        Key("nimbus.thrift.port", INT, 6627, "nimbus, clients", "port of nimbus's HTTP/JSON API", min=0, max=65535),
        Key("nimbus.auth.token", STR, None, "nimbus, supervisor, ui, drpc, clients", "bearer token every HTTP route needs but /health and the UI's files (unset: a daemon generates one into storm-py.token, mode 0600, beside its --config file, else in storm.local.dir; clients read that file)"),
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
        Key("storm.scheduler", STR, "even", "nimbus", "how nimbus places executors: even (Storm's even scheduler: topology.workers slots spread over supervisors) or resource_aware (Storm's Resource Aware Scheduler: components' memory, CPU and generic resources against supervisors' capacities, topology priorities, user pools); Storm's class names are accepted", choices=("even", "resource_aware", "org.apache.storm.scheduler.EvenScheduler", "org.apache.storm.scheduler.DefaultScheduler", "org.apache.storm.scheduler.resource.ResourceAwareScheduler")),
        Key("resource.aware.scheduler.user.pools", MAP, None, "nimbus", "resource_aware: each user's guaranteed resources, {user: {\"cpu\": percent, \"memory\": MB}}; topologies of a user within its guarantee go first and may evict topologies of users beyond theirs"),
        Key("nimbus.credentials.max.bytes", INT, 65536, "nimbus", "largest credentials upload (storm-py upload-credentials), its JSON encoded; more is refused with 413", min=1, max=1000000),
    ),
    "clients": (
        Key("storm.nimbus.retry.times", INT, 5, "clients", "retries while nimbus is unreachable", min=0),
        Key("storm.nimbus.retry.interval.millis", NUMBER, 2000, "clients", "first retry delay", min=0),
        Key("storm.nimbus.retry.intervalceiling.millis", NUMBER, 60000, "clients", "longest retry delay", min=0),
        Key("storm.nimbus.retry.refused.secs", NUMBER, 3, "clients", "how long a refused connection (nothing listens) is retried", min=0),
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
        Key("supervisor.memory.capacity.mb", NUMBER, 4096, "supervisor, nimbus", "resource_aware: memory (MB) this supervisor offers its workers", min=0),
        Key("supervisor.cpu.capacity", NUMBER, 400, "supervisor, nimbus", "resource_aware: CPU this supervisor offers, in percent of a core (400: four cores)", min=0),
        Key("supervisor.resources.map", MAP, None, "supervisor, nimbus", "resource_aware: generic resources this supervisor offers, {name: amount} (e.g. {\"gpu.count\": 2})"),
        Key("worker.heartbeat.frequency.secs", NUMBER, 1, "worker", "how often a worker heartbeats", min=0),
        Key("worker.log.level.reset.poll.secs", NUMBER, 30, "worker", "how often a worker reads set_log_level's levels", min=0),
        Key("task.credentials.poll.secs", NUMBER, 30, "worker", "how often a worker reads its topology's credentials and hands changed ones to set_credentials (Storm's)", min=0),
        Key("worker.profiler.command", STR, "py-spy", "supervisor", "py-spy executable (on the PATH or beside the supervisor's Python) the supervisor takes workers' stack dumps and CPU flame graphs with; empty or not found: the workers sample themselves in process"),
        Key("worker.profiler.memory.trace.secs", INT, 10, "supervisor", "seconds tracemalloc traces a worker's allocations before a memory snapshot (dumpheap) is taken", min=1, max=3600),
        Key("worker.profiler.poll.secs", NUMBER, 1, "worker", "how often a worker looks for profiling requests its supervisor left in its directory", min=0.01),
        Key("worker.gc.threshold0", INT, 100000, "worker, LocalCluster", "CPython's generation-0 collection threshold in a worker process (CPython's default: 700; 0: no automatic collection); a LocalCluster sets it in its own process, until it shuts down, only when its daemon_conf names the key", min=0),
        Key("zmq.hwm", INT, 100, "worker", "frames queued per peer socket before the sender holds back", min=1),
        Key("zmq.socket.buffer.bytes", INT, None, "worker", "kernel send/receive buffer of each worker TCP socket (null: the kernel's own sizing; at least 64 KiB, since a buffer below one loopback segment stalls TCP)", min=65536),
        Key("zmq.max.message.bytes", INT, 16777216, "worker", "largest frame a worker accepts; a peer sending more is disconnected (-1: no limit)", min=-1),
        Key("storm.messaging.encryption", STR, "none", "worker", "worker traffic encryption: none (frames carry the topology's tag) or curve (ZeroMQ CURVE with per-topology keys derived from the cluster secret, besides the tags)", choices=("none", "curve")),
        Key("logviewer.host", STR, None, "supervisor", "interface the log viewer binds (default: storm.local.hostname)"),
        Key("logviewer.port", INT, 8000, "supervisor", "log viewer port (0: a free port)", min=0, max=65535),
        Key("logviewer.max.per.worker.logs.size.mb", NUMBER, 2048, "supervisor", "a worker's logs (worker.log, .out, .err and one backup each) stay under this", min=0.001),
        Key("logviewer.max.search.reply.bytes", INT, 8388608, "supervisor", "a log search reply (search, deepSearch over all ports) carries at most this many bytes of matches; the rest is paged with nextByteOffset", min=65536),
        Key("logviewer.cleanup.age.mins", NUMBER, 10080, "supervisor", "a gone worker's artifacts are removed after this long untouched", min=0),
    ),
    "topology": (
        Key("topology.name", STR, None, "nimbus", "set by nimbus to the submitted name", not_read="the topology's own code reads it, as in Storm; storm_py itself knows the name from the assignment"),
        Key("topology.workers", INT, 1, "nimbus, worker", "worker processes of the topology", min=1),
        Key("topology.acker.executors", INT, None, "nimbus", "acker tasks (null: one per worker; 0: no acking)", min=0),
        Key("topology.ras.acker.executors.per.worker", INT, 1, "nimbus", "ackers per worker when the above is null", min=0),
        Key("topology.tracing.otlp.endpoint", STR, None, "worker", "OTLP/HTTP traces URL (e.g. http://collector:4318/v1/traces) the workers send spans of sampled tuple trees to; null: no tracing"),
        Key("topology.tracing.sample.percent", NUMBER, None, "worker", "percentage of tuple trees traced (decided by root id, the same in every worker); null: the topology's debug sampling percentage (0 while debugging is off)", min=0, max=100),
        Key("topology.eventlogger.executors", INT, 0, "nimbus, worker", "__eventlogger tasks writing the emits debug sampling picks to each worker's events.log (0: none, debug sampling logs nothing)", min=0),
        Key("topology.component.resources.onheap.memory.mb", NUMBER, 128, "nimbus, flux", "resource_aware: on-heap memory (MB) of each executor of a component (set_memory_load; Flux's onHeapMemoryLoad)", min=0, per_component=True),
        Key("topology.component.resources.offheap.memory.mb", NUMBER, 0, "nimbus, flux", "resource_aware: off-heap memory (MB) of each executor of a component (set_memory_load; Flux's offHeapMemoryLoad)", min=0, per_component=True),
        Key("topology.component.cpu.pcore.percent", NUMBER, 10, "nimbus, flux", "resource_aware: CPU of each executor of a component, in percent of a core (set_cpu_load; Flux's cpuLoad)", min=0, per_component=True),
        Key("topology.component.resources.map", MAP, None, "nimbus", "resource_aware: generic resources of each executor of a component, {name: amount} (add_resource)", per_component=True),
        Key("topology.priority", INT, 29, "nimbus", "resource_aware: the topology's priority, lower is more important; a more important topology that does not fit evicts less important ones", min=0),
        Key("topology.scheduler.strategy", STR, "default", "nimbus", "resource_aware: how executors are placed: default (fill a node before the next, communicating executors together) or constraint (default plus topology.ras.constraints and topology.spread.components); Storm's class names are accepted", choices=("default", "constraint", "org.apache.storm.scheduler.resource.strategies.scheduling.DefaultResourceAwareStrategy", "org.apache.storm.scheduler.resource.strategies.scheduling.ConstraintSolverStrategy")),
        Key("topology.ras.constraints", LIST, None, "nimbus", "constraint strategy: pairs [component, component] whose executors never share a worker"),
        Key("topology.spread.components", STRS, None, "nimbus", "constraint strategy: components whose executors each run on a different supervisor"),
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
        Key("topology.skip.missing.kryo.registrations", BOOL, False, "nimbus, worker", "a topology.kryo.register class or serializer that does not import is skipped with a warning naming it, instead of failing the submit"),
    ),
    "windows": (
        Key("topology.bolts.window.length.count", INT, None, "windowed bolts", "window length in tuples (set by with_window)", min=1, per_component=True),
        Key("topology.bolts.window.length.duration.ms", INT, None, "windowed bolts", "window length in ms (set by with_window)", min=1, per_component=True),
        Key("topology.bolts.sliding.interval.count", INT, None, "windowed bolts", "the window slides every this many tuples (null with no duration either: every tuple)", min=1, per_component=True),
        Key("topology.bolts.sliding.interval.duration.ms", INT, None, "windowed bolts", "the window slides every this many ms", min=1, per_component=True),
        Key("topology.bolts.tuple.timestamp.field.name", STR, None, "windowed bolts", "event time: the tuple field holding the timestamp in ms (set by with_timestamp_field)", per_component=True),
        Key("topology.bolts.tuple.timestamp.max.lag.ms", INT, 0, "windowed bolts", "event time: how far out of order timestamps may be (the watermark trails the latest by this)", min=0, per_component=True),
        Key("topology.bolts.watermark.event.interval.ms", INT, 1000, "windowed bolts", "event time: ms between watermarks", min=1, per_component=True),
        Key("topology.bolts.late.tuple.stream", STR, None, "windowed bolts", "event time: stream late tuples are emitted on as [late_tuple] (null: acked and logged)", per_component=True),
        Key("topology.bolts.message.id.field.name", STR, None, "stateful windowed bolts", "the input field holding each tuple's message id, an int increasing per source task and stream (set by with_message_id_field; required without with_persistence)", per_component=True),
    ),
    "async bolts": (
        Key("topology.async.max.in.flight", INT, 100, "async bolts", "executions of an AsyncBolt in flight per task (started, not yet acked or failed); a full task takes no more input", min=1, per_component=True),
        Key("topology.async.execute.timeout.secs", NUMBER, None, "async bolts", "seconds one execution of an AsyncBolt may run before it is cancelled and its input failed (null: topology.message.timeout.secs; a positive number)", per_component=True),
        Key("topology.async.output.mode", STR, "ordered", "async bolts", "ordered: an input's emits, then its ack, are released after every earlier input of its task completed; unordered: as they are made", choices=("ordered", "unordered"), per_component=True),
    ),
    "drpc": (
        Key("drpc.servers", STRS, None, "drpc spouts, drpc-client", "DRPC servers (\"host\" or \"host:port\"; topologies add drpc.invocations.port, clients drpc.port)"),
        Key("drpc.host", STR, "127.0.0.1", "drpc", "interface the DRPC server's three ports listen on"),
        Key("drpc.port", INT, 3772, "drpc, drpc-client", "port of the DRPC server for clients (0: a free port)", min=0, max=65535),
        Key("drpc.invocations.port", INT, 3773, "drpc, drpc spouts", "port of the DRPC server for topologies: fetch requests, return results (0: a free port)", min=0, max=65535),
        Key("drpc.http.port", INT, 3774, "drpc", "port of the DRPC server's HTTP endpoint GET /drpc/FUNC/ARGS, POST /drpc/FUNC (0: a free port; -1: off)", min=-1, max=65535),
        Key("drpc.request.timeout.secs", NUMBER, 600, "drpc, LocalDRPC", "a request not answered in this time fails with a timeout", min=0),
        Key("drpc.max.pending.requests", INT, 1000, "drpc, LocalDRPC", "requests waiting or in flight at once; more are refused as busy", min=1),
        Key("drpc.max.request.bytes", INT, 1048576, "drpc", "largest request body (function, arguments or result) accepted", min=1),
        Key("drpc.max.connections", INT, 1100, "drpc", "connections served at once per port; a client waiting for its result holds one", min=1),
        Key("drpc.connection.timeout.secs", NUMBER, 30, "drpc", "seconds a connection may stay silent while a request is read or a reply written", min=0),
    ),
    "multilang": (
        Key("topology.multilang.serializer", STR, "json", "shell components", "how shell components talk to their process: json (Storm's JsonSerializer; its class name is accepted too) or msgpack (pystorm's framing)", choices=("json", "msgpack", "org.apache.storm.multilang.JsonSerializer"), per_component=True),
        Key("topology.shellbolt.max.pending", INT, 100, "shell bolts", "tuples queued for a shell bolt's process and not yet written to it (Storm's pending-writes queue; what the process holds unanswered is bounded by its stdin pipe); execute blocks when this many wait", min=1, per_component=True),
        Key("topology.subprocess.timeout.secs", NUMBER, 30, "shell components", "a shell component's process that answers nothing (heartbeats included) this long is killed and restarted", min=0.001, per_component=True),
        Key("topology.multilang.max.message.bytes", INT, 67108864, "shell components", "largest message a shell component's process may write on stdout (a JSON document before its end line, a msgpack object); a longer one is a fault of the component and the worker holds no more of it", min=1048576, per_component=True),
        Key("topology.multilang.max.stderr.line.bytes", INT, 1048576, "shell components", "longest line a shell component's process may write on stderr (copied to the component's log); a longer one is a fault of the component and the worker holds no more of it", min=1024, per_component=True),
    ),
    "columnar streams": (
        Key("topology.vector.batch.size", INT, 1000, "vector bolts", "the most rows a batch gathered from a per-tuple stream holds (a vector bolt reading a per-tuple stream)", min=1, per_component=True),
        Key("topology.vector.batch.linger.ms", NUMBER, 10, "vector bolts", "how long a gathered batch waits for more rows after its first one (ms, on the cluster's clock)", min=0, per_component=True),
    ),
    "http security": (
        Key("storm.http.hosts", STRS, [], "nimbus, supervisor, ui, drpc", "further names clients and browsers may use in the Host header (a proxy's or DNS alias's); the configured hosts, localhost, this machine's name and IP addresses are always accepted"),
        Key("storm.tls.enabled", BOOL, False, "nimbus, supervisor, ui, drpc, clients", "serve and call every HTTP endpoint (REST API, UI, log viewer, DRPC) over TLS only"),
        Key("storm.tls.cert", STR, None, "nimbus, supervisor, ui, drpc", "PEM certificate (chain) the HTTP endpoints present; its names must cover the hosts clients use"),
        Key("storm.tls.key", STR, None, "nimbus, supervisor, ui, drpc", "PEM private key of storm.tls.cert"),
        Key("storm.tls.ca", STR, None, "clients, daemons calling each other", "PEM CA bundle clients verify servers against (unset: the system's CAs)"),
    ),
    "metrics": (
        Key("topology.metrics.consumer.register", LIST, None, "nimbus, executors", "metrics consumers: [{class: \"module:Class\", parallelism.hint, argument}]"),
        Key("topology.builtin.metrics.bucket.size.secs", NUMBER, 60, "workers", "seconds between built-in metrics sent to consumers", min=1),
    ),
    "state": (
        Key("topology.state.provider", STR, "memory", "nimbus, stateful components", "where managed state lives: \"memory\" (lost on kill), \"redis\", \"checkpoint_dir\" (files under a local path or fsspec URL; the default of dev-cluster and LocalCluster) or \"module:Class\" with new_state(namespace, conf, context)"),
        Key("topology.state.provider.config", MAP_OR_JSON, None, "state providers", "the provider's settings (a mapping or a JSON object); redis: host, port, database, password, key_prefix, timeout_secs; checkpoint_dir: url, compact_files, fsync, storage_options"),
        Key("topology.state.checkpoint.dir", STR, None, "state providers", "the url of the checkpoint_dir provider when topology.state.provider.config has none (dev-cluster and LocalCluster set it)"),
        Key("topology.state.checkpoint.interval.ms", INT, 1000, "checkpoint spout", "ms between checkpoints of a topology with stateful bolts (at least 100)", min=1),
        Key("topology.state.guarantee", STR, "at_least_once", "nimbus, stateful components", "at_least_once (Storm's: a recovery may count a tuple twice) or exactly_once (every spout a StatefulSpout)", choices=("at_least_once", "exactly_once")),
        Key("topology.state.max.parallelism", INT, 128, "nimbus, workers, stateful components", "the number of key groups of each component with keyed state: a key's group is its grouping values' hash mod this, fixed for the topology's life; the component's task count may never exceed it (rescale moves state by whole groups)", min=1),
        Key("topology.state.kind", STR, None, "nimbus, workers", "set by the checkpoint wiring on each component with managed state: key_value (a stateful bolt), window (a stateful windowed bolt), sink (a checkpointed sink) or position (a stateful spout); a key_value bolt behind fields groupings can change its task count", choices=(None, "key_value", "window", "sink", "position"), per_component=True),
        Key("topology.state.rescales", MAP, None, "nimbus, stateful components", "written by nimbus when a rebalance changes a component's task count (never set by hand): each component's first task id at submit, its rescale generation and the task count of its previous generation, which name the namespaces of its tasks' state"),
    ),
    "autoscaler": (
        Key("topology.autoscale.enabled", BOOL, False, "nimbus", "whether nimbus's autoscaler changes the topology's bolts' executors (within their tasks) to follow its load"),
        Key("topology.autoscale.min.parallelism", INT_OR_MAP, 1, "nimbus", "fewest executors of a bolt the autoscaler leaves: an integer for every bolt or {bolt: n}", min=1),
        Key("topology.autoscale.max.parallelism", INT_OR_MAP, None, "nimbus", "most executors of a bolt the autoscaler gives, never above its tasks: an integer for every bolt or {bolt: n} (null: its tasks)", min=1),
        Key("topology.autoscale.cooldown.secs", NUMBER, 120, "nimbus", "seconds after an autoscaler change (or start) before the next one", min=0),
        Key("topology.autoscale.target.capacity", NUMBER, 0.7, "nimbus", "share of its time a bolt's average executor should spend executing; the autoscaler sizes bolts for it and leaves them alone between half of it and halfway to 1", min=0.05, max=0.95),
        Key("topology.autoscale.period.secs", NUMBER, 60, "nimbus", "seconds between two samples of the topology's metrics the autoscaler reads", min=0.1),
        Key("topology.autoscale.rebalance.wait.secs", NUMBER, None, "nimbus", "seconds an autoscaler rebalance deactivates the topology before executors change (null: topology.message.timeout.secs)", min=0),
    ),
    "operations": (
        Key("storm.health.check.dir", STR, "healthchecks", "supervisor, node-health-check", "directory of the node health-check scripts (each executable runs; a non-zero exit or an output line starting with ERROR fails the node)"),
        Key("storm.health.check.timeout.ms", INT, 5000, "supervisor, node-health-check", "time each health-check script has", min=1),
        Key("storm.health.check.fail.on.timeouts", BOOL, True, "supervisor, node-health-check", "whether a script running out of time fails the node"),
        Key("topology.blobstore.map", MAP, None, "supervisor", "user blobs in each worker's directory: {blob key: {localname: name}} (localname defaults to the key)"),
    ),
    "dependencies": (
        Key("topology.dependencies.max.size.mb", NUMBER, 150, "submit command", "largest wheelhouse (the resolved wheels of a topology's requirements) a submit uploads, in MiB", min=0),
        Key("topology.dependencies.resolve.timeout.secs", NUMBER, 600, "submit command", "longest pip may take to resolve a topology's requirements at submit", min=1),
        Key("supervisor.env.cleanup.secs", NUMBER, 60, "supervisor", "a topology environment (virtualenv) is removed this long after its last topology is gone", min=0),
        Key("supervisor.env.build.timeout.secs", NUMBER, 600, "supervisor", "longest the offline build of a topology environment may take", min=1),
        Key("storm.package.max.unpacked.mb", NUMBER, 1024, "nimbus, supervisor", "largest total unpacked size of a topology package, and of each wheel of its wheelhouse, in MiB (checked from the zip's directory at upload and before unpacking, and enforced while unpacking)", min=0.001),
        Key("storm.package.max.compression.ratio", NUMBER, 200, "nimbus, supervisor", "largest unpacked/packed size of one member (over 1 MiB unpacked) of a topology package or wheel", min=1),
        Key("storm.package.max.members", INT, 100000, "nimbus, supervisor", "most members a topology package, or one wheel of its wheelhouse, may hold", min=1),
    ),
    "shared cluster": (
        Key("nimbus.admins", STRS, [], "nimbus", "user names with every right (as role admin); the cluster's nimbus.auth.token is an admin's too"),
        Key("topology.submitter.user", STR, None, "nimbus, supervisor", "who submitted the topology (set by nimbus from the submitter's token; only an admin may name another user); its workers run as this OS user under supervisor.run.worker.as.user"),
        Key("topology.users", STRS, [], "nimbus", "users who may kill, rebalance, activate, deactivate, debug and profile the topology and read its pages, metrics and logs (its submitter may always)"),
        Key("topology.readonly.users", STRS, [], "nimbus", "users who may read the topology's pages, metrics and logs"),
        Key("drpc.authorizer.acl", MAP, None, "drpc", "who may invoke which DRPC function: {function: {\"client.users\": [names]}}; a function not listed is open to every user (unset: no DRPC ACL)"),
        Key("supervisor.run.worker.as.user", BOOL, False, "supervisor", "a supervisor running as root starts each topology's workers as the topology's OS user (topology.submitter.user, mapped by supervisor.worker.user.map)"),
        Key("supervisor.worker.python", STR, None, "supervisor", "the Python interpreter workers run on, unless their topology brings a wheelhouse (unset: the supervisor's own); under supervisor.run.worker.as.user it must be one the workers' OS users may run"),
        Key("supervisor.worker.user.map", MAP, None, "supervisor", "submitter name -> OS user its workers run as under supervisor.run.worker.as.user (a submitter not listed runs as the OS user of its own name)"),
        Key("topology.worker.max.heap.size.mb", NUMBER, None, "supervisor", "a worker whose resident memory (RSS) passes this many MiB is killed and the topology's errors name the limit (unset: no limit)", min=1),
    ),
    "resource isolation": (
        Key("storm.resource.isolation.plugin.enable", BOOL, False, "supervisor", "put each worker in a cgroup of its own, with its memory and CPU limits from its resources (storm.resource.isolation.plugin); a supervisor that cannot fails at start naming the key and the directory"),
        Key("storm.resource.isolation.plugin", STR, "org.apache.storm.container.cgroup.CgroupManager", "supervisor", "the isolation of storm.resource.isolation.plugin.enable: workers in cgroups (Storm's class name or storm_py's)", choices=("org.apache.storm.container.cgroup.CgroupManager", "storm_py.supervisor.cgroups.CgroupManager")),
        Key("storm.cgroup.hierarchy.dir", STR, "/sys/fs/cgroup", "supervisor", "where the cgroup file system is mounted: one folder per controller (cgroup v1: memory/, cpu/) or the unified hierarchy (cgroup v2); workers' cgroups are storm-py/<supervisor id>/<worker id> under it"),
        Key("storm.cgroup.memory.enforcement.enable", BOOL, False, "supervisor", "under storm.resource.isolation.plugin.enable, the kernel holds each worker to its memory (its assigned on-heap + off-heap memory under the resource aware scheduler, else topology.worker.max.heap.size.mb) in place of the supervisor's RSS watch; a worker it kills puts the limit on its topology's errors"),
    ),
    "accepted for compatibility": (
        Key("topology.spout.wait.strategy", STR, None, "components' own code", "Storm's spout wait strategy class", per_component=True, not_read="accepted so Storm topologies' confs load and reach the components; storm_py's spout executor paces idle spouts itself"),
        Key("topology.sleep.spout.wait.strategy.time.ms", INT, None, "components' own code", "the sleep of Storm's sleep spout wait strategy", min=0, per_component=True, not_read="as topology.spout.wait.strategy"),
    ),
    "load-aware messaging": (
        Key("topology.disable.loadaware.messaging", BOOL, False, "workers", "shuffle and local-or-shuffle go round robin instead of preferring less loaded targets"),
        Key("topology.localityaware.higher.bound", NUMBER, 0.8, "workers", "local-or-shuffle spreads over every target while its worker's targets' mean load is above this", min=0, max=1),
        Key("topology.localityaware.lower.bound", NUMBER, 0.2, "workers", "local-or-shuffle comes back to its worker's targets once the mean load of all is below this", min=0, max=1),
    ),
}

#: Storm's per-component keys that storm_py passes through to components without reading them itself.
PASS_THROUGH_COMPONENT_KEYS = frozenset(k.name for keys in SECTIONS.values() for k in keys if k.not_read and k.per_component)


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


def setting(conf: Mapping[str, Any], name: str) -> Any:
    """``conf``'s value of the declared key ``name``, else (absent or null) the default declared above.

    Code reads a key's default only through here (or a conf already merged with the defaults), never from a
    literal of its own; an undeclared ``name`` raises ``KeyError``.
    """
    value = conf.get(name)
    return KEYS[name].default if value is None else value
