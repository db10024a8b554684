"""This module owns what every cluster process needs to take part: its advertised hostname and its state session.

The session is ZooKeeper, configured by ``storm.zookeeper.*`` (the only place daemons pick it; tests hand the
daemons a session of their own).  The hostname is ``storm.local.hostname`` when set, else the loopback address:
workers and log viewers bind it and peers connect to it, so a cluster spanning several hosts sets it on every
host to a name that resolves from the others; nothing listens beyond this machine unless told to.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from storm_py.config.keys import setting
from storm_py.state.storage import StateStorage


def open_storage(conf: Mapping[str, Any]) -> StateStorage:
    """A ZooKeeper session configured by ``storm.zookeeper.*``; :class:`StateError` when none answers."""
    from storm_py.state.zk import KazooStorage

    return KazooStorage.from_conf(conf)


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
