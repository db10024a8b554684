"""This module owns how a daemon other than nimbus (the UI, the DRPC server) recognises a user's token.

A :class:`TokenDirectory` reads the stored users (:mod:`storm_py.state.users`) through a state session of its
own, opened at the first user token it meets (a daemon whose callers only use the cluster token never opens one),
and says who a token belongs to.  When the state cannot be reached, no user token is recognised (the caller gets
401): the directory never guesses.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from storm_py.errors import StormPyError
from storm_py.node.session import open_storage
from storm_py.state.cluster_state import ClusterState
from storm_py.state.users import UserRecord, UserStore

log = logging.getLogger(__name__)


class TokenDirectory:
    """Who a user token belongs to, for a daemon configured by ``conf`` (``storm.zookeeper.*``)."""

    def __init__(self, conf: Mapping[str, Any], store: UserStore | None = None) -> None:
        self.conf = dict(conf)
        self._store = store
        self._owned: ClusterState | None = None
        self._lock = threading.Lock()

    def _users(self) -> UserStore:
        with self._lock:
            if self._store is None:
                self._owned = ClusterState(open_storage(self.conf, wait_secs=0), self.conf)
                self._store = UserStore(self._owned)
            return self._store

    def identify(self, token: str) -> UserRecord | None:
        """The user whose token is ``token`` (None when none is, or the stored users cannot be read)."""
        try:
            return self._users().identify(token)
        except StormPyError as err:
            log.warning("cannot read the cluster's users to check a token: %s", err.message)
            return None

    def close(self) -> None:
        """Close the state session, if one was opened."""
        with self._lock:
            if self._owned is not None:
                self._owned.close()
            self._owned, self._store = None, None


class UserTokenGate:
    """The :class:`~storm_py.node.http_api.Gate` of a server that recognises user tokens and leaves the rights to
    others: the UI relays to nimbus, which decides every right and writes the audit; the DRPC server checks its
    ACL in the handler that knows the function."""

    def __init__(self, directory: TokenDirectory) -> None:
        self.directory = directory

    def identify(self, token: str) -> str | None:
        """The user of ``token``."""
        user = self.directory.identify(token)
        return user.name if user is not None else None

    def permit(self, user: str, method: str, path: str) -> None:
        """Everything passes here (see the class docstring)."""

    def record(self, user: str | None, method: str, path: str, status: int) -> None:
        """Nothing: nimbus writes the audit."""
