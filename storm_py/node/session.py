"""This module owns what every cluster process needs to take part: its advertised hostname and its state session.

The session is ZooKeeper, configured by ``storm.zookeeper.*`` (the only place daemons pick it; tests hand the
daemons a session of their own).  The hostname is ``storm.local.hostname`` when set, else the loopback address:
workers and log viewers bind it and peers connect to it, so a cluster spanning several hosts sets it on every
host to a name that resolves from the others; nothing listens beyond this machine unless told to.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Mapping
from typing import Any

from storm_py.clock import SYSTEM_CLOCK, Clock, Deadline
from storm_py.cluster_state.storage import StateStorage
from storm_py.config.keys import setting
from storm_py.errors import StateError

log = logging.getLogger(__name__)


def open_storage(conf: Mapping[str, Any], wait_secs: float | None = None, clock: Clock = SYSTEM_CLOCK) -> StateStorage:
    """A ZooKeeper session configured by ``storm.zookeeper.*``; :class:`StateError` when none answers.

    A daemon started before its ZooKeeper (a host booting, a compose cluster coming up) waits for it: each attempt
    that finds no ZooKeeper within ``storm.zookeeper.connection.timeout`` is said on the log, and the next one
    starts, until ``wait_secs`` have passed (``storm.zookeeper.start.wait.secs`` unless given; 0: one attempt).
    """
    from storm_py.cluster_state.zk import KazooStorage

    budget = float(setting(conf, "storm.zookeeper.start.wait.secs")) if wait_secs is None else wait_secs
    deadline = Deadline(budget, clock)
    attempt = 1
    while True:
        try:
            return KazooStorage.from_conf(conf)
        except StateError as err:
            if err.fields.get("reason") != "connection" or deadline.expired():
                raise
            log.warning("%s; trying again (attempt %d; waiting up to %gs in all, storm.zookeeper.start.wait.secs)",
                        err.message, attempt + 1, budget)
            attempt += 1


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost`` (a name that may resolve elsewhere is not)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def local_hostname(conf: Mapping[str, Any]) -> str:
    """``storm.local.hostname`` (declared default: the loopback address)."""
    return str(setting(conf, "storm.local.hostname"))
