"""This module owns every ZooKeeper path of storm_py: pure functions from ids to znode paths, and back.

No other module joins path segments with ``"/"`` itself.  The layout follows Storm's under
``storm.zookeeper.root`` (``/storm`` by default)::

    storms/<topology-id>                                  storm base (one per live topology)
    assignments/<topology-id>                             assignment
    supervisors/<supervisor-id>                           supervisor info (ephemeral)
    workerbeats/<topology-id>/<node>-<port>               worker heartbeat
    errors/<topology-id>/<component-id>/e<seq>            reported errors (the last few)
    nimbuses/<host:port>                                  nimbus registration (ephemeral)
    leader-lock/<candidate>                               nimbus election candidates (ephemeral, sequential)
    blobstore/<key>/<host:port>                           which nimbus holds which blob key
    logconfigs/<topology-id>                              dynamic log levels
    credentials/<topology-id>                             credentials (``storm-py upload-credentials``)
    users/<name>                                          a user of the cluster (role, hash of its token)
    user-tokens/<sha256 of a token>                       which user a token hash belongs to

and under ``transactional.zookeeper.root`` (``/transactional``)::

    <tx-id>/coordinator/currtx, <tx-id>/coordinator/meta/<txid>, <tx-id>/user/<partition>/<txid>

and, for the Kafka spout's ZooKeeper offsets mode, storm-kafka's layout under the spout's own ``zk_root``::

    <zk_root>/<id>/partition_<n>              one topic
    <zk_root>/<id>/<topic>/partition_<n>      topics given by a pattern

Component ids and blob keys are free text, so they are percent-encoded into one znode name (as Storm does);
every other id must already be a valid znode name.  The module does no I/O.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from storm_py.errors import StateError

SEPARATOR = "/"
ROOT = SEPARATOR

STORMS = "storms"
ASSIGNMENTS = "assignments"
SUPERVISORS = "supervisors"
WORKERBEATS = "workerbeats"
ERRORS = "errors"
NIMBUSES = "nimbuses"
LEADER_LOCK = "leader-lock"
BLOBSTORE = "blobstore"
LOGCONFIGS = "logconfigs"
CREDENTIALS = "credentials"
USERS = "users"
USER_TOKENS = "user-tokens"
AUTOSCALE = "autoscale"
RESCALES = "rescales"

#: Prefix of the sequential nodes under ``errors/<topology>/<component>``.
ERROR_PREFIX = "e"
#: Width of the counter ZooKeeper appends to a sequential node's name.
SEQUENCE_DIGITS = 10

COORDINATOR = "coordinator"
CURRENT_TX = "currtx"
META = "meta"
USER = "user"


# --------------------------------------------------------------------------------------------- generic paths
def validate_name(name: str) -> str:
    """Return ``name`` if it can be one znode name; raise :class:`StateError` otherwise."""
    if not name or SEPARATOR in name or name in (".", "..") or "\x00" in name:
        raise StateError(f"invalid znode name {name!r}", name=name)
    return name


def normalize(path: str) -> str:
    """Return ``path`` as an absolute znode path without a trailing separator; reject malformed paths."""
    if not path.startswith(SEPARATOR):
        raise StateError(f"znode path must be absolute: {path!r}", path=path)
    if path == ROOT:
        return ROOT
    stripped = path.rstrip(SEPARATOR)
    for name in stripped.split(SEPARATOR)[1:]:
        try:
            validate_name(name)
        except StateError as err:
            raise StateError(f"invalid znode path {path!r}", path=path) from err
    return stripped


def join(parent: str, *names: str) -> str:
    """The path of ``names`` below ``parent`` (each name must be a single znode name)."""
    path = normalize(parent)
    for name in names:
        validate_name(name)
        path = path + name if path == ROOT else path + SEPARATOR + name
    return path


def parent(path: str) -> str:
    """The parent of ``path`` (the root is its own parent)."""
    path = normalize(path)
    head, _, _ = path.rpartition(SEPARATOR)
    return head or ROOT


def basename(path: str) -> str:
    """The last name of ``path`` ("" for the root)."""
    return normalize(path).rpartition(SEPARATOR)[2]


def ancestors(path: str) -> list[str]:
    """Every proper ancestor of ``path`` except the root, outermost first."""
    path = normalize(path)
    names = path.split(SEPARATOR)[1:-1]
    out: list[str] = []
    current = ROOT
    for name in names:
        current = join(current, name)
        out.append(current)
    return out


def is_within(path: str, ancestor: str) -> bool:
    """Whether ``path`` is ``ancestor`` or lies below it."""
    path, ancestor = normalize(path), normalize(ancestor)
    if ancestor == ROOT:
        return True
    return path == ancestor or path.startswith(ancestor + SEPARATOR)


def relative_to(path: str, ancestor: str) -> str:
    """``path`` with the ``ancestor`` prefix removed, as an absolute path (``/`` for ``ancestor`` itself)."""
    if not is_within(path, ancestor):
        raise StateError(f"{path!r} is not below {ancestor!r}", path=path, ancestor=ancestor)
    path, ancestor = normalize(path), normalize(ancestor)
    if ancestor == ROOT:
        return path
    return path[len(ancestor) :] or ROOT


def under(prefix: str, path: str) -> str:
    """The absolute ``path`` placed below ``prefix`` (a chroot); the inverse of :func:`relative_to`."""
    prefix, path = normalize(prefix), normalize(path)
    if prefix == ROOT:
        return path
    return prefix if path == ROOT else prefix + path


def sequence_of(name: str) -> int | None:
    """The counter ZooKeeper appended to a sequential node's ``name``, or None if it has none."""
    digits = name[-SEQUENCE_DIGITS:]
    if len(digits) != SEQUENCE_DIGITS or not digits.isdigit():
        return None
    return int(digits)


