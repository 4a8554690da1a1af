"""The catalog in PostgreSQL: catalog.SqlCatalog's tables and statements in the memdir's
schema, run through `PostgresConnection`.

A list of values is bound as one array (`= ANY(%s)`), so a lookup of any size is one statement.
The schema id is a row of the `layout` table, and creating the tables takes an advisory lock,
so two processes opening a new memdir at once create them once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..catalog import SqlCatalog, insert_statement, last_per_key
from .database import Database

COPY_FROM = 100  # rows: a batch this large is copied into a temporary table, then inserted


STAGED = "memdir_staged_rows"  # the temporary table of a large insert


class PostgresConnection:
    """catalog.SqlConnection over a Database: `?` becomes `%s` (`%b`, binary, for a list),
    `{s}` the memdir's schema, and the schema's `WITHOUT ROWID` (SQLite's) is dropped: a
    PostgreSQL table has no rowid."""

    read_only = False

    def __init__(self, database: Database) -> None:
        self.db = database
        self._statements: dict[str, str] = {}

    def _statement(self, statement: str) -> str:
        found = self._statements.get(statement)
        if found is None:
            # a list goes in binary: psycopg writes a long one (a rebuild's 100k hashes) as
            # text element by element in Python, escaping each
            found = self._statements[statement] = (
                statement.replace("= ANY(?)", "= ANY(%b)")
                .replace("?", "%s")
                .replace(" WITHOUT ROWID", "")
            )
        return found

    def rows(self, statement: str, params: Sequence[Any] = ()) -> Iterable[Sequence[Any]]:
        found: list[Sequence[Any]] = self.db.rows(self._statement(statement), params)
        return found

    def one(self, statement: str, params: Sequence[Any] = ()) -> Sequence[Any] | None:
        found: Sequence[Any] | None = self.db.one(self._statement(statement), params)
        return found

    def execute(self, statement: str, params: Sequence[Any] = ()) -> None:
        self.db.execute(self._statement(statement), params)

    def executemany(self, statement: str, batch: Iterable[Sequence[Any]]) -> None:
        self.db.executemany(self._statement(statement), batch)

    def insert(
        self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], key: str | None
    ) -> None:
        """A small batch as one executemany (pipelined); a large one by COPY into a temporary
        table of the same columns, then one INSERT … SELECT (an upsert with `key`): an
        executemany costs an executor start per row, ≈ 4 s per 100k rows of a rebuild's
        caches (BENCHMARKS.md). A key's last row wins either way: one statement may not
        upsert a key twice, so the batch keeps only the last."""
        batch = last_per_key(columns, rows, key)
        if len(batch) < COPY_FROM:
            marks = ", ".join(["?"] * len(columns))
            self.executemany(insert_statement(table, columns, key, f"VALUES ({marks})"), batch)
            return
        names = ", ".join(columns)
        with self.db.transaction():
            self.db.execute(
                f"CREATE TEMP TABLE {{staged}} ON COMMIT DROP AS SELECT {names}"
                f" FROM {{s}}.{table} WITH NO DATA",
                staged=STAGED,
            )
            self.db.copy_text(f"COPY {{staged}} ({names}) FROM STDIN", batch, staged=STAGED)
            self.db.execute(
                insert_statement(table, columns, key, f"SELECT {names} FROM {{staged}}"),
                staged=STAGED,
            )
            self.db.execute("DROP TABLE {staged}", staged=STAGED)

    def transaction(self) -> AbstractContextManager[object]:
        return self.db.transaction()

    def schema_lock(self) -> AbstractContextManager[object]:
        return self.db.schema_lock()

    def schema_id(self) -> str | None:
        if not self.db.table_exists("layout"):
            return None
        found = self.db.one("SELECT value FROM {s}.layout WHERE name = 'schema'")
        return None if found is None else str(found[0])

    def set_schema_id(self, schema_id: str) -> None:
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS {s}.layout (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        self.db.execute(
            "INSERT INTO {s}.layout(name, value) VALUES ('schema', %s)"
            " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
            (schema_id,),
        )

    def table_exists(self, table: str) -> bool:
        return self.db.table_exists(table)

    def data_version(self) -> object:
        return object()  # PostgreSQL cannot tell: a new token each time (storage.py)

    def release_space(self) -> None:
        """VACUUM the mirror tables, so deleted rows (a forgotten memory's text) are reclaimed
        rather than kept as dead tuples, and ANALYZE them: after a rebuild the planner would
        otherwise scan all of `memories` for the vector delta (76 ms a recall at 100k) until
        autovacuum came by. It cannot run inside a transaction; it then waits for autovacuum."""
        if self.db.in_transaction():
            return
        for table in ("memories", "events", "affect_values"):
            self.db.execute("VACUUM (ANALYZE) {s}.{table}", table=table)

    def close(self) -> None:
        self.db.close()


class PostgresCatalog(SqlCatalog):
    """The catalog in the memdir's schema of the index database."""

    def __init__(self, database: Database) -> None:
        self.db = database
        super().__init__(PostgresConnection(database))
