"""This module owns who may read what from a supervisor's log viewer: users' tokens, their rights, the audit.

:func:`log_target` names what a log viewer request asks for (pure: method and target, query included): a worker
file (``file=<topology-id>/<port>/<name>``, ``/api/v1/logs/<topology-id>``, a deep search, profiling results)
needs the right to read that topology, starting a profiler the right to change it, a daemon's own log the right
to read everything (it speaks of every topology).  :class:`LogViewerGate` decides with nimbus's rights
(:mod:`storm_py.nimbus.users`): the users, roles and topology ACLs are read from the cluster state, never taken
from the request; a topology the state no longer holds (killed) is readable by admins and ``readonly`` users
only.  Refused requests go to the audit log (``<storm.log.dir>/audit.log``) with the topology they named.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from storm_py.clock import Clock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.users import ADMIN, UserStore
from storm_py.config.keys import setting
from storm_py.errors import StormPyError
from storm_py.nimbus.access import acl_of, principal_of
from storm_py.nimbus.audit import AuditLog, audit_line, audited
from storm_py.nimbus.users import Right, Target, allowed
from storm_py.node.http_api import BadRequestError, ForbiddenError

log = logging.getLogger(__name__)

API = "/api/v1"
#: routes whose ``file`` parameter names the worker file (``<topology-id>/<port>/<name>``) they read
_FILE_ROUTES = frozenset({"/log", API + "/log", API + "/download", API + "/search"})
#: routes that read a daemon's own log
_DAEMON_ROUTES = frozenset({API + "/daemonlog", API + "/daemonlogs", API + "/daemondownload"})


def log_target(method: str, target: str) -> Target:
    """The right ``method target`` needs on a log viewer (``target``: path and query string)."""
    split = urlsplit(target)
    path = split.path.rstrip("/") or "/"
    query = parse_qs(split.query)
    read = method in ("GET", "HEAD")
    if read and path in _FILE_ROUTES:
        if query.get("is-daemon", ["no"])[0] == "yes":
            return Target(Right.READ_ALL, "daemon log read")
        file = query.get("file", [""])[0]
        if not file:
            return Target(Right.CLUSTER_READ, "log read")  # the handler answers 400, naming the parameter
        return Target(Right.TOPOLOGY_READ, "log read", file.split("/")[0])
    if read and path in _DAEMON_ROUTES:
        return Target(Right.READ_ALL, "daemon log read")
    parts = [unquote(p) for p in path[len(API) + 1:].split("/")] if path.startswith(API + "/") else []
    if read and len(parts) == 2 and parts[0] in ("logs", "deepSearch") and parts[1]:
        return Target(Right.TOPOLOGY_READ, "log read", parts[1])
    if len(parts) == 4 and parts[0] == "profiling" and parts[2]:
        if read and parts[1] == "dumps":
            return Target(Right.TOPOLOGY_READ, "log read", parts[2])
        if method == "POST":
            return Target(Right.TOPOLOGY_CHANGE, "profile", parts[2])
    return Target(Right.ADMIN, f"{method.lower()} {path}")


_PHRASES = {"log read": "read the logs of topology {topology!r}", "daemon log read": "read the daemons' logs",
            "profile": "profile topology {topology!r}"}


def _plain_id(topology: str) -> bool:
    return topology not in (".", "..") and not any(c in topology for c in "/\\\0")


class LogViewerGate:
    """The :class:`~storm_py.node.http_api.Gate` of a supervisor's log viewer.

    Args:
        conf: the supervisor's configuration (``nimbus.admins``, ``storm.log.dir``).
        state: the cluster state (stored users, storm bases).
        clock: wall time for the audit lines.
    """

    def __init__(self, conf: Mapping[str, Any], state: ClusterState, clock: Clock) -> None:
        self.admins = frozenset(str(n) for n in setting(conf, "nimbus.admins") or ())
        self.users = UserStore(state)
        self.state = state
        self.clock = clock
        self.audit = AuditLog(str(setting(conf, "storm.log.dir")))

    def identify(self, token: str) -> str | None:
        """The stored user whose token is ``token`` (None too when the state cannot be read now)."""
        try:
            user = self.users.identify(token)
        except StormPyError as err:
            log.warning("cannot read the cluster's users to check a token: %s", err.message)
            return None
        return user.name if user is not None else None

    def permit(self, user: str, method: str, path: str) -> None:
        """Raise :class:`ForbiddenError` (403) when ``user`` may not send ``method path``."""
        target = log_target(method, path)
        who = principal_of(user, self.admins, self.users)
        if who.role == ADMIN:
            return
        if target.topology is not None and not _plain_id(target.topology):
            raise BadRequestError(f"bad topology id {target.topology!r} in the log request", topology=target.topology)
        base = self.state.storm_base(target.topology) if target.topology else None
        acl = acl_of(base) if base is not None else None
        ok = allowed(who, target, acl)
        if ok and target.topology and acl is None:  # gone from the state: nobody vouches for a user's claim
            ok = target.right == Right.TOPOLOGY_READ and allowed(who, Target(Right.READ_ALL, target.action), None)
        if not ok:
            what = _PHRASES.get(target.action, target.action).format(topology=target.topology)
            raise ForbiddenError(f"user {user!r} (role {who.role or 'none'}) may not {what} on this log viewer",
                                 user=user, action=target.action)

    def record(self, user: str | None, method: str, path: str, status: int) -> None:
        """Write the audit line of a request that was refused or changed something (a profiler started)."""
        if not audited(method, status):
            return
        try:
            self.audit.write(audit_line(self.clock.wall(), user, method, path, status, log_target(method, path)))
        except (OSError, StormPyError) as err:
            log.error("cannot write the audit log %s: %s", self.audit.path, err)
