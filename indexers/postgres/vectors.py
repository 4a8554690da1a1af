"""Vectors in PostgreSQL: the vector base (backends.VectorIndex) as a pgvector table, and the
embedding cache (backends.VectorRows) as a table of float32 rows.

The base, `vector_base` in the memdir's schema, holds (iid, vector(dim)) and is searched by
inner product (`<#>`, the negative inner product, ascending). As with FAISS (vectors.py), up
to `vectors.hnsw_above` vectors are searched exactly (a sequential scan); above that, `build`
adds an HNSW index (`vector_ip_ops`, m = 3/5 of `vectors.hnsw_m`: see `graph_degree`,
ef_construction = `vectors.ef_construction`), and each search sets `hnsw.ef_search` (at least
k) for its own transaction only, so a connection pooler never carries it to another client. `build` loads
the new vectors into a fresh table and renames it over the old one in one transaction, so
readers see the old base or the new one, never a half-built one.

The embedding cache of one model is `embeddings_<model>` (row number, the float32 bytes):
exact, half the size of a text vector, and never searched itself.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from memdir.archive_format.settings import IndexSettings, VectorSettings

from .database import Database

if TYPE_CHECKING:
    import numpy as np

BASE = "vector_base"


def embeddings_table(model_id: str) -> str:
    """The embedding cache's table for one model (a readable prefix and a hash of the id)."""
    prefix = re.sub(r"[^a-z0-9]+", "_", model_id.lower()).strip("_")[:24]
    digest = hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:10]
    return f"embeddings_{prefix}_{digest}"


