"""The catalog (backends.Catalog) in PostgreSQL: the SQLite catalog's tables in the memdir's
schema, with the same meaning row for row (indexers/catalog.py documents the columns).

Lists of values are bound as one array (`= ANY(%s)`), so a lookup of any size is one
statement. An iid is the largest one plus one, as SQLite hands them out, so a rebuild numbers
memories from 1 again and a rolled-back update leaves no gap.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ..backends import CatalogMemory, Checkpoint, link_degrees, speaker_of, typed_links
from ..names import addressed_names, aliases
from .database import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS {s}.layout (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.manifest (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.checkpoints (
    shelf TEXT PRIMARY KEY, position BIGINT NOT NULL, inode BIGINT NOT NULL,
    fingerprint TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.memories (
    iid BIGINT PRIMARY KEY, id TEXT UNIQUE NOT NULL, line TEXT NOT NULL, text TEXT NOT NULL,
    key TEXT, session TEXT, author TEXT NOT NULL, guaranteed BOOLEAN NOT NULL,
    importance INTEGER NOT NULL, created BIGINT NOT NULL, status TEXT NOT NULL,
    searchable BOOLEAN NOT NULL, content_hash TEXT NOT NULL,
    in_base BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX IF NOT EXISTS memories_key ON {s}.memories(key) WHERE key IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_session ON {s}.memories(session, created, iid)
    WHERE session IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_guaranteed ON {s}.memories(importance, created)
    WHERE guaranteed;
CREATE INDEX IF NOT EXISTS memories_hidden ON {s}.memories(iid)
    WHERE NOT searchable AND in_base;
CREATE INDEX IF NOT EXISTS memories_delta ON {s}.memories(iid) WHERE NOT in_base;
CREATE TABLE IF NOT EXISTS {s}.addressed (
    iid BIGINT NOT NULL, session TEXT NOT NULL, author TEXT NOT NULL, name TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.events (
    seq BIGSERIAL PRIMARY KEY, id TEXT UNIQUE NOT NULL, target TEXT NOT NULL, op TEXT NOT NULL,
    line TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_target ON {s}.events(target);
CREATE TABLE IF NOT EXISTS {s}.rehearsals (memory TEXT NOT NULL, at DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS rehearsals_memory ON {s}.rehearsals(memory);
CREATE TABLE IF NOT EXISTS {s}.affect (
    content_hash TEXT PRIMARY KEY, annotator TEXT NOT NULL, value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.distilled (
    content_hash TEXT PRIMARY KEY, value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.vector_rows (
    content_hash TEXT PRIMARY KEY, number BIGINT NOT NULL
);
"""

# As in catalog.py: another layout drops the tables that mirror the shelves and the manifest's
# version (so the next update rebuilds); the derived caches survive.
SCHEMA_ID = str(zlib.crc32(SCHEMA.encode("utf-8")))
MIRROR_TABLES = ("checkpoints", "memories", "addressed", "events", "rehearsals")

_MEMORY_COLUMNS = (
    "SELECT m.iid, m.id, m.line, m.text, m.status, m.searchable, m.content_hash,"
    " a.annotator, a.value"
    " FROM {s}.memories AS m LEFT JOIN {s}.affect AS a ON a.content_hash = m.content_hash"
)


