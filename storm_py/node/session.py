"""This module owns what every cluster process needs to take part: its advertised hostname and its state session.

The session is ZooKeeper, configured by ``storm.zookeeper.*`` (the only place daemons pick it; tests hand the
daemons a session of their own).  The hostname is ``storm.local.hostname`` when set, else the machine's name:
workers bind it and peers connect to it, so it must resolve from every other host of the cluster.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any

from storm_py.state.storage import StateStorage


def open_storage(conf: Mapping[str, Any]) -> StateStorage:
    """A ZooKeeper session configured by ``storm.zookeeper.*``; :class:`StateError` when none answers."""
    from storm_py.state.zk import KazooStorage

    return KazooStorage.from_conf(conf)


def local_hostname(conf: Mapping[str, Any]) -> str:
    """``storm.local.hostname``, else this machine's name."""
    return str(conf.get("storm.local.hostname") or socket.gethostname())
