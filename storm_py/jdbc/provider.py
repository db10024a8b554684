"""This module owns storm-jdbc's connection providers: :class:`ConnectionProvider` (the contract),
:class:`PooledConnectionProvider` (a bounded pool over any DB-API driver) and :class:`HikariCPConnectionProvider`
(the same, read from HikariCP's keys)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from storm_py.jdbc.driver import Driver, driver_for
from storm_py.jdbc.types import JdbcError


class ConnectionProvider:
    """Storm's ``ConnectionProvider``: ``prepare`` (idempotent) then ``get_connection`` (a DB-API connection, not
    in autocommit, that the caller closes), ``cleanup`` (idempotent) at the end."""

    def prepare(self) -> None:
        """Get ready to hand out connections (check the settings)."""

    def get_connection(self) -> Any:
        raise NotImplementedError

    def cleanup(self) -> None:
        """Close every connection."""

    def driver(self) -> Driver | None:
        """The driver behind the connections, when the provider knows it (paramstyle, error kinds)."""
        return None


class PooledConnection:
    """A connection of a :class:`PooledConnectionProvider`: ``close()`` rolls back what is open and hands it back
    to the pool; :meth:`invalidate` drops it (it failed).  Everything else is the driver's connection."""

    def __init__(self, raw: Any, pool: PooledConnectionProvider) -> None:
        self.raw = raw
        self._pool: PooledConnectionProvider | None = pool

    def cursor(self) -> Any:
        return self.raw.cursor()

    def commit(self) -> None:
        self.raw.commit()

    def rollback(self) -> None:
        self.raw.rollback()

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.give_back(self.raw)

    def invalidate(self) -> None:
        """Drop this connection: it is closed, not reused."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.discard(self.raw)

    def __getattr__(self, name: str) -> Any:  # the rest of the driver's connection
        return getattr(self.raw, name)

    def __enter__(self) -> PooledConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PooledConnectionProvider(ConnectionProvider):
    """At most ``max_size`` connections of one database, reused (Storm's HikariCP provider).  ``url``:
    ``postgresql://user:password@host:port/db``, ``jdbc:postgresql://host:port/db`` (with ``user=``,
    ``password=``) or ``sqlite:///PATH``; or ``driver="module"`` with the keywords of its ``connect()``.
    Pickles its settings only."""

    def __init__(self, url: str | None = None, *, driver: str | None = None, max_size: int = 10,
                 connect_timeout_secs: float = 10, **connect_kwargs: Any) -> None:
        if int(max_size) < 1:
            raise ValueError(f"max_size must be at least 1, got {max_size!r}")
        self.url = url
        self.driver_name = driver
        self.max_size = int(max_size)
        self.connect_timeout_secs = float(connect_timeout_secs)
        self.connect_kwargs = dict(connect_kwargs)
        self._driver: Driver | None = None
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Condition()
        self._idle: list[Any] = []
        self._open = 0
        self._prepared = False

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.__dict__.update(state)
        self._driver = None
        self._reset()

    def driver(self) -> Driver:
        if self._driver is None:
            try:
                self._driver = driver_for(self.url, self.driver_name, self.connect_kwargs)
            except ValueError as exc:
                raise JdbcError(str(exc)) from exc
        return self._driver

    def prepare(self) -> None:
        """Open one connection to check the settings (a refused login, an unknown database or an unreachable
        server raises :class:`JdbcError` with the driver's message) and keep it in the pool."""
        if self._prepared:
            return
        conn = self.driver().connect(self.connect_timeout_secs)
        with self._lock:
            self._open += 1
            self._idle.append(conn)
            self._prepared = True

    def get_connection(self) -> PooledConnection:
        """A connection from the pool (a new one while fewer than ``max_size`` are open; else waits for one,
        at most ``connect_timeout_secs``)."""
        with self._lock:
            if not self._lock.wait_for(lambda: bool(self._idle) or self._open < self.max_size,
                                       timeout=self.connect_timeout_secs):
                raise JdbcError(f"no connection free in the pool of {self.max_size} within "
                                f"{self.connect_timeout_secs:g}s")
            if self._idle:
                return PooledConnection(self._idle.pop(), self)
            self._open += 1
        try:
            return PooledConnection(self.driver().connect(self.connect_timeout_secs), self)
        except BaseException:
            with self._lock:
                self._open -= 1
                self._lock.notify()
            raise

    def give_back(self, raw: Any) -> None:
        try:
            raw.rollback()
        except Exception:
            self.discard(raw)
            return
        with self._lock:
            self._idle.append(raw)
            self._lock.notify()

    def discard(self, raw: Any) -> None:
        try:
            raw.close()
        except Exception:  # already broken: nothing to close
            pass
        with self._lock:
            self._open -= 1
            self._lock.notify()

    def cleanup(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            self._open -= len(idle)
            self._prepared = False
        for raw in idle:
            try:
                raw.close()
            except Exception as exc:  # closing a broken connection: nothing more to do
                del exc

    def __repr__(self) -> str:
        where = self.url if self.url is not None else f"driver={self.driver_name}"
        return f"PooledConnectionProvider({_without_password(where)!r}, max_size={self.max_size})"


def _without_password(url: str) -> str:
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return url


class HikariCPConnectionProvider(PooledConnectionProvider):
    """Storm's ``HikariCPConnectionProvider(configMap)``: ``jdbcUrl`` or ``dataSource.url``, ``username`` /
    ``dataSource.user``, ``password`` / ``dataSource.password``, ``maximumPoolSize`` (10), ``connectionTimeout``
    (ms); other keys (``dataSourceClassName``, ...) are ignored."""

    def __init__(self, config_map: Mapping[str, Any]) -> None:
        url = config_map.get("jdbcUrl", config_map.get("dataSource.url"))
        if not url:
            raise ValueError(f"HikariCP config {sorted(config_map)} has neither jdbcUrl nor dataSource.url")
        kwargs: dict[str, Any] = {}
        user = config_map.get("username", config_map.get("dataSource.user"))
        password = config_map.get("password", config_map.get("dataSource.password"))
        if user is not None and not str(url).startswith("sqlite:"):
            kwargs["user"] = str(user)
        if password is not None and not str(url).startswith("sqlite:"):
            kwargs["password"] = str(password)
        timeout_ms = float(config_map.get("connectionTimeout", 10_000))
        super().__init__(str(url), max_size=int(config_map.get("maximumPoolSize", 10)),
                         connect_timeout_secs=max(1.0, timeout_ms / 1000), **kwargs)
        self.config_map = dict(config_map)