class PostgresCatalog:
    """backends.Catalog in the memdir's schema of the index database."""

    def __init__(self, database: Database) -> None:
        self.db = database
        self._create_schema()
        # read caches for long-lived processes, as in SqliteCatalog
        self._memories: dict[int, CatalogMemory] = {}
        self._degrees: dict[str, int] | None = None
        self._links: list[tuple[str, str, str]] | None = None
        self._speakers: list[str] | None = None
        self._aliases: dict[str, str] | None = None

    def _create_schema(self) -> None:
        db = self.db
        if db.table_exists("layout"):
            found = db.one("SELECT value FROM {s}.layout WHERE name = 'schema'")
            if found is not None and found[0] == SCHEMA_ID:
                return
        with db.transaction():
            # one creator at a time per schema (two processes opening a new memdir at once)
            db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (db.schema,))
            if db.table_exists("layout"):
                found = db.one("SELECT value FROM {s}.layout WHERE name = 'schema'")
                if found is not None and found[0] == SCHEMA_ID:
                    return
                for table in MIRROR_TABLES:
                    db.execute("DROP TABLE IF EXISTS {s}.{table}", table=table)
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            if db.table_exists("manifest"):
                db.execute("DELETE FROM {s}.manifest WHERE name = 'version'")
            db.execute(
                "INSERT INTO {s}.layout(name, value) VALUES ('schema', %s)"
                " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                (SCHEMA_ID,),
            )

    def _forget_cache(self) -> None:
        self._memories.clear()
        self._degrees = None
        self._links = None
        self._speakers = None
        self._aliases = None

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[object]:
        """Commits on success, rolls back on error (and forgets what was read inside it)."""
        try:
            with self.db.transaction() as connection:
                yield connection
        except BaseException:
            self._forget_cache()
            raise

    # manifest -------------------------------------------------------------------------------
    def manifest(self) -> dict[str, str]:
        return dict(self.db.rows("SELECT name, value FROM {s}.manifest"))

    def set_manifest(self, values: dict[str, str]) -> None:
        self.db.executemany(
            "INSERT INTO {s}.manifest(name, value) VALUES (%s, %s)"
            " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
            values.items(),
        )

    def clear_manifest(self) -> None:
        self.db.execute("DELETE FROM {s}.manifest")

    # checkpoints ----------------------------------------------------------------------------
    def checkpoints(self) -> dict[str, Checkpoint]:
        rows = self.db.rows("SELECT shelf, position, inode, fingerprint FROM {s}.checkpoints")
        return {row[0]: Checkpoint(*row) for row in rows}

    def set_checkpoint(self, checkpoint: Checkpoint) -> None:
        self.db.execute(
            "INSERT INTO {s}.checkpoints(shelf, position, inode, fingerprint)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT (shelf) DO UPDATE SET"
            " position = EXCLUDED.position, inode = EXCLUDED.inode,"
            " fingerprint = EXCLUDED.fingerprint",
            (checkpoint.shelf, checkpoint.offset, checkpoint.inode, checkpoint.fingerprint),
        )

    # memories and events --------------------------------------------------------------------
    def add_memory(self, line: dict[str, Any], created: int, content_hash: str) -> int | None:
        self._forget_cache()
        found = self.db.one(
            "INSERT INTO {s}.memories (iid, id, line, text, key, session, author, guaranteed,"
            " importance, created, status, searchable, content_hash)"
            " VALUES ((SELECT COALESCE(MAX(iid), 0) + 1 FROM {s}.memories),"
            " %s, %s, %s, %s, %s, %s, %s, %s, %s, 'durable', TRUE, %s)"
            " ON CONFLICT (id) DO NOTHING RETURNING iid",
            (
                line["id"],
                json.dumps(line, ensure_ascii=False),
                line["text"],
                line.get("key"),
                line.get("session"),
                str(line.get("author", "")),
                bool(line.get("pinned")) or line.get("temporal") == "milestone",
                int(line.get("importance", 5)),
                created,
                content_hash,
            ),
        )
        if found is None:
            return None
        iid = int(found[0])
        if line.get("session"):
            author = str(line.get("author", ""))
            self.db.executemany(
                "INSERT INTO {s}.addressed(iid, session, author, name) VALUES (%s, %s, %s, %s)",
                [(iid, line["session"], author, name)
                 for name in addressed_names(line["text"], author)],
            )  # fmt: skip
        return iid

    def add_event(self, line: dict[str, Any]) -> bool:
        self._forget_cache()
        found = self.db.one(
            "INSERT INTO {s}.events(id, target, op, line) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (id) DO NOTHING RETURNING seq",
            (line["id"], line["target"], line["op"], json.dumps(line, ensure_ascii=False)),
        )
        return found is not None

    def set_status(self, memory_id: str, status: str, searchable: bool) -> None:
        self._forget_cache()
        self.db.execute(
            "UPDATE {s}.memories SET status = %s, searchable = %s WHERE id = %s",
            (status, searchable, memory_id),
        )

    def set_guaranteed(self, rows: Iterable[tuple[int, bool, int]]) -> None:
        self._forget_cache()
        self.db.executemany(
            "UPDATE {s}.memories SET guaranteed = %s, importance = %s WHERE iid = %s",
            [(bool(flag), int(importance), int(iid)) for iid, flag, importance in rows],
        )

    @staticmethod
    def _memory(row: tuple[Any, ...]) -> CatalogMemory:
        iid, memory_id, line, text, status, searchable, digest, annotator, affect = row
        return CatalogMemory(
            int(iid), memory_id, line, text, status, bool(searchable), digest, annotator,
            affect or "",
        )  # fmt: skip

    def memories_by_id(self, ids: Iterable[str]) -> dict[str, CatalogMemory]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = self.db.rows(_MEMORY_COLUMNS + " WHERE m.id = ANY(%s)", (wanted,))
        return {memory.id: memory for memory in map(self._memory, rows)}

    def memories_by_iid(self, iids: Iterable[int]) -> dict[int, CatalogMemory]:
        wanted = [int(iid) for iid in dict.fromkeys(iids)]
        found = {iid: self._memories[iid] for iid in wanted if iid in self._memories}
        missing = [iid for iid in wanted if iid not in found]
        if missing:
            for row in self.db.rows(_MEMORY_COLUMNS + " WHERE m.iid = ANY(%s)", (missing,)):
                memory = self._memory(row)
                found[memory.iid] = self._memories[memory.iid] = memory
        return found

    def all_memories(self) -> Iterator[CatalogMemory]:
        return map(self._memory, self.db.rows(_MEMORY_COLUMNS + " ORDER BY m.iid"))

    def max_iid(self) -> int | None:
        found = self.db.one("SELECT MAX(iid) FROM {s}.memories")[0]
        return None if found is None else int(found)

    def searchable_iids(self) -> list[int]:
        rows = self.db.rows("SELECT iid FROM {s}.memories WHERE searchable ORDER BY iid")
        return [int(row[0]) for row in rows]

    def content_hashes(self) -> dict[int, str]:
        return {int(i): h for i, h in self.db.rows("SELECT iid, content_hash FROM {s}.memories")}

    def ids_with_keys(self, keys: Iterable[str]) -> list[str]:
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return []
        rows = self.db.rows("SELECT id FROM {s}.memories WHERE key = ANY(%s)", (wanted,))
        return [row[0] for row in rows]

    def keys(self) -> list[str]:
        rows = self.db.rows("SELECT DISTINCT key FROM {s}.memories WHERE key IS NOT NULL")
        return [row[0] for row in rows]

    def events_for(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        rows = self.db.rows(
            "SELECT line FROM {s}.events WHERE target = ANY(%s) ORDER BY seq", (wanted,)
        )
        return [json.loads(row[0]) for row in rows]

    def session_rows(self, sessions: Iterable[str]) -> dict[str, list[tuple[int, str]]]:
        found: dict[str, list[tuple[int, str]]] = {s: [] for s in dict.fromkeys(sessions)}
        if not found:
            return found
        rows = self.db.rows(
            "SELECT session, iid, text FROM {s}.memories WHERE session = ANY(%s) AND searchable"
            " ORDER BY session, created, iid",
            (list(found),),
        )
        for session, iid, text in rows:
            found[session].append((int(iid), text))
        return found

    def guaranteed(self, limit: int) -> list[CatalogMemory]:
        where = " WHERE m.guaranteed AND m.searchable ORDER BY m.importance DESC, m.created DESC"
        return [
            self._memory(row)
            for row in self.db.rows(_MEMORY_COLUMNS + where + " LIMIT %s", (limit,))
        ]

    def speakers(self) -> list[str]:
        if self._speakers is None:
            rows = self.db.rows("SELECT DISTINCT author FROM {s}.memories WHERE searchable")
            names = {speaker_of(str(row[0])) for row in rows}
            self._speakers = sorted(name for name in names if name)
        return self._speakers

    def aliases(self) -> dict[str, str]:
        if self._aliases is None:
            rows = self.db.rows(
                "SELECT a.session, a.author, a.name FROM {s}.addressed AS a"
                " JOIN {s}.memories AS m ON m.iid = a.iid WHERE m.searchable"
            )
            named = [(session, author, [name]) for session, author, name in rows]
            sessions = sorted({session for session, _, _ in named})
            authors = (
                self.db.rows(
                    "SELECT DISTINCT session, author FROM {s}.memories"
                    " WHERE searchable AND session = ANY(%s)",
                    (sessions,),
                )
                if sessions
                else []
            )
            self._aliases = aliases(named, [tuple(row) for row in authors])
        return self._aliases

    def _link_lines(self) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
        """Link events (target, line) and memories with written links (id, line), parsed."""
        events = self.db.rows("SELECT target, line FROM {s}.events WHERE op = 'link'")
        written = self.db.rows(
            "SELECT id, line FROM {s}.memories WHERE line LIKE %s", ('%"links":%',)
        )
        return (
            [(target, json.loads(line)) for target, line in events],
            [(memory_id, json.loads(line)) for memory_id, line in written],
        )

    def link_degrees(self) -> dict[str, int]:
        if self._degrees is None:
            self._degrees = link_degrees(*self._link_lines())
        return self._degrees

    def links(self) -> list[tuple[str, str, str]]:
        """Every link between two memories as (from, to, type): backends.typed_links."""
        if self._links is None:
            self._links = typed_links(*self._link_lines())
        return self._links

    def counts(self) -> dict[str, int]:
        total, searchable, delta = self.db.one(
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE searchable),"
            " COUNT(*) FILTER (WHERE NOT in_base) FROM {s}.memories"
        )
        events = self.db.one("SELECT COUNT(*) FROM {s}.events")[0]
        return {
            "memories": int(total), "searchable": int(searchable), "delta": int(delta),
            "events": int(events),
        }  # fmt: skip

    # the vector base ------------------------------------------------------------------------
    def delta_iids(self) -> list[int]:
        rows = self.db.rows(
            "SELECT iid FROM {s}.memories WHERE NOT in_base AND searchable ORDER BY iid"
        )
        return [int(row[0]) for row in rows]

    def hidden_iids(self) -> set[int]:
        rows = self.db.rows("SELECT iid FROM {s}.memories WHERE NOT searchable AND in_base")
        return {int(row[0]) for row in rows}

    def set_base(self, iids: Iterable[int]) -> None:
        self.db.execute("UPDATE {s}.memories SET in_base = FALSE WHERE in_base")
        self.db.execute(
            "UPDATE {s}.memories SET in_base = TRUE WHERE iid = ANY(%s)",
            ([int(i) for i in iids],),
        )

    # rehearsals -----------------------------------------------------------------------------
    def add_rehearsals(self, times: dict[str, list[float]]) -> None:
        self.db.executemany(
            "INSERT INTO {s}.rehearsals(memory, at) VALUES (%s, %s)",
            ((memory_id, at) for memory_id, moments in times.items() for at in moments),
        )

    def rehearsal_times(self, ids: Iterable[str] | None = None) -> dict[str, list[float]]:
        if ids is None:
            rows = self.db.rows("SELECT memory, at FROM {s}.rehearsals ORDER BY at")
        else:
            wanted = list(dict.fromkeys(ids))
            rows = (
                self.db.rows(
                    "SELECT memory, at FROM {s}.rehearsals WHERE memory = ANY(%s) ORDER BY at",
                    (wanted,),
                )
                if wanted
                else []
            )
        times: dict[str, list[float]] = {}
        for memory_id, at in rows:
            times.setdefault(memory_id, []).append(float(at))
        return times

    # derived annotations and the embedding cache ---------------------------------------------
    def affect_for(self, hashes: Iterable[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        wanted = list(dict.fromkeys(hashes))
        if not wanted:
            return {}
        rows = self.db.rows(
            "SELECT content_hash, annotator, value FROM {s}.affect WHERE content_hash = ANY(%s)",
            (wanted,),
        )
        return {digest: (annotator, json.loads(value)) for digest, annotator, value in rows}

    def set_affect(self, items: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
        self._forget_cache()
        self.db.executemany(
            "INSERT INTO {s}.affect(content_hash, annotator, value) VALUES (%s, %s, %s)"
            " ON CONFLICT (content_hash) DO UPDATE SET annotator = EXCLUDED.annotator,"
            " value = EXCLUDED.value",
            ((h, annotator, json.dumps(value)) for h, annotator, value in items),
        )

    def clear_affect(self, unreferenced_only: bool = False) -> None:
        self._forget_cache()
        if unreferenced_only:
            self.db.execute(
                "DELETE FROM {s}.affect AS a WHERE NOT EXISTS"
                " (SELECT 1 FROM {s}.memories AS m WHERE m.content_hash = a.content_hash)"
            )
        else:
            self.db.execute("DELETE FROM {s}.affect")

    def distilled_for(self, hashes: Iterable[str]) -> dict[str, dict[str, Any]]:
        wanted = list(dict.fromkeys(hashes))
        if not wanted:
            return {}
        rows = self.db.rows(
            "SELECT content_hash, value FROM {s}.distilled WHERE content_hash = ANY(%s)",
            (wanted,),
        )
        return {digest: json.loads(value) for digest, value in rows}

    def set_distilled(self, items: Iterable[tuple[str, dict[str, Any]]]) -> None:
        self.db.executemany(
            "INSERT INTO {s}.distilled(content_hash, value) VALUES (%s, %s)"
            " ON CONFLICT (content_hash) DO UPDATE SET value = EXCLUDED.value",
            ((digest, json.dumps(value)) for digest, value in items),
        )

    def clear_distilled(self) -> None:
        self.db.execute("DELETE FROM {s}.distilled")

    def vector_rows(self, hashes: Iterable[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(hashes))
        if not wanted:
            return {}
        rows = self.db.rows(
            "SELECT content_hash, number FROM {s}.vector_rows WHERE content_hash = ANY(%s)",
            (wanted,),
        )
        return {digest: int(number) for digest, number in rows}

    def add_vector_rows(self, items: Iterable[tuple[str, int]]) -> None:
        self.db.executemany(
            "INSERT INTO {s}.vector_rows(content_hash, number) VALUES (%s, %s)"
            " ON CONFLICT (content_hash) DO UPDATE SET number = EXCLUDED.number",
            items,
        )

    def max_vector_row(self) -> int | None:
        found = self.db.one("SELECT MAX(number) FROM {s}.vector_rows")[0]
        return None if found is None else int(found)

    def clear_vector_rows(self) -> None:
        self.db.execute("DELETE FROM {s}.vector_rows")

    # starting over --------------------------------------------------------------------------
    def clear(self) -> None:
        """DELETE rather than TRUNCATE: readers keep their snapshot instead of waiting."""
        self._forget_cache()
        for table in MIRROR_TABLES:
            self.db.execute("DELETE FROM {s}.{table}", table=table)

    def release_space(self) -> None:
        """VACUUM the mirror tables, so deleted rows (a forgotten memory's text) are reclaimed
        rather than kept as dead tuples, and ANALYZE them: after a rebuild the planner would
        otherwise scan all of `memories` for the vector delta (76 ms a recall at 100k) until
        autovacuum came by. It cannot run inside a transaction; it then waits for autovacuum."""
        if self.db.in_transaction():
            return
        for table in ("memories", "events", "affect"):
            self.db.execute("VACUUM (ANALYZE) {s}.{table}", table=table)