def sequential_name(prefix: str, counter: int) -> str:
    """The name ZooKeeper gives the ``counter``-th sequential child created with ``prefix``."""
    return f"{prefix}{counter:0{SEQUENCE_DIGITS}d}"


def encode_name(text: str) -> str:
    """Percent-encode free text (component ids, blob keys) into a single znode name."""
    if not text:
        raise StateError("an empty string cannot be a znode name")
    encoded = quote(text, safe="")
    # "." and ".." are not valid znode names; quote() leaves dots alone.
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


def decode_name(name: str) -> str:
    """The inverse of :func:`encode_name`."""
    return unquote(name)


# ----------------------------------------------------------------------------------------------- Storm layout
def storms(root: str) -> str:
    """Parent of the storm bases: one child per live topology."""
    return join(root, STORMS)


def storm(root: str, topology_id: str) -> str:
    """A topology's storm base."""
    return join(storms(root), topology_id)


def assignments(root: str) -> str:
    """Parent of the assignments."""
    return join(root, ASSIGNMENTS)


def assignment(root: str, topology_id: str) -> str:
    """A topology's assignment."""
    return join(assignments(root), topology_id)


def supervisors(root: str) -> str:
    """Parent of the supervisor registrations."""
    return join(root, SUPERVISORS)


def supervisor(root: str, supervisor_id: str) -> str:
    """A supervisor's registration (ephemeral)."""
    return join(supervisors(root), supervisor_id)


def workerbeats(root: str) -> str:
    """Parent of the per-topology worker heartbeat directories."""
    return join(root, WORKERBEATS)


def workerbeats_of(root: str, topology_id: str) -> str:
    """A topology's worker heartbeats."""
    return join(workerbeats(root), topology_id)


def worker_name(node: str, port: int) -> str:
    """The znode name of a worker slot: ``<node>-<port>``."""
    return validate_name(f"{node}-{int(port)}")


def parse_worker_name(name: str) -> tuple[str, int]:
    """The ``(node, port)`` a :func:`worker_name` was made from."""
    node, sep, port = name.rpartition("-")
    if not sep or not node or not port.isdigit():
        raise StateError(f"not a worker heartbeat name: {name!r}", name=name)
    return node, int(port)


def workerbeat(root: str, topology_id: str, node: str, port: int) -> str:
    """One worker's heartbeat."""
    return join(workerbeats_of(root, topology_id), worker_name(node, port))


def errors(root: str) -> str:
    """Parent of the per-topology error directories."""
    return join(root, ERRORS)


def errors_of(root: str, topology_id: str) -> str:
    """A topology's errors, one child per component (percent-encoded component id)."""
    return join(errors(root), topology_id)


def component_errors(root: str, topology_id: str, component_id: str) -> str:
    """A component's reported errors, one sequential child per error."""
    return join(errors_of(root, topology_id), encode_name(component_id))


def error_prefix(root: str, topology_id: str, component_id: str) -> str:
    """The path to create a component's next error at (sequential)."""
    return join(component_errors(root, topology_id, component_id), ERROR_PREFIX)


def error(root: str, topology_id: str, component_id: str, name: str) -> str:
    """One reported error, by the name its sequential creation gave it."""
    return join(component_errors(root, topology_id, component_id), name)


def nimbuses(root: str) -> str:
    """Parent of the nimbus registrations."""
    return join(root, NIMBUSES)


def nimbus_id(host: str, port: int) -> str:
    """A nimbus's identity: ``host:port``."""
    return validate_name(f"{host}:{int(port)}")


def nimbus(root: str, host: str, port: int) -> str:
    """A nimbus's registration (ephemeral)."""
    return join(nimbuses(root), nimbus_id(host, port))


def leader_lock(root: str) -> str:
    """The nimbus leader election directory."""
    return join(root, LEADER_LOCK)


