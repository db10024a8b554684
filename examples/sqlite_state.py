"""The SQLite database the transactional examples commit into: WAL setup, schema and ``BEGIN IMMEDIATE`` transactions.

Each example subclasses :class:`SQLiteState` with its ``SCHEMA`` and its reads and writes.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from storm_py.errors import ConfigError


class SQLiteState:
    """A SQLite file in WAL mode holding the tables of ``SCHEMA``, written in one transaction at a time."""

    #: ``CREATE TABLE IF NOT EXISTS`` statements run when the database is opened with ``create=True``
    SCHEMA: ClassVar[tuple[str, ...]] = ()

    def __init__(self, path: str, create: bool = True) -> None:
        self.path = path
        if not create:
            return
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")  # writers do not block readers; one fsync per commit
        finally:
            conn.close()
        with self.transaction() as conn:
            for statement in self.SCHEMA:
                conn.execute(statement)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A connection inside ``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on error)."""
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()


def db_path_from_conf(conf: dict[str, Any] | None, prefix: str, what: str, logger: logging.Logger) -> str:
    """``example.db.path`` from ``conf``, or else a new temporary file (a warning on ``logger`` names it).

    An existing non-empty file is refused when the topology is built to run in-process (``storm-py local``:
    ``topology.name`` not set yet), unless ``example.db.reuse`` is true: that cluster's transaction ids start at 1
    again, so the rows of an earlier run would make new batches look applied.  A cluster's nimbus and workers
    (which all build the topology, ``topology.name`` set) keep their transactional state in ZooKeeper and reuse
    the file as the design wants; either way a reused file is named in a warning.
    """
    conf = conf or {}
    path = conf.get("example.db.path")
    if not path:
        fd, path = tempfile.mkstemp(prefix=prefix, suffix=".db")
        os.close(fd)
        logger.warning("writing %s to %s", what, path)
        return str(path)
    if os.path.isfile(path) and os.path.getsize(path) > 0:
        if conf.get("topology.name") is None and conf.get("example.db.reuse") is not True:
            raise ConfigError(
                f"example.db.path {path} already holds {what} of an earlier run: a fresh cluster's txids start at 1 "
                "again, so its rows would make new batches look applied; delete it, name a new file, or pass "
                "-c example.db.reuse=true to add to it", path=str(path))
        logger.warning("reusing %s in %s (an earlier run's rows stay)", what, path)
    return str(path)
