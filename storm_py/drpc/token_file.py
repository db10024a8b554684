"""This module owns the cluster token file of a DRPC server started without ``nimbus.auth.token``.

Such a server generates a token into ``storm-py.token`` (mode 0600) in the directory of its ``--config`` file,
else in ``storm.local.dir``; ``storm-py drpc-client`` reads that file when its config names no token.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

TOKEN_FILE = "storm-py.token"


def token_path(conf: Mapping[str, Any], config_file: str | None) -> Path:
    """Where the token file of this config lives."""
    if config_file:
        return Path(config_file).resolve().parent / TOKEN_FILE
    return Path(str(conf.get("storm.local.dir", ".storm-py"))).resolve() / TOKEN_FILE


def read_token(conf: Mapping[str, Any], config_file: str | None) -> str | None:
    """The configured token, else the token file's, else None."""
    token = conf.get("nimbus.auth.token")
    if token:
        return str(token)
    path = token_path(conf, config_file)
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None


def ensure_token(conf: Mapping[str, Any], config_file: str | None) -> tuple[str, Path | None]:
    """The token to serve with and, when it was generated or read from the token file, that file's path."""
    token = conf.get("nimbus.auth.token")
    if token:
        return str(token), None
    path = token_path(conf, config_file)
    existing = read_token({}, str(path))
    if existing:
        return existing, path
    fresh = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(fresh + "\n")
    return fresh, path
