"""This module owns nimbus's gate: who a token names, whether that caller may send a request, and the audit.

:class:`NimbusGate` is the :class:`~storm_py.node.http_api.Gate` of nimbus's REST API.  The API server asks it
about every protected request before the handler runs (so every route, whoever adds it, is covered): it
identifies user tokens through the stored users (:mod:`storm_py.cluster_state.users`), decides with the rights of
:mod:`storm_py.nimbus.users` (a topology's rights from its storm base), and writes the audit line of each request
that changes something or is refused (:mod:`storm_py.nimbus.audit`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from storm_py.clock import Clock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.models import StormBase
from storm_py.cluster_state.users import ADMIN, CLUSTER_USER, UserStore
from storm_py.config.keys import setting
from storm_py.errors import InvalidTopologyException, StormPyError
from storm_py.nimbus.audit import AuditLog, audit_line, audited
from storm_py.nimbus.users import (
    Principal,
    TopologyAcl,
    acl_problems,
    allowed,
    classify,
    cluster_actions,
    topology_actions,
)
from storm_py.node.http_api import ForbiddenError

log = logging.getLogger(__name__)

#: The topology conf key naming who submitted it (set by nimbus at submit).
SUBMITTER_KEY = "topology.submitter.user"


def acl_of(base: StormBase) -> TopologyAcl:
    """The rights a live topology grants (its submitter, ``topology.users``, ``topology.readonly.users``)."""
    owner = base.topology_conf.get(SUBMITTER_KEY) or base.owner
    return TopologyAcl.of(str(owner or ""), base.topology_conf)


def principal_of(name: str, admins: frozenset[str], users: UserStore) -> Principal:
    """``name`` with its role: the cluster token and ``admins`` (``nimbus.admins``) are admins, a stored user has
    its stored role, an unknown name none."""
    if name == CLUSTER_USER or name in admins:
        return Principal(name, ADMIN)
    user = users.get(name)
    return Principal(name, user.role if user is not None else "")


class NimbusGate:
    """Nimbus's users, rights and audit.

    Args:
        conf: the daemon's configuration (``nimbus.admins``, ``storm.log.dir``).
        state: the cluster state (stored users, storm bases).
        topology_id: a live topology's id by name (a request may name a topology either way).
        clock: wall time for the audit lines.
    """

    def __init__(
        self, conf: Mapping[str, Any], state: ClusterState, topology_id: Callable[[str], str | None], clock: Clock,
    ) -> None:
        self.admins = frozenset(str(n) for n in setting(conf, "nimbus.admins") or ())
        self.users = UserStore(state)
        self.state = state
        self.topology_id = topology_id
        self.clock = clock
        self.audit = AuditLog(str(setting(conf, "storm.log.dir")))

    def identify(self, token: str) -> str | None:
        """The stored user whose token is ``token``."""
        user = self.users.identify(token)
        return user.name if user is not None else None

    def principal(self, name: str) -> Principal:
        """``name`` with its role (:func:`principal_of`)."""
        return principal_of(name, self.admins, self.users)

    def _acl(self, topology: str | None) -> TopologyAcl | None:
        if topology is None:
            return None
        base = self.state.storm_base(topology) if "/" not in topology else None
        if base is None:
            tid = self.topology_id(topology)
            base = self.state.storm_base(tid) if tid is not None else None
        return acl_of(base) if base is not None else None

    def permit(self, user: str, method: str, path: str) -> None:
        """Raise :class:`ForbiddenError` (403) when ``user`` may not send ``method path``."""
        target = classify(method, path)
        who = self.principal(user)
        if who.role == ADMIN:
            return
        if not allowed(who, target, self._acl(target.topology)):
            what = f"{target.action} topology {target.topology!r}" if target.topology else target.action
            raise ForbiddenError(f"user {user!r} (role {who.role or 'none'}) may not {what}", user=user,
                                 action=target.action)

    def whoami(self, user: str | None) -> dict[str, Any]:
        """``{"user", "role", "actions"}``: the caller and the cluster actions it may take (no token configured:
        an anonymous admin)."""
        who = self.principal(user) if user is not None else Principal("", ADMIN)
        return {"user": who.name, "role": who.role, "actions": cluster_actions(who)}

    def topology_actions(self, user: str | None, topology_id: str) -> list[str]:
        """The actions the caller may take on live topology ``topology_id``."""
        who = self.principal(user) if user is not None else Principal("", ADMIN)
        return topology_actions(who, topology_id, self._acl(topology_id))

    def is_admin(self, user: str | None) -> bool:
        """Whether ``user`` has every right."""
        return user is not None and self.principal(user).role == ADMIN

    def submitter_conf(self, user: str | None, conf: Mapping[str, Any]) -> dict[str, Any]:
        """A submitted topology's conf with its submitter: the caller's name, except that an admin may name another
        user (``topology.submitter.user`` in the conf it sends).  A user the topology's ACL keys name must be known
        to the cluster (:class:`InvalidTopologyException` names the key and the users, nothing is stored)."""
        out = dict(conf)
        problems = acl_problems(out, lambda name: self.principal(name).role != "")
        if problems:
            raise InvalidTopologyException("; ".join(problems))
        asked = out.get(SUBMITTER_KEY)
        if user is None:
            return out
        if not (self.is_admin(user) and isinstance(asked, str) and asked):
            out[SUBMITTER_KEY] = user
        return out

    def record(self, user: str | None, method: str, path: str, status: int) -> None:
        """Write the audit line of a request that changed something or was refused."""
        if not audited(method, status):
            return
        try:
            self.audit.write(audit_line(self.clock.wall(), user, method, path, status))
        except (OSError, StormPyError) as err:
            log.error("cannot write the audit log %s: %s", self.audit.path, err)
