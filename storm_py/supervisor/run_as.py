"""This module owns running a topology's workers as its OS user (``supervisor.run.worker.as.user``).

A supervisor running as root starts each worker of a topology as the topology's OS user: its submitter
(``topology.submitter.user``, set by nimbus from the submitter's token), mapped by ``supervisor.worker.user.map``
or else taken as the OS user's name.  The worker gets a config of its own, owned by that user and mode 0600, which
holds none of the cluster's secrets (no ``nimbus.auth.token``, no ZooKeeper payload: it talks to ZooKeeper as its
topology, with the identity handed to it at launch); the supervisor's own config and the cluster token file stay
root's, mode 0600, so the worker cannot read them.  The worker's directories (its log directory, its heartbeat)
are given to the user; its topology's code stays root's and is made readable (not writable) by the user's group.
A worker is never started as root this way, and a user the host does not know is an error naming it.
:func:`worker_user` and :func:`worker_conf` are pure; :func:`account` and :func:`prepare` touch the host.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from storm_py.config.keys import setting
from storm_py.errors import ConfigError
from storm_py.node.token_file import write_owner_only

RUN_AS_KEY = "supervisor.run.worker.as.user"
USER_MAP_KEY = "supervisor.worker.user.map"
SUBMITTER_KEY = "topology.submitter.user"
#: Keys a worker running as a user never gets: the cluster's secrets.
CLUSTER_SECRETS = ("nimbus.auth.token", "storm.zookeeper.auth.payload")


@dataclass(frozen=True)
class OsAccount:
    """A host account a worker runs as."""

    name: str
    uid: int
    gid: int
    home: str


def worker_user(conf: Mapping[str, Any], topology_conf: Mapping[str, Any]) -> str | None:
    """The OS user the topology's workers run as, or None when workers run as the supervisor's user."""
    if not setting(conf, RUN_AS_KEY):
        return None
    submitter = topology_conf.get(SUBMITTER_KEY)
    if not isinstance(submitter, str) or not submitter:
        raise ConfigError(f"{RUN_AS_KEY} is on but the topology names no {SUBMITTER_KEY}", key=SUBMITTER_KEY)
    mapping = conf.get(USER_MAP_KEY) or {}
    mapped = mapping.get(submitter, submitter) if isinstance(mapping, Mapping) else submitter
    if not isinstance(mapped, str) or not mapped:
        raise ConfigError(f"{USER_MAP_KEY} maps {submitter!r} to {mapped!r}, not an OS user name", key=USER_MAP_KEY)
    return mapped


def worker_conf(conf: Mapping[str, Any]) -> dict[str, Any]:
    """The config of a worker running as a user: the supervisor's without the cluster's secrets."""
    return {k: v for k, v in conf.items() if k not in CLUSTER_SECRETS}


def account(name: str) -> OsAccount:
    """The host account ``name``; an unknown user, or root, is a :class:`ConfigError` naming it."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise ConfigError(f"OS user {name!r} (the topology's, under {RUN_AS_KEY}) does not exist on this host",
                          user=name) from None
    if entry.pw_uid == 0:
        raise ConfigError(f"workers never run as root: OS user {name!r} is uid 0", user=name)
    return OsAccount(name, entry.pw_uid, entry.pw_gid, entry.pw_dir)


def check_root(euid: int) -> None:
    """Refuse to run workers as users without root (only root can start a process as another user)."""
    if euid != 0:
        raise ConfigError(f"{RUN_AS_KEY} needs the supervisor to run as root (it runs as uid {euid})", key=RUN_AS_KEY)


def share_read(root: Path, gid: int) -> None:
    """Make ``root`` and everything below it readable by group ``gid`` (ownership and other bits unchanged;
    symbolic links are left alone, never followed)."""
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        os.chown(path, -1, gid)
        mode = path.stat().st_mode
        os.chmod(path, mode | 0o040 | (0o010 if path.is_dir() else 0))


def prepare(user: OsAccount, conf: Mapping[str, Any], conf_dir: Path, topology_id: str,
            writable: Iterable[Path], readable: Iterable[Path] = ()) -> Path:
    """Write the user's worker config for ``topology_id`` under ``conf_dir`` (returned), give ``user`` the
    ``writable`` directories and its group read access to the ``readable`` trees."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    path = conf_dir / f"{topology_id}.yaml"
    write_owner_only(path, yaml.safe_dump(worker_conf(conf), sort_keys=True))
    os.chown(path, user.uid, user.gid)
    for directory in writable:
        directory.mkdir(parents=True, exist_ok=True)
        os.chown(directory, user.uid, user.gid)
    for tree in readable:
        share_read(tree, user.gid)
    return path
