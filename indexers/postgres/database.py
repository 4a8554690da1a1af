"""One connection to the index database, the schema that holds one memdir, and the one place
where a database failure becomes a memdir error.

Every statement the postgres backend runs goes through `Database`: values are always bound
parameters, and the only names spliced into SQL are identifiers (the memdir's schema, a
generation's table) quoted by psycopg's `sql.Identifier`. A lost or refused connection is an
`IndexUnavailableError`, one line with a hint, and the next call connects again (a long-lived
`watch` or `serve` survives a database restart). psycopg is imported here and only when a
memdir whose index lives on PostgreSQL opens it, so `memdir --help` and the write commands
never load it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memdir.archive_format.errors import MemdirError

if TYPE_CHECKING:
    import psycopg

CONNECT_TIMEOUT = 10  # seconds; an unreachable host fails within this


class IndexUnavailableError(MemdirError):
    """The index database cannot be reached (or refused us); the memdir's files are untouched."""


def schema_name(memdir_id: str) -> str:
    """The schema holding one memdir's index: `memdir_` and its id (memdir.yaml's `id`), kept
    to the characters and the 63 bytes PostgreSQL allows in a name."""
    clean = re.sub(r"[^a-z0-9_]", "_", memdir_id.lower())
    if not clean or len(clean) > 48:
        clean = hashlib.sha256(memdir_id.encode("utf-8")).hexdigest()[:32]
    return f"memdir_{clean}"


