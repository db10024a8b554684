"""This module owns storm-jdbc's Trident state: :class:`JdbcState` (Storm's insert / lookup state, with its
:class:`JdbcState.Options`, :class:`JdbcStateFactory`, :class:`JdbcUpdater` and :class:`JdbcQuery`) and
:class:`JdbcMapState`, a map state over a table for ``persistent_aggregate``.

:class:`JdbcState` is Storm's non-transactional state: a batch's tuples are inserted in one transaction, so a
replayed batch is inserted again.  :class:`JdbcMapState` keeps, per key (the table's key columns, matched in order
with the ``group_by`` fields), column ``val`` and, for the transactional and opaque kinds, ``txid`` (and ``prev``
for opaque): the map wrappers of :mod:`storm_py.transactional.map_state` apply a replayed batch exactly once.
Each backing read is one select and each write one upsert (``INSERT ... ON CONFLICT ... DO UPDATE``, PostgreSQL
and SQLite), in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from storm_py.errors import FailedException, InvalidTopologyException
from storm_py.jdbc.client import JdbcClient
from storm_py.jdbc.mappers import JdbcLookupMapper, JdbcMapper
from storm_py.jdbc.provider import ConnectionProvider
from storm_py.jdbc.sql import insert_query
from storm_py.jdbc.types import Column, JdbcError
from storm_py.transactional.map_state import OpaqueValue, TransactionalValue
from storm_py.trident.state import KINDS, BaseQueryFunction, BaseStateUpdater, CachedMap, MapState, State, StateFactory


class _Options:
    """Storm's ``JdbcState.Options``, chainable."""

    def __init__(self) -> None:
        self.provider: ConnectionProvider | None = None
        self.mapper: JdbcMapper | None = None
        self.lookup_mapper: JdbcLookupMapper | None = None
        self.table_name: str | None = None
        self.insert_query: str | None = None
        self.select_query: str | None = None
        self.query_timeout_secs = 30
        self.key_columns: list[str] = []
        self.cache_size = 1000

    def with_connection_provider(self, provider: ConnectionProvider) -> _Options:
        self.provider = provider
        return self

    def with_mapper(self, mapper: JdbcMapper) -> _Options:
        self.mapper = mapper
        return self

    def with_table_name(self, name: str) -> _Options:
        self.table_name = name
        return self

    def with_insert_query(self, query: str) -> _Options:
        self.insert_query = query
        return self

    def with_jdbc_lookup_mapper(self, mapper: JdbcLookupMapper) -> _Options:
        self.lookup_mapper = mapper
        return self

    def with_select_query(self, query: str) -> _Options:
        self.select_query = query
        return self

    def with_query_timeout_secs(self, secs: int) -> _Options:
        self.query_timeout_secs = int(secs)
        return self

    def with_key_columns(self, names: Sequence[str]) -> _Options:
        self.key_columns = list(names)
        return self

    def with_cache_size(self, n: int) -> _Options:
        self.cache_size = int(n)
        return self

    def client(self) -> JdbcClient:
        if self.provider is None:
            raise JdbcError("JdbcState.Options needs with_connection_provider")
        self.provider.prepare()
        return JdbcClient(self.provider, self.query_timeout_secs)


class JdbcState(State):
    """Storm's ``JdbcState``: inserts a batch's tuples (``update_state``), looks tuples up (``batch_retrieve``)."""

    Options = _Options

    def __init__(self, options: _Options) -> None:
        self.options = options
        self.client = options.client()
        if options.mapper is not None:
            options.mapper.prepare()

    def update_state(self, tuples: Sequence[Any]) -> None:
        """Insert the tuples in one transaction; a database error fails the batch (it is replayed)."""
        o = self.options
        if o.mapper is None:
            raise InvalidTopologyException("JdbcState.update_state needs with_mapper")
        try:
            rows = [o.mapper.get_columns(t) for t in tuples]
            if not rows:
                return
            query = o.insert_query or insert_query(o.table_name or "", [c.column_name for c in rows[0]])
            self.client.execute_insert_query(query, rows)
        except JdbcError as exc:
            raise FailedException(f"JdbcState: {exc.message}") from exc

    def batch_retrieve(self, tuples: Sequence[Any]) -> list[list[list[Any]]]:
        """Per tuple, the output values the lookup mapper makes of each row of its select."""
        o = self.options
        mapper = o.lookup_mapper
        if mapper is None or o.select_query is None:
            raise InvalidTopologyException("JdbcState lookups need with_jdbc_lookup_mapper and with_select_query")
        try:
            return [[values for row in self.client.select(o.select_query, mapper.get_columns(t))
                     for values in mapper.to_tuple(t, row)] for t in tuples]
        except JdbcError as exc:
            raise FailedException(f"JdbcState: {exc.message}") from exc


class JdbcStateFactory(StateFactory):
    """Storm's ``JdbcStateFactory(options)``."""

    def __init__(self, options: _Options) -> None:
        self.options = options

    def make_state(self, conf: dict[str, Any], context: Any, partition_index: int, num_partitions: int) -> JdbcState:
        return JdbcState(self.options)


