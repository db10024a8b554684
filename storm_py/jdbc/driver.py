"""This module owns the DB-API drivers behind storm-jdbc, the one import of psycopg: connection URLs read into a
driver and its ``connect()`` keywords, connecting, the SQL types a driver reports, and which errors mean "the
database is down" (retry the same work) rather than "the database refused this statement"."""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from storm_py.jdbc.types import JdbcError, Types

try:
    import psycopg
except ImportError as _err:  # the jdbc extra is not installed
    psycopg = None  # type: ignore[assignment]
    _IMPORT_ERROR: ImportError | None = _err
else:
    _IMPORT_ERROR = None

#: PostgreSQL type oids -> java.sql.Types
_PG_TYPES = {
    16: Types.BOOLEAN, 17: Types.BINARY, 20: Types.BIGINT, 21: Types.SMALLINT, 23: Types.INTEGER, 25: Types.VARCHAR,
    700: Types.REAL, 701: Types.DOUBLE, 1042: Types.CHAR, 1043: Types.VARCHAR, 1082: Types.DATE, 1083: Types.TIME,
    1114: Types.TIMESTAMP, 1184: Types.TIMESTAMP, 1700: Types.NUMERIC,
}
#: SQLite declared type names (their affinity words) -> java.sql.Types
_SQLITE_TYPES = {
    "INT": Types.INTEGER, "INTEGER": Types.INTEGER, "BIGINT": Types.BIGINT, "SMALLINT": Types.SMALLINT,
    "TEXT": Types.VARCHAR, "VARCHAR": Types.VARCHAR, "CHAR": Types.CHAR, "REAL": Types.REAL, "DOUBLE": Types.DOUBLE,
    "FLOAT": Types.FLOAT, "NUMERIC": Types.NUMERIC, "BOOLEAN": Types.BOOLEAN, "DATE": Types.DATE,
    "TIMESTAMP": Types.TIMESTAMP, "BLOB": Types.VARBINARY,
}
#: SQLSTATE classes of a connection that is gone or a server that is not serving (retry, not the row's fault)
_DOWN_SQLSTATES = ("08", "57P", "53")


@dataclass
class Driver:
    """A DB-API module and the keywords its ``connect()`` takes."""

    module: ModuleType
    connect_kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.module.__name__

    @property
    def is_postgres(self) -> bool:
        return self.name == "psycopg"

    @property
    def is_sqlite(self) -> bool:
        return self.module is sqlite3

    @property
    def paramstyle(self) -> str:
        # psycopg's declared style is pyformat; it takes %s positionally
        return str(getattr(self.module, "paramstyle", "qmark"))

    def connect(self, timeout_secs: float) -> Any:
        """A new connection, not in autocommit; a failure is a :class:`JdbcError` with the driver's message."""
        kwargs = dict(self.connect_kwargs)
        try:
            if self.is_postgres:
                kwargs.setdefault("connect_timeout", max(1, int(timeout_secs)))
                return self.module.connect(**kwargs)
            if self.is_sqlite:
                kwargs.setdefault("timeout", timeout_secs)
                kwargs.setdefault("check_same_thread", False)
                return self.module.connect(**kwargs)
            return self.module.connect(**kwargs)
        except Exception as exc:
            raise JdbcError(f"cannot connect to the database ({self.name}): {message_of(exc)}") from exc

    def is_down(self, exc: BaseException) -> bool:
        """Whether ``exc`` means the connection or the server failed (retry the work), not the statement."""
        if self.is_postgres:
            assert psycopg is not None
            if not isinstance(exc, psycopg.Error):
                return False
            state = getattr(exc, "sqlstate", None)
            if state is None:
                return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))
            return str(state).startswith(_DOWN_SQLSTATES)  # a statement timeout (57014) is the statement's
        if self.is_sqlite:
            return isinstance(exc, sqlite3.OperationalError) and (
                "locked" in str(exc) or "unable to open" in str(exc) or "disk I/O" in str(exc))
        errors = tuple(getattr(self.module, n) for n in ("OperationalError", "InterfaceError")
                       if isinstance(getattr(self.module, n, None), type))
        return bool(errors) and isinstance(exc, errors)

    def is_error(self, exc: BaseException) -> bool:
        """Whether ``exc`` is one of the driver's own errors (DB-API ``Error``)."""
        base = getattr(self.module, "Error", None)
        return isinstance(base, type) and isinstance(exc, base)

    def sql_type(self, type_code: Any) -> int | None:
        """The ``java.sql.Types`` code of a cursor description's type code (``None``: unknown)."""
        if self.is_postgres and isinstance(type_code, int):
            return _PG_TYPES.get(type_code, Types.OTHER)
        if isinstance(type_code, str):
            return declared_type(type_code)
        return None


def declared_type(declared: str) -> int | None:
    """The ``java.sql.Types`` code of a declared column type such as ``VARCHAR(20)`` (``None``: none declared)."""
    word = declared.split("(")[0].strip().upper()
    if not word:
        return None
    return _SQLITE_TYPES.get(word, _SQLITE_TYPES.get(word.split()[0], Types.OTHER))


def message_of(exc: BaseException) -> str:
    """The database's own message of an error, on one line when it is short."""
    text = str(exc).strip()
    return text if text else type(exc).__name__


def driver_for(url: str | None, driver: str | None, connect_kwargs: Mapping[str, Any]) -> Driver:
    """The driver of a provider's settings: a URL (``postgresql://``, ``postgres://``, ``jdbc:postgresql://``,
    ``sqlite:///PATH``) or a DB-API module name with its ``connect()`` keywords."""
    if url is None:
        if not driver:
            raise ValueError("a connection provider needs a url or a driver module name")
        return Driver(_module(driver), dict(connect_kwargs))
    if not isinstance(url, str):
        raise ValueError(f"a connection url must be a string, got {url!r}")
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):]
        return Driver(sqlite3, {"database": path or ":memory:", **connect_kwargs})
    if url.startswith("jdbc:postgresql://"):
        url = url[len("jdbc:"):]
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ValueError(f"unsupported connection url {url!r}: use postgresql://, jdbc:postgresql:// or sqlite:///PATH"
                         ", or driver= with its connect keywords")
    kwargs: dict[str, Any] = {"host": parts.hostname or "127.0.0.1", "port": parts.port or 5432}
    if parts.path.strip("/"):
        kwargs["dbname"] = unquote(parts.path.strip("/"))
    if parts.username:
        kwargs["user"] = unquote(parts.username)
    if parts.password:
        kwargs["password"] = unquote(parts.password)
    kwargs.update(dict(parse_qsl(parts.query)))
    kwargs.update(connect_kwargs)
    if "database" in kwargs and "dbname" not in kwargs:
        kwargs["dbname"] = kwargs.pop("database")
    if psycopg is None:
        raise JdbcError("PostgreSQL needs psycopg 3: pip install 'storm_py[jdbc]'") from _IMPORT_ERROR
    return Driver(psycopg, kwargs)


def _module(name: str) -> ModuleType:
    if name == "psycopg":
        if psycopg is None:
            raise JdbcError("PostgreSQL needs psycopg 3: pip install 'storm_py[jdbc]'") from _IMPORT_ERROR
        return psycopg
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise JdbcError(f"DB-API driver module {name!r} cannot be imported: {exc}") from exc
