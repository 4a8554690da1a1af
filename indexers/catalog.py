"""The catalog: the shelves mirrored line by line in SQL tables, in SQLite or PostgreSQL.

It implements the catalog roles of backends.py: each memory's line, each event's line, the
rehearsal times, the shelf checkpoints, derived annotations (affect, distillations), the
embedding cache's rows and the index manifest. It is a cache: deleting `.memdir/` loses
nothing. `SqlCatalog` writes every statement once, in the SQL both databases speak (`ON
CONFLICT` upserts, `RETURNING`, boolean columns, `= ANY(?)` for a list of values, `{s}.` before
each table: the memdir's schema); a `SqlConnection` runs them in its dialect and does what only
one database has (here SQLite's; postgres/catalog.py PostgreSQL's), the schema's two words of
dialect among it: `BYTEA` (SQLite's BLOB) and `WITHOUT ROWID` (SQLite's clustered tables,
which keep their key once; PostgreSQL has no rowid to drop and ignores it).

Content hashes are stored as their 32 bytes and derived values as packed JSON
(backends.packed): at 100k memories that, the minified lines and the clustered cache tables
halve the file (BENCHMARKS.md, "A leaner cache").

SQLite is in the standard library and opens in well under a millisecond, so a cold command pays
nothing to consult it; `secure_delete` is on so forgotten text does not linger in free pages.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from .backends import (
    CatalogMemory,
    Checkpoint,
    link_degrees,
    packed_affect,
    packed_distilled,
    packed_line,
    speaker_of,
    typed_links,
    unpacked_affect,
    unpacked_distilled,
    unpacked_line,
)
from .names import addressed_names, aliases

# An iid (memories) and an event's sequence number (events) are the largest one plus one, so a
# rebuild numbers memories from 1 again and a rolled-back update leaves no gap; INTEGER
# PRIMARY KEY makes them SQLite's rowid.
SCHEMA = """
CREATE TABLE IF NOT EXISTS {s}.manifest (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.checkpoints (
    shelf TEXT PRIMARY KEY, position BIGINT NOT NULL, inode BIGINT NOT NULL,
    fingerprint TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.memories (
    iid INTEGER PRIMARY KEY,           -- the integer id the full text and vectors store
    id TEXT UNIQUE NOT NULL,           -- the memory id (m-…)
    line TEXT NOT NULL,                -- the shelf line, packed (its text among it), for folding
    key TEXT,                          -- supersede key
    session TEXT,                      -- conversation session, for neighbour context
    author TEXT NOT NULL,              -- who said it ('user:Sam'): recall's speaker component
    guaranteed BOOLEAN NOT NULL,       -- pinned or a milestone (recall's bounded channel)
    importance INTEGER NOT NULL,
    created BIGINT NOT NULL,           -- epoch seconds
    status TEXT NOT NULL,              -- as of the last update (recall re-folds at its own now)
    searchable BOOLEAN NOT NULL,       -- false once rejected, superseded or forgotten
    content_hash BYTEA NOT NULL,       -- sha256 of the embedded text (32 bytes)
    in_base BOOLEAN NOT NULL DEFAULT FALSE  -- its vector is in the vector base
);
CREATE INDEX IF NOT EXISTS memories_key ON {s}.memories(key) WHERE key IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_session ON {s}.memories(session, created, iid)
    WHERE session IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_guaranteed ON {s}.memories(importance, created)
    WHERE guaranteed;
CREATE INDEX IF NOT EXISTS memories_hidden ON {s}.memories(iid) WHERE NOT searchable AND in_base;
CREATE INDEX IF NOT EXISTS memories_delta ON {s}.memories(iid) WHERE NOT in_base;
CREATE TABLE IF NOT EXISTS {s}.addressed (  -- names a memory addresses someone by (names.py)
    iid BIGINT NOT NULL, session TEXT NOT NULL, author TEXT NOT NULL, name TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.events (
    seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, target TEXT NOT NULL, op TEXT NOT NULL,
    line TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_target ON {s}.events(target);
CREATE TABLE IF NOT EXISTS {s}.rehearsals (
    memory TEXT NOT NULL,              -- a memory id
    at DOUBLE PRECISION NOT NULL       -- epoch seconds of a recall that returned it or its confirm
);
CREATE INDEX IF NOT EXISTS rehearsals_memory ON {s}.rehearsals(memory);
CREATE TABLE IF NOT EXISTS {s}.affect_values (  -- affect.py, packed (backends.packed_affect)
    content_hash BYTEA PRIMARY KEY, annotator TEXT NOT NULL, value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {s}.distillations (  -- distill.py, packed (backends.packed_distilled)
    content_hash BYTEA PRIMARY KEY, value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {s}.embedding_rows (
    content_hash BYTEA PRIMARY KEY, number BIGINT NOT NULL  -- row in the model's vector file
) WITHOUT ROWID;
"""

# A catalog written with another SCHEMA (an older memdir) loses the tables that mirror the
# shelves and its manifest's version, so the next update rebuilds; the embedding, affect and
# distillation caches survive, and the manifest still names their model. A cache table whose
# layout changes takes a new name, and an older one is renamed into it (RENAMED) or copied
# into it row by row and dropped (MIGRATED): an upgrade re-embeds and re-annotates nothing.
SCHEMA_ID = str(zlib.crc32(SCHEMA.encode("utf-8")) & 0x7FFFFFFF)
MIRROR_TABLES = ("checkpoints", "memories", "addressed", "events", "rehearsals")
CACHE_TABLES = ("affect_values", "distillations", "embedding_rows")
# Cache tables an older schema named otherwise: (old name, statements that rename it).
RENAMED = (
    ("vectors", ("ALTER TABLE {s}.vectors RENAME TO vector_rows",
                 "ALTER TABLE {s}.vector_rows RENAME COLUMN row TO number")),
)  # fmt: skip


def _digest(content_hash: str) -> bytes:
    """A content hash (hex sha256) as the catalog stores it: 32 bytes."""
    return bytes.fromhex(content_hash)


def _hex(stored: bytes) -> str:
    return bytes(stored).hex()


def _old_digest(text: str) -> bytes | None:
    """A hex key of the older layout; None for one no memory can have."""
    try:
        found = bytes.fromhex(text)
    except ValueError:
        return None
    return found if len(found) == 32 else None


def _old_affect(row: Sequence[Any]) -> tuple[Any, ...]:
    return _old_digest(row[0]), row[1], packed_affect(row[1], json.loads(row[2]))


def _old_distilled(row: Sequence[Any]) -> tuple[Any, ...]:
    return _old_digest(row[0]), packed_distilled(json.loads(row[1]))


def _old_vector_row(row: Sequence[Any]) -> tuple[Any, ...]:
    return _old_digest(row[0]), int(row[1])


# Cache tables of the layout before hashes were bytes and values packed (until INDEX_VERSION
# 12): (old name, its columns, the new name, old row → new row).
MIGRATED: tuple[tuple[str, str, str, Callable[[Sequence[Any]], tuple[Any, ...]]], ...] = (
    ("affect", "content_hash, annotator, value", "affect_values", _old_affect),
    ("distilled", "content_hash, value", "distillations", _old_distilled),
    ("vector_rows", "content_hash, number", "embedding_rows", _old_vector_row),
)

_MEMORY_ROW = ("iid", "id", "line", "key", "session", "author", "guaranteed", "importance",
               "created", "status", "searchable", "content_hash")  # fmt: skip
_MEMORY_COLUMNS = (
    "SELECT m.iid, m.id, m.line, m.status, m.searchable, m.content_hash, a.annotator, a.value,"
    " m.session"
    " FROM {s}.memories AS m LEFT JOIN {s}.affect_values AS a"
    " ON a.content_hash = m.content_hash"
)


def _line(line: dict[str, Any]) -> str:
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def insert_statement(table: str, columns: Sequence[str], key: str | None, source: str) -> str:
    """INSERT INTO {s}.table (columns) `source` (VALUES or a SELECT); with `key`, a row whose
    key is already there replaces the stored row's other columns (an upsert)."""
    statement = f"INSERT INTO {{s}}.{table}({', '.join(columns)}) {source}"
    if key is None:
        return statement
    kept = ", ".join(f"{column} = excluded.{column}" for column in columns if column != key)
    return f"{statement} ON CONFLICT ({key}) DO UPDATE SET {kept}"


def last_per_key(
    columns: Sequence[str], rows: Iterable[Sequence[Any]], key: str | None
) -> list[Sequence[Any]]:
    """The rows, each key's last one only when there is a `key` (as one statement per row
    leaves it: the last upsert wins)."""
    if key is None:
        return list(rows)
    at = list(columns).index(key)
    return list({row[at]: row for row in rows}.values())


class SqlConnection(Protocol):
    """One database connection in one dialect: it runs SqlCatalog's statements (`?`
    placeholders, `= ANY(?)` bound to a list, `{s}.` before each table) in its own syntax and
    does what only its database has."""

    read_only: bool

    def rows(self, statement: str, params: Sequence[Any] = ()) -> Iterable[Sequence[Any]]: ...

    def one(self, statement: str, params: Sequence[Any] = ()) -> Sequence[Any] | None: ...

    def execute(self, statement: str, params: Sequence[Any] = ()) -> None: ...

    def executemany(self, statement: str, batch: Iterable[Sequence[Any]]) -> None: ...

    def insert(
        self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], key: str | None
    ) -> None:
        """Add rows to {s}.table (insert_statement: with `key`, an upsert in which the last
        row of a key wins), in whatever way the database loads many rows fastest."""

    def transaction(self) -> AbstractContextManager[object]:
        """Commits on success, rolls back on error."""

    def schema_lock(self) -> AbstractContextManager[object]:
        """A transaction that one process at a time holds (creating or replacing the schema)."""

    def schema_id(self) -> str | None:
        """The SCHEMA_ID the tables were created with (None: none yet)."""

    def set_schema_id(self, schema_id: str) -> None: ...

    def table_exists(self, table: str) -> bool: ...

    def data_version(self) -> object:
        """A token that changes when another connection has committed (storage.py)."""

    def release_space(self) -> None:
        """Give deleted rows' space back (a forgotten memory's text)."""

    def close(self) -> None: ...


def _ids(rows: Iterable[Sequence[Any]]) -> list[int]:
    return [int(row[0]) for row in rows]


class SqlCatalog:
    """The catalog roles of backends.py over one SqlConnection; every statement is here, once.

    It keeps read caches for long-lived processes (MCP server, daemon, benchmarks); any write
    through this instance clears them, and a new process starts empty.
    """

    def __init__(self, sql: SqlConnection) -> None:
        self.sql = sql
        if not sql.read_only and sql.schema_id() != SCHEMA_ID:
            self._create_schema()
        self._memories: dict[int, CatalogMemory] = {}
        self._degrees: dict[str, int] | None = None
        self._links: list[tuple[str, str, str]] | None = None
        self._speakers: list[str] | None = None
        self._aliases: dict[str, str] | None = None

    @property
    def read_only(self) -> bool:
        """A read-only memdir: answer from the index as it is, write nothing."""
        return self.sql.read_only

    def _create_schema(self) -> None:
        sql = self.sql
        with sql.schema_lock():
            if sql.schema_id() == SCHEMA_ID:  # another process made it meanwhile
                return
            for table in MIRROR_TABLES:
                sql.execute(f"DROP TABLE IF EXISTS {{s}}.{table}")
            for old, renames in RENAMED:
                if sql.table_exists(old):
                    for statement in renames:
                        sql.execute(statement)
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    sql.execute(statement)
            for old, columns, new, convert in MIGRATED:
                if sql.table_exists(old):
                    rows = [convert(row) for row in sql.rows(f"SELECT {columns} FROM {{s}}.{old}")]
                    marks = ", ".join("?" * len(columns.split(",")))
                    sql.executemany(
                        f"INSERT INTO {{s}}.{new}({columns}) VALUES ({marks})"
                        " ON CONFLICT (content_hash) DO NOTHING",
                        [row for row in rows if row[0] is not None],
                    )
                    sql.execute(f"DROP TABLE {{s}}.{old}")
            sql.execute("DELETE FROM {s}.manifest WHERE name = 'version'")
            sql.set_schema_id(SCHEMA_ID)

    def _forget_cache(self) -> None:
        self._memories.clear()
        self._degrees = None
        self._links = None
        self._speakers = None
        self._aliases = None

    def _any(self, statement: str, values: Iterable[Any]) -> Iterable[Sequence[Any]]:
        """The rows of `statement` whose one `= ANY(?)` is bound to these values (distinct)."""
        wanted = list(dict.fromkeys(values))
        return self.sql.rows(statement, (wanted,)) if wanted else ()

    def close(self) -> None:
        self.sql.close()

    def data_version(self) -> object:
        """Changes whenever another connection (another process, or another index object) has
        committed to the catalog since this connection last asked: a resident index that sees
        it change reopens (storage.py)."""
        return self.sql.data_version()

    @contextmanager
    def transaction(self) -> Iterator[object]:
        """`with catalog.transaction():` commits on success, rolls back on error (and forgets
        what was read inside it, which may have been rolled back too)."""
        try:
            with self.sql.transaction() as connection:
                yield connection
        except BaseException:
            self._forget_cache()
            raise

    # manifest -------------------------------------------------------------------------------
    def manifest(self) -> dict[str, str]:
        return {
            name: value for name, value in self.sql.rows("SELECT name, value FROM {s}.manifest")
        }

    def set_manifest(self, values: dict[str, str]) -> None:
        self.sql.executemany(
            "INSERT INTO {s}.manifest(name, value) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            values.items(),
        )

    def clear_manifest(self) -> None:
        self.sql.execute("DELETE FROM {s}.manifest")

    # checkpoints ----------------------------------------------------------------------------
    def checkpoints(self) -> dict[str, Checkpoint]:
        rows = self.sql.rows("SELECT shelf, position, inode, fingerprint FROM {s}.checkpoints")
        return {shelf: Checkpoint(shelf, int(at), int(inode), fp) for shelf, at, inode, fp in rows}

    def set_checkpoint(self, checkpoint: Checkpoint) -> None:
        self.sql.execute(
            "INSERT INTO {s}.checkpoints(shelf, position, inode, fingerprint) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (shelf) DO UPDATE SET position = excluded.position,"
            " inode = excluded.inode, fingerprint = excluded.fingerprint",
            (checkpoint.shelf, checkpoint.offset, checkpoint.inode, checkpoint.fingerprint),
        )

    # memories and events --------------------------------------------------------------------
    def add_memories(self, items: Sequence[tuple[dict[str, Any], int, str]]) -> list[int | None]:
        """Insert memory lines; returns their iids, None for one already there. One insert per
        table for the whole batch (SqlConnection.insert), not one per memory: a round trip
        each was most of a PostgreSQL rebuild's catalog time."""
        self._forget_cache()
        if not items:
            return []
        known = {str(row[0]) for row in self._any(
            "SELECT id FROM {s}.memories WHERE id = ANY(?)", (line["id"] for line, _, _ in items)
        )}  # fmt: skip
        following = (self.max_iid() or 0) + 1
        iids: list[int | None] = []
        rows: list[tuple[Any, ...]] = []
        addressed: list[tuple[int, str, str, str]] = []
        for line, created, content_hash in items:
            if line["id"] in known:
                iids.append(None)
                continue
            known.add(line["id"])
            iids.append(following)
            author = str(line.get("author", ""))
            rows.append((
                following, line["id"], packed_line(line), line.get("key"), line.get("session"),
                author, bool(line.get("pinned")) or line.get("temporal") == "milestone",
                int(line.get("importance", 5)), created, "durable", True, _digest(content_hash),
            ))  # fmt: skip
            if line.get("session"):
                addressed.extend((following, line["session"], author, name)
                                 for name in addressed_names(line["text"], author))  # fmt: skip
            following += 1
        self.sql.insert("memories", _MEMORY_ROW, rows, None)
        self.sql.insert("addressed", ("iid", "session", "author", "name"), addressed, None)
        return iids

    def add_event(self, line: dict[str, Any]) -> bool:
        self._forget_cache()
        found = self.sql.one(
            "INSERT INTO {s}.events(seq, id, target, op, line)"
            " VALUES ((SELECT COALESCE(MAX(seq), 0) + 1 FROM {s}.events), ?, ?, ?, ?)"
            " ON CONFLICT (id) DO NOTHING RETURNING seq",
            (line["id"], line["target"], line["op"], _line(line)),
        )
        return found is not None

    def set_statuses(self, items: Iterable[tuple[str, str, bool]]) -> None:
        self._forget_cache()
        self.sql.executemany(
            "UPDATE {s}.memories SET status = ?, searchable = ? WHERE id = ?",
            [(status, bool(searchable), memory_id) for memory_id, status, searchable in items],
        )

    def set_guaranteed(self, rows: Iterable[tuple[int, bool, int]]) -> None:
        self._forget_cache()
        self.sql.executemany(
            "UPDATE {s}.memories SET guaranteed = ?, importance = ? WHERE iid = ?",
            [(bool(flag), int(importance), int(iid)) for iid, flag, importance in rows],
        )

    @staticmethod
    def _memory(row: Sequence[Any]) -> CatalogMemory:
        iid, memory_id, line, status, searchable, digest, annotator, affect, session = row
        return CatalogMemory(
            int(iid), memory_id, line, status, bool(searchable), _hex(digest), annotator,
            affect or "", session,
        )  # fmt: skip

    def memories_by_id(self, ids: Iterable[str]) -> dict[str, CatalogMemory]:
        rows = self._any(_MEMORY_COLUMNS + " WHERE m.id = ANY(?)", ids)
        return {memory.id: memory for memory in map(self._memory, rows)}

    def memories_by_iid(self, iids: Iterable[int]) -> dict[int, CatalogMemory]:
        wanted = [int(iid) for iid in dict.fromkeys(iids)]
        found = {iid: self._memories[iid] for iid in wanted if iid in self._memories}
        missing = [iid for iid in wanted if iid not in found]
        for row in self._any(_MEMORY_COLUMNS + " WHERE m.iid = ANY(?)", missing):
            memory = self._memory(row)
            found[memory.iid] = self._memories[memory.iid] = memory
        return found

    def all_memories(self) -> Iterator[CatalogMemory]:
        return map(self._memory, self.sql.rows(_MEMORY_COLUMNS + " ORDER BY m.iid"))

    def max_iid(self) -> int | None:
        found = self.sql.one("SELECT MAX(iid) FROM {s}.memories")
        return None if found is None or found[0] is None else int(found[0])

    def searchable_iids(self) -> list[int]:
        return _ids(self.sql.rows("SELECT iid FROM {s}.memories WHERE searchable ORDER BY iid"))

    def content_hashes(self) -> dict[int, str]:
        rows = self.sql.rows("SELECT iid, content_hash FROM {s}.memories")
        return {int(iid): _hex(digest) for iid, digest in rows}

    def ids_with_keys(self, keys: Iterable[str]) -> list[str]:
        return [row[0] for row in self._any("SELECT id FROM {s}.memories WHERE key = ANY(?)", keys)]

    def keys(self) -> list[str]:
        """Every supersede key in use."""
        rows = self.sql.rows("SELECT DISTINCT key FROM {s}.memories WHERE key IS NOT NULL")
        return [row[0] for row in rows]

    def events_for(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        rows = self._any("SELECT line FROM {s}.events WHERE target = ANY(?) ORDER BY seq", ids)
        return [json.loads(row[0]) for row in rows]

    def session_rows(self, sessions: Iterable[str]) -> dict[str, list[tuple[int, str]]]:
        """Each session's searchable memories as (iid, text), in time order."""
        found: dict[str, list[tuple[int, str]]] = {s: [] for s in dict.fromkeys(sessions)}
        rows = self._any(
            "SELECT session, iid, id, line FROM {s}.memories WHERE session = ANY(?) AND searchable"
            " ORDER BY session, created, iid",
            found,
        )
        for session, iid, memory_id, line in rows:
            found[session].append((int(iid), str(unpacked_line(line, memory_id, session)["text"])))
        return found

    def guaranteed(self, limit: int) -> list[CatalogMemory]:
        """Pinned and milestone memories, most important and newest first (recall's bounded channel)."""
        where = " WHERE m.guaranteed AND m.searchable ORDER BY m.importance DESC, m.created DESC"
        return [
            self._memory(row)
            for row in self.sql.rows(_MEMORY_COLUMNS + where + " LIMIT ?", (limit,))
        ]

    def speakers(self) -> list[str]:
        """Names of the people who said the memories (from authors such as 'user:Sam')."""
        if self._speakers is None:
            rows = self.sql.rows("SELECT DISTINCT author FROM {s}.memories WHERE searchable")
            names = {speaker_of(str(row[0])) for row in rows}
            self._speakers = sorted(name for name in names if name)
        return self._speakers

    def aliases(self) -> dict[str, str]:
        """The names speakers are addressed by in their sessions, case-folded (names.py)."""
        if self._aliases is None:
            rows = self.sql.rows(
                "SELECT a.session, a.author, a.name FROM {s}.addressed AS a"
                " JOIN {s}.memories AS m ON m.iid = a.iid WHERE m.searchable"
            )
            named = [(session, author, [name]) for session, author, name in rows]
            authors = self._any(
                "SELECT DISTINCT session, author FROM {s}.memories"
                " WHERE searchable AND session = ANY(?)",
                sorted({session for session, _, _ in named}),
            )
            self._aliases = aliases(named, [(session, author) for session, author in authors])
        return self._aliases

    def _link_lines(self) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
        """Link events (target, line) and memories with written links (id, line), parsed."""
        events = self.sql.rows("SELECT target, line FROM {s}.events WHERE op = 'link'")
        written = self.sql.rows(
            "SELECT id, line, session FROM {s}.memories WHERE line LIKE ?", ('%"links":%',)
        )
        return (
            [(target, json.loads(line)) for target, line in events],
            [(memory_id, unpacked_line(line, memory_id, session))
             for memory_id, line, session in written],
        )  # fmt: skip

    def links(self) -> list[tuple[str, str, str]]:
        """Every link between two memories as (from, to, type): backends.typed_links."""
        if self._links is None:
            self._links = typed_links(*self._link_lines())
        return self._links

    def link_degrees(self) -> dict[str, int]:
        """How many links between memories touch each memory id (backends.link_degrees)."""
        if self._degrees is None:
            self._degrees = link_degrees(*self._link_lines())
        return self._degrees

    def counts(self) -> dict[str, int]:
        found = self.sql.one(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN searchable THEN 1 ELSE 0 END), 0),"
            " COALESCE(SUM(CASE WHEN in_base THEN 0 ELSE 1 END), 0) FROM {s}.memories"
        )
        events = self.sql.one("SELECT COUNT(*) FROM {s}.events")
        assert found is not None and events is not None  # (aggregates give one row)
        total, searchable, delta = (int(value) for value in found)
        return {"memories": total, "searchable": searchable, "delta": delta,
                "events": int(events[0])}  # fmt: skip

    # the vector base ------------------------------------------------------------------------
    def delta_iids(self) -> list[int]:
        """Searchable memories whose vectors are not in the base index."""
        return _ids(self.sql.rows(
            "SELECT iid FROM {s}.memories WHERE NOT in_base AND searchable ORDER BY iid"))  # fmt: skip

    def hidden_iids(self) -> set[int]:
        rows = self.sql.rows("SELECT iid FROM {s}.memories WHERE NOT searchable AND in_base")
        return set(_ids(rows))

    def set_base(self, iids: Iterable[int]) -> None:
        self.sql.execute("UPDATE {s}.memories SET in_base = FALSE WHERE in_base")
        self.sql.execute(
            "UPDATE {s}.memories SET in_base = TRUE WHERE iid = ANY(?)", ([int(i) for i in iids],)
        )

    # rehearsals -----------------------------------------------------------------------------
    def add_rehearsals(self, times: dict[str, list[float]]) -> None:
        self.sql.insert(
            "rehearsals",
            ("memory", "at"),
            [(memory_id, at) for memory_id, moments in times.items() for at in moments],
            None,
        )

    def rehearsal_times(self, ids: Iterable[str] | None = None) -> dict[str, list[float]]:
        """memory id → sorted epoch seconds of its rehearsals (decay's input)."""
        statement = "SELECT memory, at FROM {s}.rehearsals"
        rows = (
            self.sql.rows(statement + " ORDER BY at")
            if ids is None
            else self._any(statement + " WHERE memory = ANY(?) ORDER BY at", ids)
        )
        times: dict[str, list[float]] = {}
        for memory_id, at in rows:
            times.setdefault(memory_id, []).append(float(at))
        return times

    # derived annotations and the embedding cache ---------------------------------------------
    def _hashes(self, statement: str, hashes: Iterable[str]) -> Iterable[Sequence[Any]]:
        """The rows of `statement` whose one `content_hash = ANY(?)` is bound to these hashes."""
        return self._any(statement, map(_digest, hashes))

    def affect_for(self, hashes: Iterable[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        rows = self._hashes(
            "SELECT content_hash, annotator, value FROM {s}.affect_values"
            " WHERE content_hash = ANY(?)",
            hashes,
        )
        return {_hex(digest): (annotator, unpacked_affect(annotator, value))
                for digest, annotator, value in rows}  # fmt: skip

    def set_affect(self, items: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
        self._forget_cache()
        self.sql.insert(
            "affect_values", ("content_hash", "annotator", "value"),
            [(_digest(digest), annotator, packed_affect(annotator, value))
             for digest, annotator, value in items],
            "content_hash",
        )  # fmt: skip

    def clear_affect(self, unreferenced_only: bool = False) -> None:
        self._forget_cache()
        if unreferenced_only:
            # IN over an anti-join, not NOT IN: PostgreSQL hashes a NOT IN subquery only
            # within work_mem (4 MB by default) and else rescans it per row (at 100k memories
            # the delete never ended); a join spills to disk instead
            self.sql.execute(
                "DELETE FROM {s}.affect_values WHERE content_hash IN (SELECT a.content_hash"
                " FROM {s}.affect_values AS a LEFT JOIN {s}.memories AS m"
                " ON m.content_hash = a.content_hash WHERE m.content_hash IS NULL)"
            )
        else:
            self.sql.execute("DELETE FROM {s}.affect_values")

    def distilled_for(self, hashes: Iterable[str]) -> dict[str, dict[str, Any]]:
        rows = self._hashes(
            "SELECT content_hash, value FROM {s}.distillations WHERE content_hash = ANY(?)",
            hashes,
        )
        return {_hex(digest): unpacked_distilled(value) for digest, value in rows}

    def set_distilled(self, items: Iterable[tuple[str, dict[str, Any]]]) -> None:
        self.sql.insert(
            "distillations",
            ("content_hash", "value"),
            [(_digest(digest), packed_distilled(value)) for digest, value in items],
            "content_hash",
        )

    def clear_distilled(self) -> None:
        self.sql.execute("DELETE FROM {s}.distillations")

    def vector_rows(self, hashes: Iterable[str]) -> dict[str, int]:
        rows = self._hashes(
            "SELECT content_hash, number FROM {s}.embedding_rows WHERE content_hash = ANY(?)",
            hashes,
        )
        return {_hex(digest): int(number) for digest, number in rows}

    def add_vector_rows(self, items: Iterable[tuple[str, int]]) -> None:
        self.sql.insert(
            "embedding_rows",
            ("content_hash", "number"),
            [(_digest(digest), int(number)) for digest, number in items],
            "content_hash",
        )

    def max_vector_row(self) -> int | None:
        found = self.sql.one("SELECT MAX(number) FROM {s}.embedding_rows")
        return None if found is None or found[0] is None else int(found[0])

    def clear_vector_rows(self) -> None:
        self.sql.execute("DELETE FROM {s}.embedding_rows")

    # starting over --------------------------------------------------------------------------
    def clear(self) -> None:
        """Drop everything that mirrors the shelves; keep the manifest and derived caches.
        (DELETE rather than TRUNCATE: PostgreSQL readers keep their snapshot, not wait.)"""
        self._forget_cache()
        for table in MIRROR_TABLES:
            self.sql.execute(f"DELETE FROM {{s}}.{table}")

    def release_space(self) -> None:
        self.sql.release_space()


# --- SQLite ----------------------------------------------------------------------------------
def unreadable(error: BaseException) -> bool:
    """Whether an SQLite error means the file is damaged or foreign (rebuild it), rather than
    busy, read-only or out of space (say so and stop)."""
    if not isinstance(error, sqlite3.DatabaseError):
        return False
    name = getattr(error, "sqlite_errorname", "")
    text = str(error)
    return name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or any(
        sign in text for sign in ("malformed", "not a database", "no such table", "no such column")
    )


def _unhex(text: str) -> bytes:
    return bytes.fromhex(text)


class SqliteConnection:
    """SqlConnection to `.memdir/index/catalog.sqlite`: tables without a schema name, a list
    bound as one JSON array (`IN (SELECT value FROM json_each(?))`, any length in one
    statement; a list of bytes as their hex, unhexed), the schema id in `PRAGMA user_version`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.read_only = path.is_file() and not os.access(path.parent, os.W_OK)
        if self.read_only:  # a read-only memdir: answer from the index as it is
            uri = f"file:{quote(str(path))}?mode=ro&immutable=1"
            self.db = sqlite3.connect(uri, uri=True, isolation_level=None)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
            self._use_wal()
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA secure_delete=ON")
        if sqlite3.sqlite_version_info < (3, 41):  # unhex() is built in from SQLite 3.41
            self.db.create_function("unhex", 1, _unhex, deterministic=True)
        self._statements: dict[tuple[str, bool], str] = {}

    def _use_wal(self) -> None:
        """Switch to WAL once. Changing the journal mode ignores the busy timeout, so while
        another process is creating the database, wait and retry instead of failing."""
        deadline = time.monotonic() + 30
        while True:
            try:
                if self.db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    self.db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _prepared(self, statement: str, params: Sequence[Any] = ()) -> tuple[str, Sequence[Any]]:
        """The statement in SQLite's words, and its parameters with each list as JSON."""
        lists = [value for value in params if isinstance(value, list)]
        blobs = any(value and isinstance(value[0], bytes) for value in lists)
        found = self._statements.get((statement, blobs))
        if found is None:
            found = (
                statement.replace("{s}.", "")
                .replace(" BYTEA", " BLOB")
                .replace("= ANY(?)", f"IN (SELECT {'unhex(value)' if blobs else 'value'}"
                         " FROM json_each(?))")
            )  # fmt: skip
            self._statements[(statement, blobs)] = found
        if lists:
            params = [
                json.dumps([v.hex() if isinstance(v, bytes) else v for v in value])
                if isinstance(value, list)
                else value
                for value in params
            ]
        return found, params

    def rows(self, statement: str, params: Sequence[Any] = ()) -> Iterable[Sequence[Any]]:
        cursor: Iterable[Sequence[Any]] = self.db.execute(*self._prepared(statement, params))
        return cursor

    def one(self, statement: str, params: Sequence[Any] = ()) -> Sequence[Any] | None:
        # fetchall: a RETURNING statement is finished before anything else runs
        found = self.db.execute(*self._prepared(statement, params)).fetchall()
        return found[0] if found else None

    def execute(self, statement: str, params: Sequence[Any] = ()) -> None:
        self.db.execute(*self._prepared(statement, params))

    def executemany(self, statement: str, batch: Iterable[Sequence[Any]]) -> None:
        self.db.executemany(self._prepared(statement)[0], batch)

    def insert(
        self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], key: str | None
    ) -> None:
        marks = ", ".join("?" * len(columns))
        self.executemany(insert_statement(table, columns, key, f"VALUES ({marks})"), rows)

    @contextmanager
    def transaction(self) -> Iterator[object]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def schema_lock(self) -> AbstractContextManager[object]:
        return self.transaction()  # BEGIN IMMEDIATE: one writer at a time

    def schema_id(self) -> str | None:
        found = int(self.db.execute("PRAGMA user_version").fetchone()[0])
        return str(found) if found else None

    def set_schema_id(self, schema_id: str) -> None:
        self.db.execute(f"PRAGMA user_version = {int(schema_id)}")

    def table_exists(self, table: str) -> bool:
        found = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        return found is not None

    def data_version(self) -> object:
        return int(self.db.execute("PRAGMA data_version").fetchone()[0])

    def release_space(self) -> None:
        """After a rebuild: VACUUM packs the pages as the inserts left them (the tables keyed by
        content hash fill in random order; at 100k memories 66.4 → 61.0 MB, in 0.5 s) and gives
        free ones back. Old pages (a forgotten memory's text among them) stay in the WAL file
        until it is truncated; a long-lived process would otherwise keep them on disk."""
        if not self.db.in_transaction:
            self.db.execute("VACUUM")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self.db.close()


class SqliteCatalog(SqlCatalog):
    """The catalog in `.memdir/index/catalog.sqlite`; one connection per instance."""

    def __init__(self, path: Path) -> None:
        self.connection = SqliteConnection(path)
        self.db = self.connection.db  # the sqlite3 connection, for inspection
        super().__init__(self.connection)

    def check(self) -> None:
        """Touch every table and compare the page count with the file's size (cheap: no full
        scan), so a foreign, truncated or damaged catalog fails here, not mid-command."""
        db, path = self.db, self.connection.path
        tables = [
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        for table in ("manifest", *MIRROR_TABLES, *CACHE_TABLES):
            if table not in tables:
                raise sqlite3.DatabaseError(f"no such table: {table}")
            db.execute(f"SELECT * FROM {table} LIMIT 1").fetchall()
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        size = db.execute("PRAGMA page_size").fetchone()[0]
        wal = path.with_name(path.name + "-wal")
        held = path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
        if held < pages * size:  # pages not yet checkpointed live in the WAL
            raise sqlite3.DatabaseError("database disk image is malformed (file cut short)")
