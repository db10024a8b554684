"""This module owns who may touch which znode: digest identities, ACL entries and the policy giving each new
node its ACL (pure; both storages apply it, the in-memory twin also enforces it the way ZooKeeper does).

Storm's model, with its keys:

* ``storm.zookeeper.auth.scheme: digest`` and ``storm.zookeeper.auth.payload: "user:password"`` — the cluster's
  identity (nimbus, supervisors, the CLI's admin commands).  Every node a cluster session creates is readable
  and writable by that identity only (ZooKeeper's ``CREATOR_ALL_ACL``), so a client without the payload can
  read nothing and write nothing.
* ``storm.zookeeper.topology.auth.scheme`` / ``.payload`` — a topology's identity, used by its workers.  A
  daemon derives it from the cluster payload (:func:`topology_payload`), so no copy of it is stored; the
  topology may read its storm base and assignment and owns its heartbeats, errors and transactional state.
* ``storm.zookeeper.superACL: "digest:user:hash"`` — the cluster identity as seen by a worker, which knows only
  its topology's payload: nodes a worker creates grant everything to it as well.
* ``storm.zookeeper.workers.auth.payload`` — one more identity every worker holds (derived from the cluster
  payload, :func:`workers_payload`): nodes under ``transactional.zookeeper.root`` grant it everything, because
  that state outlives a topology: a resubmitted topology (a new topology id, so a new topology identity)
  continues where the killed one stopped.  Inside the cluster's tree a topology reaches only its own nodes.
* ``storm.zookeeper.topology.name.auth.payload`` — an identity per topology *name* (derived from the cluster
  payload, :func:`topology_name_payload`; a resubmitted topology keeps it).  Outside the cluster's and the
  transactional roots (a Kafka spout's ZooKeeper offsets), a node a worker creates grants everything to its
  topology's name and nothing to other topologies: the first node a topology creates there is its own root.  The
  parents it creates on the way (``<zk_root>`` and above, :meth:`AclPolicy.parent_acl_for`) grant every worker
  READ and CREATE only, so each topology can add its own root beside the others but write under no other's.

ZooKeeper's permission rules, which :func:`allowed` and the twin follow: reading data or children needs READ on
the node, writing data WRITE on it, creating a child CREATE on the parent, deleting a child DELETE on the
parent; ``exists`` is open.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from storm_py.cluster_state import znodes
from storm_py.config.keys import setting
from storm_py.errors import ConfigError

READ, WRITE, CREATE, DELETE, ADMIN = 1, 2, 4, 8, 16
ALL = READ | WRITE | CREATE | DELETE | ADMIN

DIGEST = "digest"
WORLD = "world"
ANYONE = "anyone"


@dataclass(frozen=True, slots=True)
class AclEntry:
    """One ACL entry: ``perms`` granted to ``scheme:id`` (ZooKeeper's ``ACL``)."""

    perms: int
    scheme: str
    id: str

    def render(self) -> str:
        return f"{self.scheme}:{self.id}:{self.perms}"


Acl = tuple[AclEntry, ...]

#: ZooKeeper's ``OPEN_ACL_UNSAFE``: what every node gets when no identity is configured.
OPEN_ACL: Acl = (AclEntry(ALL, WORLD, ANYONE),)


def digest_id(payload: str) -> str:
    """The id ZooKeeper's digest scheme derives from ``"user:password"``: ``user:base64(sha1(payload))``."""
    user, sep, _password = payload.partition(":")
    if not sep or not user:
        raise ConfigError(f"a digest payload is 'user:password', got {len(payload)} characters without ':'")
    return f"{user}:{base64.b64encode(hashlib.sha1(payload.encode('utf-8')).digest()).decode('ascii')}"


def topology_payload(cluster_payload: str, topology_id: str) -> str:
    """A topology's digest payload, derived from the cluster's (only holders of the cluster secret can)."""
    mac = hmac.new(cluster_payload.encode("utf-8"), b"zk-topology\x00" + topology_id.encode("utf-8"), "sha256")
    return f"topology-{topology_id}:{mac.hexdigest()}"


def topology_name(topology_id: str) -> str:
    """The name of a topology from its id (``<name>-<counter>-<launch secs>``, as nimbus makes them)."""
    parts = topology_id.rsplit("-", 2)
    return parts[0] if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit() else topology_id


def topology_name_payload(cluster_payload: str, name: str) -> str:
    """The digest payload of a topology name (see the module docstring)."""
    mac = hmac.new(cluster_payload.encode("utf-8"), b"zk-topology-name\x00" + name.encode("utf-8"), "sha256")
    return f"name-{mac.hexdigest()[:16]}:{mac.hexdigest()}"


def workers_payload(cluster_payload: str) -> str:
    """The digest payload every worker holds (see the module docstring)."""
    mac = hmac.new(cluster_payload.encode("utf-8"), b"zk-workers", "sha256")
    return f"workers:{mac.hexdigest()}"


#: The environment variable through which a supervisor hands a worker its ZooKeeper identities (a JSON map of
#: config keys); the worker's config file holds none of the cluster's secrets.
WORKER_AUTH_ENV = "STORM_PY_WORKER_AUTH"


def worker_auth(conf: Mapping[str, Any], topology_id: str) -> dict[str, str]:
    """The config a worker of ``topology_id`` gets in place of the cluster payload (empty without one)."""
    cluster = conf.get("storm.zookeeper.auth.payload")
    if not cluster:
        return {}
    return {
        "storm.zookeeper.topology.auth.scheme": DIGEST,
        "storm.zookeeper.topology.auth.payload": topology_payload(str(cluster), topology_id),
        "storm.zookeeper.workers.auth.payload": workers_payload(str(cluster)),
        "storm.zookeeper.topology.name.auth.payload": topology_name_payload(str(cluster), topology_name(topology_id)),
        "storm.zookeeper.superACL": f"{DIGEST}:{digest_id(str(cluster))}",
    }


def allowed(acl: Acl, identities: Iterable[str], perm: int) -> bool:
    """Whether a session holding ``identities`` (``"digest:<id>"`` strings) has ``perm`` under ``acl``."""
    held = set(identities)
    for entry in acl:
        if not entry.perms & perm:
            continue
        if entry.scheme == WORLD and entry.id == ANYONE:
            return True
        if f"{entry.scheme}:{entry.id}" in held:
            return True
    return False


@dataclass(frozen=True)
class AclPolicy:
    """The ACL each new node gets, from its path (relative to the storage's chroot).

    Args:
        own: the digest payloads the session authenticates with; each gets ALL on what it creates.
        super_id: ``"digest:user:hash"`` of the cluster identity, granted ALL too (a worker's sessions).
        cluster_payload: the cluster's payload, when this session holds it: then topology-scoped nodes also
            grant the topology's derived identity (READ on its storm base and assignment, ALL on its
            heartbeats and errors).
        root: ``storm.zookeeper.root``.
        tx_root: ``transactional.zookeeper.root`` (nodes there grant ALL to their creator and the super id).
    """

    own: tuple[str, ...] = ()
    super_id: str | None = None
    #: the shared workers identity (daemons derive it, workers hold it): authenticates, grants nothing by itself
    workers: str | None = None
    #: the topology name's identity (workers hold it): owns what the topology creates outside the cluster's roots
    name: str | None = None
    cluster_payload: str | None = None
    root: str = "/storm"
    tx_root: str = "/transactional"
    _topology_ids: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def enabled(self) -> bool:
        return bool(self.own)

    @property
    def payloads(self) -> tuple[str, ...]:
        """Every payload the session authenticates with (its own, and the workers' when it holds it)."""
        held = self.own if self.workers is None or self.cluster_payload is not None else (*self.own, self.workers)
        if self.name is not None and self.cluster_payload is None:
            held = (*held, self.name)
        return tuple(held)

    @property
    def identities(self) -> tuple[str, ...]:
        """The ``digest:<id>`` identities of a session authenticated with :attr:`payloads`."""
        return tuple(f"{DIGEST}:{digest_id(p)}" for p in self.payloads)

    def topology_id_of(self, topology_id: str) -> str | None:
        """The digest id of a topology (None without the cluster payload)."""
        if self.cluster_payload is None:
            return None
        cached = self._topology_ids.get(topology_id)
        if cached is None:
            cached = self._topology_ids[topology_id] = digest_id(topology_payload(self.cluster_payload, topology_id))
        return cached

    def acl_for(self, path: str) -> Acl:
        """The ACL a node created at ``path`` gets."""
        if not self.own:
            return OPEN_ACL
        if path in znodes.ancestors(self.root) or path in znodes.ancestors(self.tx_root):
            return OPEN_ACL  # a parent of the cluster's roots is shared with other users of the server
        entries = [AclEntry(ALL, DIGEST, digest_id(p)) for p in self.own]
        if self.super_id is not None:
            scheme, _, ident = self.super_id.partition(":")
            entries.append(AclEntry(ALL, scheme, ident))
        scope = znodes.topology_scope(self.root, path)
        if scope is not None:
            topology_id, writable = scope
            tid = self.topology_id_of(topology_id)
            if tid is not None:
                entries.append(AclEntry(ALL if writable else READ, DIGEST, tid))
        elif self._topology_owned(path):
            assert self.name is not None
            entries.append(AclEntry(ALL, DIGEST, digest_id(self.name)))
        elif self.workers is not None and not znodes.is_within(path, self.root):
            entries.append(AclEntry(ALL, DIGEST, digest_id(self.workers)))
        return tuple(dict.fromkeys(entries))

    def parent_acl_for(self, path: str) -> Acl:
        """The ACL of a missing parent created on the way to a node: as :meth:`acl_for`, except that outside the
        cluster's roots every worker may read it and add children (see the module docstring)."""
        if not self.own or not self._topology_owned(path):
            return self.acl_for(path)
        entries = [AclEntry(ALL, DIGEST, digest_id(p)) for p in self.own]
        if self.super_id is not None:
            scheme, _, ident = self.super_id.partition(":")
            entries.append(AclEntry(ALL, scheme, ident))
        assert self.workers is not None
        entries.append(AclEntry(READ | CREATE, DIGEST, digest_id(self.workers)))
        return tuple(dict.fromkeys(entries))

    def _topology_owned(self, path: str) -> bool:
        """Whether a worker's node at ``path`` belongs to its topology name (outside both cluster roots)."""
        return (self.name is not None and self.workers is not None and self.cluster_payload is None
                and path != znodes.ROOT  # the storage's own root (a chroot) is shared by every user of it
                and path not in znodes.ancestors(self.root) and path not in znodes.ancestors(self.tx_root)
                and not znodes.is_within(path, self.root) and not znodes.is_within(path, self.tx_root))  # fmt: skip


def policy_from_conf(conf: Mapping[str, Any]) -> AclPolicy:
    """The policy of a session configured by ``storm.zookeeper.auth.*`` / ``storm.zookeeper.topology.auth.*``.

    A cluster payload wins (daemons); a topology payload alone makes a worker's session, which also grants
    ``storm.zookeeper.superACL`` on what it creates.  A scheme other than ``digest`` is a :class:`ConfigError`.
    """
    root = str(setting(conf, "storm.zookeeper.root"))
    tx_root = str(setting(conf, "transactional.zookeeper.root"))
    cluster = _payload(conf, "storm.zookeeper.auth.scheme", conf.get("storm.zookeeper.auth.payload"))
    if cluster is not None:
        return AclPolicy(own=(cluster,), cluster_payload=cluster, workers=workers_payload(cluster), root=root,
                         tx_root=tx_root)  # fmt: skip
    topology = _payload(
        conf, "storm.zookeeper.topology.auth.scheme", conf.get("storm.zookeeper.topology.auth.payload")
    )
    if topology is not None:
        super_acl = conf.get("storm.zookeeper.superACL")
        workers = conf.get("storm.zookeeper.workers.auth.payload")
        name = conf.get("storm.zookeeper.topology.name.auth.payload")
        return AclPolicy(own=(topology,), super_id=str(super_acl) if super_acl else None,
                         workers=str(workers) if workers else None, name=str(name) if name else None, root=root,
                         tx_root=tx_root)  # fmt: skip
    return AclPolicy(root=root, tx_root=tx_root)


def _payload(conf: Mapping[str, Any], scheme_key: str, payload: Any) -> str | None:
    if not payload:
        return None
    scheme = conf.get(scheme_key) or DIGEST
    if scheme != DIGEST:
        raise ConfigError(f"{scheme_key}: only 'digest' is supported, got {scheme!r}", key=scheme_key)
    digest_id(str(payload))  # checks the form
    return str(payload)


#: A callable the storages use: path -> ACL of a node created there.
AclFor = Callable[[str], Acl]
