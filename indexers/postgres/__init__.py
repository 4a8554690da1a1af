"""The derived index on a PostgreSQL server with pgvector (`settings.index.backend: postgres`).

One schema per memdir (`memdir_<id>`, database.schema_name) holds its catalog (catalog.py),
its full-text tables per generation (fulltext.py), its vector base and embedding cache
(vectors.py). A schema rather than a `memdir_id` column on shared tables: each memdir gets
its own HNSW graph and full-text btrees, so a search never walks other memdirs' rows (pgvector
filters *after* an HNSW scan, so a shared graph returns too few rows for a small memdir in a
large database), a memdir is dropped or rebuilt as a unit, no statement can forget a
`WHERE memdir_id = …`, and Citus can place whole schemas on workers (schema-based sharding).
Every statement names its tables through the schema explicitly, never `search_path`, so a
transaction-pooling connection pooler is safe for readers (the writer lock needs a session:
writer.py). docs/SCALE.md has the deployment picture.

The memory table (memorytable.py) stays a memory-mapped file in the memdir's `.memdir/`, as
do the index lock file and the embedding model: see docs/SCALE.md. The updater also holds the
schema's advisory lock (writer.py), so one writer per memdir holds across hosts.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from memdir.archive_format.memdir import Memdir
from memdir.archive_format.settings import IndexSettings, VectorSettings

from ..backends import Catalog, FullTextIndex, VectorIndex, VectorRows
from .database import Database, IndexUnavailableError, schema_name

if TYPE_CHECKING:
    from .writer import AdvisoryLock

__all__ = ["Database", "IndexUnavailableError", "PostgresParts", "schema_name"]

FULLTEXT_TABLES = {"tantivy": "fulltext", "sessions": "sessions"}


def memdir_schema(memdir: Memdir) -> str:
    """The schema of a memdir: by its id in memdir.yaml (by its path when it has none)."""
    return schema_name(str(memdir.config.get("id") or memdir.root))


class PostgresParts:
    """storage.IndexParts in one schema of the database at `dsn`; one shared connection, so
    the catalog, documents and vectors of an update commit in one transaction; an HNSW build
    asks the server for at most `build_megabytes` (settings.index.build_megabytes)."""

    def __init__(
        self,
        dsn: str,
        memdir: Memdir,
        root: Path,
        schema: str | None = None,
        build_megabytes: int = IndexSettings.build_megabytes,
    ) -> None:
        self.db = Database(dsn, schema or memdir_schema(memdir))
        self.root = root  # the memory table's directory
        self.build_megabytes = build_megabytes
        self._writer: AdvisoryLock | None = None

    def writer_lock(self, timeout: float) -> AbstractContextManager[object]:
        """The schema's advisory writer lock (writer.py), on a connection of its own, kept
        open for this process's next update."""
        if self._writer is None:
            from .writer import AdvisoryLock

            self._writer = AdvisoryLock(self.db.dsn, self.db.schema)
        return self._writer(timeout)

    def catalog(self) -> Catalog:
        from .catalog import PostgresCatalog

        return PostgresCatalog(self.db)

    @staticmethod
    def table(name: str, generation: int) -> str:
        return f"{FULLTEXT_TABLES[name]}_{int(generation)}"

    def fulltext(self, name: str, generation: int) -> FullTextIndex:
        from .fulltext import PostgresFullText

        index = PostgresFullText(self.db, self.table(name, generation))
        index.create()
        return index

    def wipe_fulltext(self, name: str, generation: int) -> None:
        from .fulltext import PostgresFullText

        PostgresFullText.wipe(self.db, self.table(name, generation))

    def remove_stale(self, generation: int) -> None:
        """Drop other generations' full-text tables, then vacuum the current ones (called
        after a rebuild has committed: a new generation's postings then read from the btree
        alone, see fulltext.py)."""
        from .fulltext import PostgresFullText

        current = [self.table(name, generation) for name in FULLTEXT_TABLES]
        keep = {name for table in current for name in PostgresFullText.tables(table)}
        rows = self.db.rows(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s"
            " AND (tablename LIKE 'fulltext\\_%%' OR tablename LIKE 'sessions\\_%%')",
            (self.db.schema,),
        )
        for (table,) in rows:
            if table not in keep:
                self.db.drop_table(table)
        for table in current:
            PostgresFullText(self.db, table).vacuum()

    def base(self, model_id: str, dim: int, settings: VectorSettings) -> VectorIndex:
        from .vectors import PgVectorIndex, PgVectorRows

        rows = PgVectorRows(self.db, model_id, dim)
        return PgVectorIndex(self.db, dim, settings, rows, self.build_megabytes)

    def store(self, model_id: str, dim: int) -> VectorRows:
        from .vectors import PgVectorRows

        return PgVectorRows(self.db, model_id, dim)

    def base_outdated(self) -> bool:
        return False

    def missing(self, generation: int) -> str | None:
        from .vectors import BASE

        if not self.db.table_exists(self.table("tantivy", generation)):
            return "full-text index missing"
        if not self.db.table_exists(BASE):
            return "vector index missing"
        return None

    def size_bytes(self) -> int:
        """The schema's tables and indexes, and the memory table's files."""
        found = self.db.one(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class AS c"
            " JOIN pg_namespace AS n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind = 'r'",
            (self.db.schema,),
        )
        local = sum(f.stat().st_size for f in self.root.rglob("*") if f.is_file())
        return int(found[0]) + local

    def drop(self) -> None:
        """Drop the memdir's schema and everything in it."""
        self.db.execute("DROP SCHEMA IF EXISTS {s} CASCADE")
        self.db.close()

    def close(self) -> None:
        self.db.close()
        if self._writer is not None:
            self._writer.close()