class JdbcUpdater(BaseStateUpdater):
    """Storm's ``JdbcUpdater``: ``state.update_state(tuples)``."""

    def update_state(self, state: Any, tuples: list[Any], collector: Any) -> None:
        state.update_state(tuples)


class JdbcQuery(BaseQueryFunction):
    """Storm's ``JdbcQuery``: per tuple, emits what the state's lookup mapper made of each matching row."""

    def batch_retrieve(self, state: Any, tuples: list[Any]) -> list[Any]:
        return list(state.batch_retrieve(tuples))

    def execute(self, tuple: Any, result: Any, collector: Any) -> None:
        for values in result:
            collector.emit(values)


class JdbcBackingMap:
    """A backing map over a table: one select per ``multi_get``, one upsert per ``multi_put``."""

    def __init__(self, client: JdbcClient, table: str, key_columns: Sequence[str], kind: str) -> None:
        self.client = client
        self.table = table
        self.keys = list(key_columns)
        self.values = {"non_transactional": ["val"], "transactional": ["val", "txid"],
                       "opaque": ["val", "txid", "prev"]}[kind]
        self.kind = kind
        cols = self.keys + self.values
        updates = ", ".join(f"{c} = excluded.{c}" for c in self.values)
        self.upsert = f"{insert_query(table, cols)} ON CONFLICT ({', '.join(self.keys)}) DO UPDATE SET {updates}"

    def check(self) -> None:
        """The table and every column it needs exist (else :class:`JdbcError` naming what is missing)."""
        have = {c.column_name.lower() for c in self.client.get_column_schema(self.table)}
        missing = [c for c in self.keys + self.values if c.lower() not in have]
        if missing:
            raise JdbcError(f"table {self.table!r} has no column {missing[0]!r} (JdbcMapState {self.kind} needs "
                            f"{self.keys + self.values})")

    def _key(self, key: Any) -> list[Any]:
        values = list(key) if isinstance(key, (tuple, list)) else [key]
        if len(values) != len(self.keys):
            raise JdbcError(f"key {values!r} does not match key columns {self.keys}")
        return values

    def multi_get(self, keys: Sequence[Any]) -> list[Any]:
        if not keys:
            return []
        where = " OR ".join("(" + " AND ".join(f"{c} = ?" for c in self.keys) + ")" for _ in keys)
        params = [Column(c, v, None) for k in keys for c, v in zip(self.keys, self._key(k), strict=True)]
        try:
            rows = self.client.select(
                f"SELECT {', '.join(self.keys + self.values)} FROM {self.table} WHERE {where}", params)
        except JdbcError as exc:
            raise FailedException(f"JdbcMapState {self.table!r}: {exc.message}") from exc
        n = len(self.keys)
        found = {tuple(c.val for c in row[:n]): [c.val for c in row[n:]] for row in rows}
        out: list[Any] = []
        for k in keys:
            vals = found.get(tuple(self._key(k)))
            if vals is None:
                out.append(None)
            elif self.kind == "opaque":
                out.append(OpaqueValue(int(vals[1]), vals[0], vals[2]))
            elif self.kind == "transactional":
                out.append(TransactionalValue(int(vals[1]), vals[0]))
            else:
                out.append(vals[0])
        return out

    def multi_put(self, keys: Sequence[Any], values: Sequence[Any]) -> None:
        rows: list[list[Any]] = []
        for k, v in zip(keys, values, strict=True):
            if isinstance(v, OpaqueValue):
                stored = [v.curr, v.curr_txid, v.prev]
            elif isinstance(v, TransactionalValue):
                stored = [v.val, v.txid]
            else:
                stored = [v]
            rows.append(self._key(k) + stored)
        if rows:
            try:
                self.client.execute_insert_query(self.upsert, [[Column("c", x, None) for x in r] for r in rows])
            except JdbcError as exc:
                raise FailedException(f"JdbcMapState {self.table!r}: {exc.message}") from exc


class JdbcMapStateFactory(StateFactory):
    """Makes a :class:`MapState` of ``kind`` over a table for each partition."""

    def __init__(self, kind: str, options: _Options) -> None:
        if kind not in KINDS:
            raise InvalidTopologyException(f"JdbcMapState kind must be one of {list(KINDS)}, got {kind!r}")
        if not options.table_name or not options.key_columns:
            raise InvalidTopologyException("JdbcMapState needs with_table_name and with_key_columns")
        self.kind = kind
        self.options = options

    def backing(self) -> JdbcBackingMap:
        assert self.options.table_name is not None
        backing = JdbcBackingMap(self.options.client(), self.options.table_name, self.options.key_columns, self.kind)
        backing.check()
        return backing

    def make_state(self, conf: dict[str, Any], context: Any, partition_index: int, num_partitions: int) -> MapState:
        return MapState(CachedMap(self.backing(), self.options.cache_size), self.kind)


class JdbcMapState:
    """A Trident map state in a table: ``JdbcMapState.factory(kind, options)``."""

    @staticmethod
    def factory(kind: str, options: _Options) -> JdbcMapStateFactory:
        return JdbcMapStateFactory(kind, options)