def _problem(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


class Database:
    """A lazily opened, autocommit connection to `dsn`, scoped to one schema.

    Outside `transaction()` each statement commits on its own; inside it, statements share one
    transaction and nested `transaction()` blocks are savepoints, so the catalog, the full-text
    indexes and the vectors of one update commit together.
    """

    def __init__(self, dsn: str, schema: str, application_name: str | None = None) -> None:
        self.dsn = dsn
        self.schema = schema
        self.application_name = application_name  # how pg_stat_activity shows it, if given
        self._connection: psycopg.Connection[Any] | None = None
        self._templates: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}

    # connecting -----------------------------------------------------------------------------
    @contextmanager
    def guard(self) -> Iterator[None]:
        """Turn a database failure into IndexUnavailableError (and drop a broken connection)."""
        import psycopg

        try:
            yield
        except (psycopg.OperationalError, psycopg.InterfaceError) as error:
            if self._connection is not None and (
                self._connection.broken or self._connection.closed
            ):
                self._connection = None
            raise IndexUnavailableError(
                f"the index database is unavailable: {_problem(error)}",
                hint="check settings.index.dsn in memdir.local.yaml, the password in $PGPASSWORD or "
                "~/.pgpass, and that the server is up; the memdir's files are untouched",
            ) from error
        except psycopg.Error as error:  # a table dropped by hand, a permission taken away…
            raise MemdirError(
                f"the index database refused a statement: {_problem(error)}",
                hint="`memdir index --rebuild` rebuilds the index from the files",
            ) from error

    @property
    def connection(self) -> psycopg.Connection[Any]:
        if self._connection is None or self._connection.closed or self._connection.broken:
            import psycopg

            with self.guard():
                named: dict[str, Any] = (
                    {"application_name": self.application_name} if self.application_name else {}
                )
                connection = psycopg.connect(
                    self.dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT, **named
                )
                self._prepare(connection)
            self._connection = connection
        return self._connection

    def _prepare(self, connection: psycopg.Connection[Any]) -> None:
        """The pgvector extension and this memdir's schema, created on first use."""
        from pgvector.psycopg import register_vector
        from psycopg import errors, sql

        installed = connection.execute(
            "SELECT 1 FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        if installed is None:
            try:
                connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except errors.InsufficientPrivilege:
                raise MemdirError(
                    "the index database has no pgvector extension and memdir may not create it",
                    hint="run `CREATE EXTENSION vector` once as the database owner",
                ) from None
        register_vector(connection)
        exists = connection.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)
        ).fetchone()
        if exists is None:
            connection.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema))
            )

    def is_open(self) -> bool:
        """Whether a working connection is open (without opening one)."""
        connection = self._connection
        return connection is not None and not connection.closed and not connection.broken

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    # statements -----------------------------------------------------------------------------
    def sql(self, template: str, **tables: str) -> Any:
        """`template` with `{s}` as this memdir's schema and each `{name}` as the identifier
        given for it; values stay `%s` placeholders, bound at execution."""
        key = (template, tuple(sorted(tables.items())))
        composed = self._templates.get(key)
        if composed is None:
            from psycopg import sql

            names = {name: sql.Identifier(value) for name, value in tables.items()}
            composed = sql.SQL(template).format(s=sql.Identifier(self.schema), **names)
            self._templates[key] = composed
        return composed

    def execute(
        self, template: str, params: Sequence[Any] | Mapping[str, Any] = (), **tables: str
    ) -> Any:
        """Run one statement; returns its cursor."""
        with self.guard():
            return self.connection.execute(self.sql(template, **tables), params)

    def rows(
        self, template: str, params: Sequence[Any] | Mapping[str, Any] = (), **tables: str
    ) -> list[Any]:
        with self.guard():
            return self.connection.execute(self.sql(template, **tables), params).fetchall()

    def binary_rows(
        self, template: str, params: Sequence[Any] | Mapping[str, Any] = (), **tables: str
    ) -> list[Any]:
        """As `rows`, sent in PostgreSQL's binary format (a bytea as its bytes, not twice as
        many hex digits; numbers without parsing)."""
        with self.guard():
            cursor = self.connection.execute(self.sql(template, **tables), params, binary=True)
            return cursor.fetchall()

    def one(
        self, template: str, params: Sequence[Any] | Mapping[str, Any] = (), **tables: str
    ) -> Any:
        with self.guard():
            return self.connection.execute(self.sql(template, **tables), params).fetchone()

    def executemany(self, template: str, params: Iterable[Sequence[Any]], **tables: str) -> None:
        batch = list(params)
        if not batch:
            return
        with self.guard(), self.connection.cursor() as cursor:
            cursor.executemany(self.sql(template, **tables), batch)

    def copy(
        self, template: str, rows: Iterable[Sequence[Any]], types: Sequence[str], **tables: str
    ) -> None:
        """COPY rows in binary (fast bulk loads: the vector base, the embedding cache)."""
        with self.guard(), self.connection.cursor() as cursor:
            with cursor.copy(self.sql(template, **tables)) as copy:
                copy.set_types(list(types))
                for row in rows:
                    copy.write_row(row)

    def copy_text(self, template: str, rows: Iterable[Sequence[Any]], **tables: str) -> None:
        """COPY rows in text format, each value as psycopg writes it for its Python type (no
        column types to name: the server reads them as its columns' types)."""
        with self.guard(), self.connection.cursor() as cursor:
            with cursor.copy(self.sql(template, **tables)) as copy:
                for row in rows:
                    copy.write_row(row)

    def drop_table(self, table: str) -> None:
        self.execute("DROP TABLE IF EXISTS {s}.{table}", table=table)

    def table_exists(self, table: str) -> bool:
        found = self.one("SELECT to_regclass(%s) IS NOT NULL", (f'"{self.schema}"."{table}"',))
        return bool(found[0])

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One transaction (a savepoint when nested); commits on success."""
        with self.guard():
            with self.connection.transaction():
                yield self.connection

    @contextmanager
    def schema_lock(self) -> Iterator[Any]:
        """A transaction holding the schema's advisory lock: one process at a time lays out or
        changes this memdir's tables."""
        with self.transaction() as connection:
            self.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.schema,))
            yield connection

    @contextmanager
    def pipeline(self) -> Iterator[Any]:
        """Statements inside are sent together, their results read at the first fetch or at
        the end: one round trip instead of one each (psycopg's pipeline mode)."""
        with self.guard():
            with self.connection.pipeline() as pipeline:
                yield pipeline

    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        connection = self._connection
        return (
            connection is not None
            and not connection.closed
            and connection.info.transaction_status != TransactionStatus.IDLE
        )

    def backend_pid(self) -> int:
        """The server process of this connection (tests end it to simulate a lost link)."""
        return int(self.connection.info.backend_pid)
