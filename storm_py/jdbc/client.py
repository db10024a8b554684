"""This module owns :class:`JdbcClient` (Storm's): the statements storm-jdbc runs over a provider's connections
(inserts in one transaction, selects into :class:`Column` rows, a table's column schema), with Storm's ``?``
placeholders and a query timeout, and the batch write that keeps the good rows of a batch when the database refuses
some."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from storm_py.jdbc.driver import Driver, declared_type, message_of
from storm_py.jdbc.provider import ConnectionProvider
from storm_py.jdbc.sql import insert_query, rewrite_placeholders
from storm_py.jdbc.types import Column, JdbcError

#: the statement timeout set on each open PostgreSQL connection (ms)
_TIMEOUTS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


class DatabaseDown(JdbcError):
    """The connection or the server failed: nothing was written; the same work can be retried."""

    code = "jdbc_database_down"


@dataclass
class BatchOutcome:
    """What a batch write did: the indexes of the rows the database refused, with its message (the others are
    committed)."""

    refused: dict[int, str] = field(default_factory=dict)


class JdbcClient:
    """Storm's ``JdbcClient(connectionProvider, queryTimeoutSecs)``; errors raise :class:`JdbcError` (or its
    :class:`DatabaseDown` when the database could not be reached)."""

    def __init__(self, provider: ConnectionProvider, query_timeout_secs: int | float = -1) -> None:
        self.provider = provider
        self.query_timeout_secs = query_timeout_secs
        self._queries: dict[str, str] = {}

    @property
    def _driver(self) -> Driver | None:
        return self.provider.driver()

    def _sql(self, query: str) -> str:
        sql = self._queries.get(query)
        if sql is None:
            driver = self._driver
            style = driver.paramstyle if driver is not None else "qmark"
            sql = self._queries[query] = rewrite_placeholders(query, style)
        return sql

    def _begin(self, cursor: Any) -> None:
        """Start the transaction: SQLite's module opens one only before DML (a savepoint outside one would
        commit on release); PostgreSQL gets the query timeout."""
        driver = self._driver
        if driver is not None and driver.is_sqlite and not cursor.connection.in_transaction:
            cursor.execute("BEGIN")
        if driver is not None and driver.is_postgres and self.query_timeout_secs and self.query_timeout_secs > 0:
            ms = int(self.query_timeout_secs * 1000)
            conn = cursor.connection
            if _TIMEOUTS.get(conn) != ms:  # set once per connection, in a transaction of its own
                cursor.execute(f"SET statement_timeout = {ms}")
                conn.commit()
                _TIMEOUTS[conn] = ms

    def _error(self, exc: BaseException, what: str) -> JdbcError:
        driver = self._driver
        kind = DatabaseDown if driver is not None and driver.is_down(exc) else JdbcError
        return kind(f"{what}: {message_of(exc)}")

    def _known(self, exc: BaseException) -> bool:
        driver = self._driver
        return driver.is_error(exc) if driver is not None else isinstance(exc, Exception)

    def _connection(self) -> Any:
        try:
            return self.provider.get_connection()
        except JdbcError as exc:
            raise DatabaseDown(exc.message) from exc

    @staticmethod
    def _close(conn: Any, failed: bool) -> None:
        invalidate = getattr(conn, "invalidate", None) if failed else None
        try:
            if invalidate is not None:
                invalidate()
            else:
                conn.close()
        except Exception as exc:  # a broken connection: dropped either way
            del exc

    def insert(self, table_name: str, column_lists: Sequence[Sequence[Column]]) -> None:
        """Insert rows into ``table_name`` (columns named by the first row's), in one transaction."""
        if not column_lists:
            return
        self.execute_insert_query(insert_query(table_name, [c.column_name for c in column_lists[0]]), column_lists)

    def execute_insert_query(self, query: str, column_lists: Sequence[Sequence[Column]]) -> None:
        """Run ``query`` once per row (its ``?`` bound to the row's values), in one transaction."""
        outcome = self.write_batch(query, [[c.val for c in row] for row in column_lists], keep_good=False)
        if outcome.refused:
            raise JdbcError(next(iter(outcome.refused.values())))

    def write_batch(self, query: str, rows: Sequence[Sequence[Any]], keep_good: bool = True,
                    extra: Sequence[tuple[str, Sequence[Any]]] = ()) -> BatchOutcome:
        """Run ``query`` for every row with one ``executemany`` and the ``extra`` statements after it, in one
        transaction.  When the database refuses a row and ``keep_good``, the transaction is written again row by
        row, each under a savepoint, leaving out (and naming) the refused rows; the ``extra`` statements must
        succeed.  Raises :class:`DatabaseDown` when the database could not be reached (nothing is written)."""
        sql = self._sql(query)
        conn = self._connection()
        failed = False
        try:
            try:
                cur = conn.cursor()
                self._begin(cur)
                if rows:
                    cur.executemany(sql, [list(r) for r in rows])
                self._run_extra(cur, extra)
                conn.commit()
                return BatchOutcome()
            except Exception as exc:
                if not self._known(exc):
                    raise
                err = self._error(exc, "insert failed")
                failed = isinstance(err, DatabaseDown)
                if failed or not keep_good:
                    self._rollback(conn)
                    if not keep_good and not failed:
                        return BatchOutcome({0: err.message})
                    raise err from exc
                self._rollback(conn)
            return self._row_by_row(conn, sql, rows, extra)
        except DatabaseDown:
            failed = True
            raise
        finally:
            self._close(conn, failed)

    def _row_by_row(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]],
                    extra: Sequence[tuple[str, Sequence[Any]]]) -> BatchOutcome:
        outcome = BatchOutcome()
        try:
            cur = conn.cursor()
            self._begin(cur)
            for index, row in enumerate(rows):
                cur.execute("SAVEPOINT storm_py_row")
                try:
                    cur.execute(sql, list(row))
                except Exception as exc:
                    if not self._known(exc):
                        raise
                    err = self._error(exc, "insert failed")
                    if isinstance(err, DatabaseDown):
                        raise err from exc
                    cur.execute("ROLLBACK TO SAVEPOINT storm_py_row")
                    outcome.refused[index] = message_of(exc)
                else:
                    cur.execute("RELEASE SAVEPOINT storm_py_row")
            self._run_extra(cur, extra)
            conn.commit()
            return outcome
        except DatabaseDown:
            self._rollback(conn)
            raise
        except Exception as exc:
            self._rollback(conn)
            if not self._known(exc):
                raise
            raise self._error(exc, "insert failed") from exc

    def _run_extra(self, cur: Any, extra: Sequence[tuple[str, Sequence[Any]]]) -> None:
        for query, params in extra:
            cur.execute(self._sql(query), list(params))

    @staticmethod
    def _rollback(conn: Any) -> None:
        try:
            conn.rollback()
        except Exception as exc:  # the connection is gone: the transaction is gone with it
            del exc

    def select(self, query: str, params: Sequence[Column]) -> list[list[Column]]:
        """Run a select with ``params`` bound to its ``?``: per row one ``Column(name, value, sql_type)`` per
        selected column, in select-list order."""
        conn = self._connection()
        failed = False
        try:
            cur = conn.cursor()
            self._begin(cur)
            cur.execute(self._sql(query), [c.val for c in params])
            names = [(d[0], d[1]) for d in (cur.description or ())]
            rows = cur.fetchall()
            conn.commit()
        except Exception as exc:
            if not self._known(exc):
                raise
            err = self._error(exc, "select failed")
            failed = isinstance(err, DatabaseDown)
            self._rollback(conn)
            raise err from exc
        finally:
            self._close(conn, failed)
        driver = self._driver
        types = [driver.sql_type(code) if driver is not None else None for _, code in names]
        return [[Column(str(name), val, t) for (name, _), val, t in zip(names, row, types, strict=True)]
                for row in rows]

    def get_column_schema(self, table_name: str) -> list[Column]:
        """The table's columns, in the table's order, as ``Column(name, sql_type)``; an unknown table raises
        :class:`JdbcError` naming it."""
        driver = self._driver
        if driver is not None and driver.is_sqlite:
            rows = self.select(f"SELECT name, type FROM pragma_table_info('{table_name.replace(chr(39), '')}')", [])
            if not rows:
                raise JdbcError(f"table {table_name!r} does not exist")
            return [Column(str(r[0].val), declared_type(str(r[1].val or ""))) for r in rows]
        try:
            conn = self._connection()
        except DatabaseDown:
            raise
        failed = False
        try:
            cur = conn.cursor()
            cur.execute(f"SELECT * FROM {table_name} WHERE 1 = 0")
            described = list(cur.description or ())
            conn.rollback()
        except Exception as exc:
            if not self._known(exc):
                raise
            err = self._error(exc, f"cannot read the columns of table {table_name!r}")
            failed = isinstance(err, DatabaseDown)
            self._rollback(conn)
            raise err from exc
        finally:
            self._close(conn, failed)
        return [Column(str(d[0]), driver.sql_type(d[1]) if driver is not None else None) for d in described]

    def execute_sql(self, sql: str) -> None:
        """Run one statement (DDL or DML without parameters) and commit."""
        conn = self._connection()
        failed = False
        try:
            cur = conn.cursor()
            cur.execute(sql)
            conn.commit()
        except Exception as exc:
            if not self._known(exc):
                raise
            err = self._error(exc, "statement failed")
            failed = isinstance(err, DatabaseDown)
            self._rollback(conn)
            raise err from exc
        finally:
            self._close(conn, failed)