def graph_degree(settings: VectorSettings) -> int:
    """pgvector's m for the memdir's `vectors.hnsw_m`: three fifths of it (12 for the default
    20), the least that found as much of the exact top 10 as the local base. At 100k MiniLM
    vectors and 200 LoCoMo dev questions, `ef_search` 192, two builds each (BENCHMARKS.md,
    "PostgreSQL at 100k after the s14-scale merge"): the local graph (FAISS, M 20 over float16
    rows) 0.940; pgvector m 10 (half, the earlier rule) 0.935, m 12 0.946, m 16 0.954. Half
    sufficed while the local graph linked 8-bit codes (m 16 for `hnsw_m` 32); it now links
    float16 rows. m 16 would find more but put a 100k build over 1.5× the local one's (1.6×,
    against 1.4× at m 10). Only `hnsw_m` 20 was measured for this rule."""
    return max(2, settings.hnsw_m * 3 // 5)


def graph_megabytes(rows: int, dim: int, m: int, cap: int) -> int:
    """The memory an HNSW build gets (maintenance_work_mem, for its own transaction): room for
    the whole graph (per vector its floats, 2·m neighbours on the ground layer and pgvector's
    overhead, with a quarter to spare), at least 256 MB and at most `cap`
    (`index.build_megabytes`, 1 GB unless the server's owner raises it: a server's memory is
    not ours to take, so a larger graph is built partly on disk). pgvector builds what does
    not fit much more slowly (100k MiniLM-sized vectors at m 32 outgrow 256 MB; at m 12, 1 GB
    held 511,499 of a million, and the 2,652 MB asked for the million held them all, ≈ 6×
    faster: BENCHMARKS.md, "PostgreSQL at a million memories")."""
    element = dim * 4 + 2 * m * 12 + 400  # bytes; 256 MB held 96,825 of 384 floats at m 32
    return min(cap, max(256, int(rows * element * 1.25 / 2**20) + 1))


class PgVectorIndex:
    """The vector base in the memdir's schema (see the module docstring)."""

    def __init__(
        self,
        database: Database,
        dim: int,
        settings: VectorSettings,
        store: PgVectorRows,
        build_megabytes: int = IndexSettings.build_megabytes,
    ) -> None:
        self.db = database
        self.dim = dim
        self.settings = settings
        self.store = store
        self.build_megabytes = build_megabytes  # settings.index.build_megabytes
        self._seen = False

    def _exists(self) -> bool:
        """Whether the base is there (known once it was: a search then skips the look-up; a
        rebuild replaces the table in one transaction, and `remove` forgets it)."""
        if not self._seen:
            self._seen = self.db.table_exists(BASE)
        return self._seen

    def size(self) -> int:
        if not self.db.table_exists(BASE):
            return 0
        return int(self.db.one("SELECT COUNT(*) FROM {s}.{table}", table=BASE)[0])

    def kind(self) -> str:
        if not self.db.table_exists(BASE):
            return "none"
        found = self.db.one(
            "SELECT 1 FROM pg_indexes WHERE schemaname = %s AND tablename = %s"
            " AND indexdef LIKE %s",
            (self.db.schema, BASE, "%USING hnsw%"),
        )
        return "hnsw" if found else "flat"

    def build(self, iids: np.ndarray, rows: np.ndarray) -> None:
        """Replace the base with exactly these memories' vectors (a new table swapped in)."""
        import numpy as np

        fresh = f"{BASE}_new"
        vectors = np.ascontiguousarray(self.store.rows(rows), dtype=np.float32)
        with self.db.transaction():
            self.db.drop_table(fresh)
            self.db.execute(
                f"CREATE TABLE {{s}}.{{table}} (iid BIGINT PRIMARY KEY,"
                f" embedding vector({int(self.dim)}) NOT NULL)",
                table=fresh,
            )
            self.db.copy(
                "COPY {s}.{table} (iid, embedding) FROM STDIN WITH (FORMAT BINARY)",
                ((int(iid), row) for iid, row in zip(iids, vectors, strict=True)),
                ("int8", "vector"),
                table=fresh,
            )
            if len(vectors) > self.settings.hnsw_above:
                m = graph_degree(self.settings)
                self.db.execute(
                    "SELECT set_config('maintenance_work_mem', %s, true)",
                    (f"{graph_megabytes(len(vectors), self.dim, m, self.build_megabytes)}MB",),
                )
                # pgvector asks for ef_construction ≥ 2·m
                ef_construction = max(2 * m, self.settings.ef_construction)
                self.db.execute(
                    f"CREATE INDEX {{hnsw}} ON {{s}}.{{table}} USING hnsw"
                    f" (embedding vector_ip_ops) WITH (m = {int(m)},"
                    f" ef_construction = {int(ef_construction)})",
                    table=fresh,
                    hnsw=f"{fresh}_hnsw",
                )
            self.db.drop_table(BASE)
            self.db.execute("ALTER TABLE {s}.{table} RENAME TO {base}", table=fresh, base=BASE)
            # index names are unique in a schema: give the new ones the names of the old ones
            for suffix in ("pkey", "hnsw"):
                self.db.execute(
                    "ALTER INDEX IF EXISTS {s}.{old} RENAME TO {new}",
                    old=f"{fresh}_{suffix}",
                    new=f"{BASE}_{suffix}",
                )

    def remove(self) -> None:
        self.db.drop_table(BASE)
        self._seen = False

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        import numpy as np

        if k <= 0 or not self._exists():
            return []
        vector = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        # BEGIN, the setting, the search and COMMIT in one round trip
        with self.db.pipeline():
            with self.db.transaction():
                self.db.execute(
                    "SELECT set_config('hnsw.ef_search', %s, true)",
                    (str(max(self.settings.ef_search, k)),),
                )
                found = self.db.execute(
                    "SELECT iid, (embedding <#> %s) * -1 FROM {s}.{table}"
                    " ORDER BY embedding <#> %s LIMIT %s",
                    (vector, vector, k),
                    table=BASE,
                )
            rows = found.fetchall()
        return [(int(iid), float(score)) for iid, score in rows]


class PgVectorRows:
    """The embedding cache of one model: float32 rows by row number.

    A committed row never changes until `rewrite` (a rebuild's compaction, which starts a new
    generation: IndexStorage then opens the store again), so rows read outside a transaction
    are kept here, up to KEPT of them: a recall reads its pool's vectors two or three times,
    and the next recall many of the same (the local backend reads them from its mapped file).
    Rows read inside a transaction are not kept (it may roll back an append)."""

    KEPT = 50_000

    def __init__(self, database: Database, model_id: str, dim: int) -> None:
        self.db = database
        self.dim = dim
        self.table = embeddings_table(model_id)
        self._created = False
        self._kept: dict[int, bytes] = {}

    def _create(self) -> None:
        if not self._created:
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS {s}.{table}"
                " (number BIGINT PRIMARY KEY, embedding BYTEA NOT NULL)",
                table=self.table,
            )
            self._created = True

    def _exists(self) -> bool:
        """Whether the table is there (known once it was: a reader then skips the look-up)."""
        if not self._created:
            self._created = self.db.table_exists(self.table)
        return self._created

    def count(self) -> int:
        if not self._exists():
            return 0
        found = self.db.one("SELECT MAX(number) FROM {s}.{table}", table=self.table)[0]
        return 0 if found is None else int(found) + 1

    def append(self, vectors: np.ndarray) -> int:
        import numpy as np

        self._create()
        rows = np.ascontiguousarray(vectors, dtype=np.float32)
        with self.db.transaction():
            start = self.count()
            self.db.copy(
                "COPY {s}.{table} (number, embedding) FROM STDIN WITH (FORMAT BINARY)",
                ((start + n, row.tobytes()) for n, row in enumerate(rows)),
                ("int8", "bytea"),
                table=self.table,
            )
        return start

    def rows(self, numbers: list[int] | np.ndarray) -> np.ndarray:
        import numpy as np

        wanted = [int(n) for n in np.asarray(numbers, dtype=np.int64)]
        if not wanted:
            return np.zeros((0, self.dim), dtype=np.float32)
        kept = self._kept
        asked = sorted({n for n in wanted if n not in kept})
        found = {n: kept[n] for n in wanted if n in kept}
        if asked and self._exists():
            read = dict(
                self.db.binary_rows(
                    "SELECT number, embedding FROM {s}.{table} WHERE number = ANY(%s)",
                    (asked,),
                    table=self.table,
                )
            )
            found.update(read)
            if not self.db.in_transaction():
                if len(kept) + len(read) > self.KEPT:
                    kept.clear()
                kept.update(read)
        missing = [n for n in wanted if n not in found]
        if missing:
            raise IndexError(f"vector row {missing[0]} is not in {self.table}")
        joined = b"".join(bytes(found[n]) for n in wanted)
        return np.frombuffer(joined, dtype=np.float32).reshape(len(wanted), self.dim).copy()

    def current(self) -> bool:
        return True

    def rewrite(self, vectors: np.ndarray) -> None:
        self._kept.clear()
        self._create()
        with self.db.transaction():
            self.db.execute("DELETE FROM {s}.{table}", table=self.table)
            self.append(vectors)
