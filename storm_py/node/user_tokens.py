"""This module owns how a daemon other than nimbus (the UI, the DRPC server) recognises a user's token.

A :class:`TokenDirectory` reads the stored users (:mod:`storm_py.cluster_state.users`) through a state session of its
own, opened in the background when the daemon starts (:meth:`TokenDirectory.connect`), and says who a token
belongs to.  Until the session is open, or when the state cannot be reached, no user token is recognised (the
caller gets 401) and a new attempt starts in the background, at most every :data:`RETRY_SECS`: a request never
waits for ZooKeeper to answer a connection, and the directory never guesses.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from storm_py.clock import SYSTEM_CLOCK, Clock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.users import UserRecord, UserStore
from storm_py.config import defaults
from storm_py.node.session import open_storage

log = logging.getLogger(__name__)

#: Seconds between two attempts to open the state session.
RETRY_SECS = 10.0


class TokenDirectory:
    """Who a user token belongs to, for a daemon configured by ``conf`` (``storm.zookeeper.*``); ``store``: the
    stored users to read instead (no session of its own)."""

    def __init__(self, conf: Mapping[str, Any], store: UserStore | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.conf = {**defaults(), **conf}
        self.clock = clock
        self._store = store
        self._owned: ClusterState | None = None
        self._lock = threading.Lock()
        self._connecting = False
        self._closed = False
        self._last_attempt: float | None = None

    def connect(self) -> None:
        """Open the state session in the background (nothing when one is open or being opened)."""
        with self._lock:
            if self._store is not None or self._connecting or self._closed:
                return
            now = self.clock.now()
            if self._last_attempt is not None and now - self._last_attempt < RETRY_SECS:
                return
            self._connecting, self._last_attempt = True, now
        threading.Thread(target=self._open, name="user-tokens", daemon=True).start()

    def _open(self) -> None:
        state: ClusterState | None = None
        try:
            state = ClusterState(open_storage(self.conf, wait_secs=0), self.conf)
        except Exception as err:  # any failure: user tokens stay unrecognised, the next attempt comes later
            log.warning("cannot open the cluster state to check users' tokens: %s", err)
        with self._lock:
            self._connecting = False
            if state is not None and not self._closed:
                self._owned, self._store = state, UserStore(state)
                state = None
        if state is not None:
            state.close()

    def identify(self, token: str) -> UserRecord | None:
        """The user whose token is ``token`` (None when none is, or the stored users cannot be read now)."""
        with self._lock:
            store = self._store
        if store is None:
            self.connect()
            return None
        try:
            return store.identify(token)
        except Exception as err:  # a state error must not take the request down: the token is not recognised
            log.warning("cannot read the cluster's users to check a token: %s", err)
            return None

    def close(self) -> None:
        """Close the state session, if one was opened."""
        with self._lock:
            self._closed = True
            owned, self._owned, self._store = self._owned, None, None
        if owned is not None:
            owned.close()


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
