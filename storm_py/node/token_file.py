"""This module owns the cluster token file: where a daemon started without ``nimbus.auth.token`` keeps the one it
generates, and where clients find it.

The file is ``storm-py.token`` (mode 0600) in the directory of the daemon's ``--config`` file, else in
``storm.local.dir``; ``storm-py`` clients read it when their config names no token.  :func:`write_owner_only` writes
any other file that holds the token (a worker's configuration) readable by the cluster's user alone from its
first byte.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from storm_py.config.keys import setting

TOKEN_FILE = "storm-py.token"
TOKEN_KEY = "nimbus.auth.token"


def token_path(conf: Mapping[str, Any], config_file: str | None) -> Path:
    """Where the token file of this config lives."""
    if config_file:
        return Path(config_file).resolve().parent / TOKEN_FILE
    return Path(str(setting(conf, "storm.local.dir"))).resolve() / TOKEN_FILE


def read_token(conf: Mapping[str, Any], config_file: str | None) -> str | None:
    """The configured token, else the token file's, else None."""
    token = conf.get(TOKEN_KEY)
    if token:
        return str(token)
    try:
        text = token_path(conf, config_file).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None


def ensure_token(conf: Mapping[str, Any], config_file: str | None) -> tuple[str, Path | None]:
    """The token to serve with and, when it was generated or read from the token file, that file's path."""
    token = conf.get(TOKEN_KEY)
    if token:
        return str(token), None
    path = token_path(conf, config_file)
    existing = read_token({}, str(path))
    if existing:
        return existing, path
    fresh = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{TOKEN_FILE}.{secrets.token_hex(4)}")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(fresh + "\n")
    try:
        os.link(scratch, path)  # atomic: of two daemons starting together, one token wins and both use it
    except FileExistsError:
        fresh = read_token({}, str(path)) or fresh
    finally:
        scratch.unlink()
    return fresh, path


def with_token(conf: Mapping[str, Any], config_file: str | None = None) -> dict[str, Any]:
    """``conf`` holding a token for a daemon: the configured one, else the token file's (generated if absent)."""
    token, _ = ensure_token(conf, config_file)
    return {**conf, TOKEN_KEY: token}


def write_owner_only(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, mode 0600 from the first byte: a scratch file is created 0600 next to it,
    written, and renamed over ``path`` (a file already there, whatever its mode, is replaced whole)."""
    scratch = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(scratch, path)
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise
