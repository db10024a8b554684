"""This module keeps the DRPC package's name for the cluster token file (:mod:`storm_py.node.token_file`)."""

from __future__ import annotations

from storm_py.node.token_file import TOKEN_FILE, ensure_token, read_token, token_path

__all__ = ["TOKEN_FILE", "ensure_token", "read_token", "token_path"]
