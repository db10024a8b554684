"""This module owns the cluster secrets a new cluster is given: the nimbus API token and the ZooKeeper digest
payload, generated at random and written with the rest of a config to a file only its owner can read.

``storm-py dev-cluster`` calls :func:`with_secrets` for its own config; containers run
``python -m storm_py.dev.secret SRC DST``: DST gets SRC's keys plus secrets (kept when DST already has them).
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from storm_py.node.token_file import write_owner_only

#: The keys :func:`with_secrets` fills when they are unset.
SECRET_KEYS = ("nimbus.auth.token", "storm.zookeeper.auth.payload")


def new_secrets() -> dict[str, str]:
    """A fresh API token and ZooKeeper digest payload (``storm:<random>``)."""
    return {
        "nimbus.auth.token": secrets.token_urlsafe(32),
        "storm.zookeeper.auth.scheme": "digest",
        "storm.zookeeper.auth.payload": f"storm:{secrets.token_urlsafe(32)}",
    }


def with_secrets(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``conf`` with generated secrets for the keys it does not set (set ones are kept as they are)."""
    out = dict(conf)
    generated = new_secrets()
    if not out.get("nimbus.auth.token"):
        out["nimbus.auth.token"] = generated["nimbus.auth.token"]
    if not out.get("storm.zookeeper.auth.payload"):
        out["storm.zookeeper.auth.scheme"] = generated["storm.zookeeper.auth.scheme"]
        out["storm.zookeeper.auth.payload"] = generated["storm.zookeeper.auth.payload"]
    return out


def write_private(path: Path, conf: Mapping[str, Any]) -> None:
    """Write ``conf`` as YAML to ``path``, readable and writable by its owner only (created so, never wider)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_owner_only(path, yaml.safe_dump(dict(conf), sort_keys=True))


def main(argv: list[str]) -> int:
    """``python -m storm_py.dev.secret SRC DST``: DST = SRC + secrets (those of an existing DST are kept)."""
    if len(argv) != 2:
        print("usage: python -m storm_py.dev.secret SRC DST", file=sys.stderr)
        return 2
    src, dst = Path(argv[0]), Path(argv[1])
    conf = dict(yaml.safe_load(src.read_text(encoding="utf-8")) or {})
    if dst.exists():
        previous = dict(yaml.safe_load(dst.read_text(encoding="utf-8")) or {})
        conf.update({k: previous[k] for k in (*SECRET_KEYS, "storm.zookeeper.auth.scheme") if previous.get(k)})
    write_private(dst, with_secrets(conf))
    print(f"wrote {dst} (mode 0600)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
