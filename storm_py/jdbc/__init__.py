"""Storm's storm-jdbc over Python's DB-API (PostgreSQL through psycopg 3, SQLite, any DB-API driver): connection
providers, mappers, the insert and lookup bolts (the insert bolt an exactly-once sink under managed state) and
Trident's JDBC state."""

from __future__ import annotations

from storm_py.jdbc.bolts import JdbcInsertBolt, JdbcLookupBolt
from storm_py.jdbc.client import JdbcClient
from storm_py.jdbc.mappers import JdbcLookupMapper, JdbcMapper, SimpleJdbcLookupMapper, SimpleJdbcMapper
from storm_py.jdbc.provider import ConnectionProvider, HikariCPConnectionProvider, PooledConnectionProvider
from storm_py.jdbc.trident import JdbcMapState, JdbcQuery, JdbcState, JdbcStateFactory, JdbcUpdater
from storm_py.jdbc.types import Column, JdbcError, Types

__all__ = [
    "Column",
    "ConnectionProvider",
    "HikariCPConnectionProvider",
    "JdbcClient",
    "JdbcError",
    "JdbcInsertBolt",
    "JdbcLookupBolt",
    "JdbcLookupMapper",
    "JdbcMapState",
    "JdbcMapper",
    "JdbcQuery",
    "JdbcState",
    "JdbcStateFactory",
    "JdbcUpdater",
    "PooledConnectionProvider",
    "SimpleJdbcLookupMapper",
    "SimpleJdbcMapper",
    "Types",
]