def blobstore(root: str) -> str:
    """Parent of the blob key registry."""
    return join(root, BLOBSTORE)


def blob(root: str, key: str) -> str:
    """A blob key's entry; its children name the nimbuses holding it."""
    return join(blobstore(root), encode_name(key))


def blob_holder(root: str, key: str, holder_id: str) -> str:
    """One nimbus's claim to hold a blob key."""
    return join(blob(root, key), holder_id)


def log_config(root: str, topology_id: str) -> str:
    """A topology's dynamic log levels (``storm set_log_level``), read by its workers."""
    return join(root, LOGCONFIGS, topology_id)


def credentials(root: str, topology_id: str) -> str:
    """A topology's credentials (``storm upload-credentials``), read by its workers."""
    return join(root, CREDENTIALS, topology_id)


def users(root: str) -> str:
    """Parent of the cluster's users."""
    return join(root, USERS)


def user(root: str, name: str) -> str:
    """One user of the cluster (``storm-py users``)."""
    return join(users(root), name)


def user_token(root: str, token_hash: str) -> str:
    """The index entry naming the user a token hash belongs to."""
    return join(root, USER_TOKENS, token_hash)


def autoscale_root(root: str) -> str:
    """Parent of the topologies' autoscaler events."""
    return join(root, AUTOSCALE)


def autoscale(root: str, topology_id: str) -> str:
    """A topology's autoscaler events (its decisions and diagnoses), written by the leading nimbus."""
    return join(autoscale_root(root), topology_id)


def rescales(root: str, name: str) -> str:
    """The rescale history of the topologies named ``name`` (their keyed state's layout), written by the leading
    nimbus at each task rescale and kept across kills: a resubmit reads its state where the last rescale left it."""
    return join(root, RESCALES, validate_name(name))


def topology_scope(root: str, path: str) -> tuple[str, bool] | None:
    """``(topology_id, writable)`` when ``path`` belongs to one topology, else None.

    A topology's storm base, assignment, log levels and credentials are its to read (``writable`` False); its
    heartbeats and errors, and everything below them, are its to write (True).  Used to give a topology's workers
    access (ACLs).
    """
    if not is_within(path, root):
        return None
    names = relative_to(path, root).split(SEPARATOR)[1:]
    if len(names) < 2:
        return None
    if names[0] in (STORMS, ASSIGNMENTS, LOGCONFIGS, CREDENTIALS) and len(names) == 2:
        return names[1], False
    if names[0] in (WORKERBEATS, ERRORS):
        return names[1], True
    return None


# ------------------------------------------------------------------------------------------ transactional
def transactional(tx_root: str, tx_id: str, *parts: str) -> str:
    """A path of a transactional topology's state: ``<tx_root>/<tx_id>/<parts...>``."""
    return join(tx_root, tx_id, *parts)


def tx_current(tx_root: str, tx_id: str) -> str:
    """The coordinator's current transaction."""
    return transactional(tx_root, tx_id, COORDINATOR, CURRENT_TX)


def tx_meta_dir(tx_root: str, tx_id: str) -> str:
    """Parent of the coordinator's per-transaction metadata."""
    return transactional(tx_root, tx_id, COORDINATOR, META)


def tx_meta(tx_root: str, tx_id: str, txid: int | str) -> str:
    """The coordinator's metadata of transaction ``txid``."""
    return transactional(tx_root, tx_id, COORDINATOR, META, str(txid))


def tx_user_dir(tx_root: str, tx_id: str, partition: int | str) -> str:
    """Parent of a partition's per-transaction user state."""
    return transactional(tx_root, tx_id, USER, str(partition))


def tx_user(tx_root: str, tx_id: str, partition: int | str, txid: int | str) -> str:
    """A partition's user state for transaction ``txid``."""
    return transactional(tx_root, tx_id, USER, str(partition), str(txid))


# ---------------------------------------------------------------------------------------- kafka offsets
KAFKA_PARTITION_PREFIX = "partition_"


def kafka_spout_root(zk_root: str, spout_id: str) -> str:
    """A Kafka spout's offsets root, ``<zk_root>/<id>``: its topology's own (see :mod:`storm_py.cluster_state.acl`)."""
    return join(normalize(zk_root), validate_name(spout_id))


def kafka_spout_partition(zk_root: str, spout_id: str, partition: int, topic: str | None = None) -> str:
    """storm-kafka's offset znode: ``<zk_root>/<id>/partition_<n>`` (``<zk_root>/<id>/<topic>/partition_<n>``
    when the spout reads topics by pattern)."""
    parts = [validate_name(spout_id)]
    if topic is not None:
        parts.append(validate_name(topic))
    return join(normalize(zk_root), *parts, f"{KAFKA_PARTITION_PREFIX}{int(partition)}")
