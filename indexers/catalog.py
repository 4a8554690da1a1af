"""The catalog in SQLite: a file in the cache that mirrors the shelves line by line.

It implements backends.Catalog: each memory's line and text, each event's line, the rehearsal
times, the shelf checkpoints, derived annotations (affect), the embedding cache's rows and the
index manifest. It is a cache: deleting `.memdir/` loses nothing. SQLite is in the standard
library and opens in well under a millisecond, so a cold command pays nothing to consult it.
`secure_delete` is on so forgotten text does not linger in free pages. Every SQL statement
memdir runs is in this module.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .backends import CatalogMemory, Checkpoint, link_degrees, speaker_of, typed_links
from .names import addressed_names, aliases

SCHEMA = """
CREATE TABLE IF NOT EXISTS manifest (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoints (
    shelf TEXT PRIMARY KEY, offset INTEGER NOT NULL, inode INTEGER NOT NULL,
    fingerprint TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS memories (
    iid INTEGER PRIMARY KEY,           -- the integer id used by FAISS
    id TEXT UNIQUE NOT NULL,           -- the memory id (m-…)
    line TEXT NOT NULL,                -- the shelf line, for folding at query time
    text TEXT NOT NULL,
    key TEXT,                          -- supersede key
    session TEXT,                      -- conversation session, for neighbour context
    author TEXT NOT NULL,              -- who said it ('user:Sam'): recall's speaker component
    guaranteed INTEGER NOT NULL,       -- 1 when pinned or a milestone (recall's bounded channel)
    importance INTEGER NOT NULL,
    created INTEGER NOT NULL,          -- epoch seconds
    status TEXT NOT NULL,              -- as of the last update (recall re-folds at its own now)
    searchable INTEGER NOT NULL,       -- 0 once rejected, superseded or forgotten
    content_hash TEXT NOT NULL,        -- sha256 of the embedded text
    in_base INTEGER NOT NULL DEFAULT 0 -- 1 when its vector is in the FAISS base index
);
CREATE INDEX IF NOT EXISTS memories_key ON memories(key) WHERE key IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_session ON memories(session, created, iid)
    WHERE session IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_guaranteed ON memories(importance, created)
    WHERE guaranteed = 1;
CREATE INDEX IF NOT EXISTS memories_hidden ON memories(iid) WHERE searchable = 0 AND in_base = 1;
CREATE INDEX IF NOT EXISTS memories_delta ON memories(in_base) WHERE in_base = 0;
CREATE TABLE IF NOT EXISTS addressed (  -- names a memory addresses someone by (names.py)
    iid INTEGER NOT NULL, session TEXT NOT NULL, author TEXT NOT NULL, name TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    id TEXT PRIMARY KEY, target TEXT NOT NULL, op TEXT NOT NULL, line TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_target ON events(target);
CREATE TABLE IF NOT EXISTS rehearsals (
    memory TEXT NOT NULL,              -- a memory id
    at REAL NOT NULL                   -- epoch seconds of a recall that returned it or its confirm
);
CREATE INDEX IF NOT EXISTS rehearsals_memory ON rehearsals(memory);
CREATE TABLE IF NOT EXISTS affect (
    content_hash TEXT PRIMARY KEY, annotator TEXT NOT NULL, value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS distilled (
    content_hash TEXT PRIMARY KEY, value TEXT NOT NULL  -- indexers/distill.py, with its annotator
);
CREATE TABLE IF NOT EXISTS vectors (
    content_hash TEXT PRIMARY KEY, row INTEGER NOT NULL  -- row in the model's vector file
);
"""


# A catalog written with another SCHEMA (an older memdir) loses the tables that mirror the
# shelves and its manifest's version, so the next update rebuilds; the embedding and affect
# caches survive, and the manifest still names their model (rename the tables if their layout
# ever changes).
SCHEMA_ID = zlib.crc32(SCHEMA.encode("utf-8")) & 0x7FFFFFFF
MIRROR_TABLES = ("checkpoints", "memories", "addressed", "events", "rehearsals")

# Values bound per `IN (...)` statement: below SQLite's oldest limit of 999 host parameters.
CHUNK = 500

_MEMORY_COLUMNS = (
    "SELECT m.iid, m.id, m.line, m.text, m.status, m.searchable, m.content_hash,"
    " a.annotator, a.value"
    " FROM memories AS m LEFT JOIN affect AS a ON a.content_hash = m.content_hash"
)


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


class SqliteCatalog:
    """backends.Catalog in `.memdir/index/catalog.sqlite`; one connection per instance."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.read_only = path.is_file() and not os.access(path.parent, os.W_OK)
        if self.read_only:  # a read-only memdir: answer from the index as it is, write nothing
            uri = f"file:{quote(str(path))}?mode=ro&immutable=1"
            self.db = sqlite3.connect(uri, uri=True, isolation_level=None)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
            self._use_wal()
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA secure_delete=ON")
            if self.db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_ID:
                self._create_schema()
        # Read caches for long-lived processes (MCP server, daemon, benchmarks); any write
        # through this instance clears them, and a new process starts empty.
        self._memories: dict[int, CatalogMemory] = {}
        self._degrees: dict[str, int] | None = None
        self._links: list[tuple[str, str, str]] | None = None
        self._speakers: list[str] | None = None
        self._aliases: dict[str, str] | None = None

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

    def _forget_cache(self) -> None:
        self._memories.clear()
        self._degrees = None
        self._links = None
        self._speakers = None
        self._aliases = None

    def check(self) -> None:
        """Touch every table and compare the page count with the file's size (cheap: no full
        scan), so a foreign, truncated or damaged catalog fails here, not mid-command."""
        tables = [row[0] for row in self.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]  # fmt: skip
        for table in ("manifest", *MIRROR_TABLES, "affect", "vectors"):
            if table not in tables:
                raise sqlite3.DatabaseError(f"no such table: {table}")
            self.db.execute(f"SELECT * FROM {table} LIMIT 1").fetchall()
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        size = self.db.execute("PRAGMA page_size").fetchone()[0]
        wal = self.path.with_name(self.path.name + "-wal")
        held = self.path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
        if held < pages * size:  # pages not yet checkpointed live in the WAL
            raise sqlite3.DatabaseError("database disk image is malformed (file cut short)")

    def _create_schema(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            if self.db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_ID:
                for table in MIRROR_TABLES:
                    self.db.execute(f"DROP TABLE IF EXISTS {table}")
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute("DELETE FROM manifest WHERE name = 'version'")
                self.db.execute(f"PRAGMA user_version = {SCHEMA_ID}")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def _in(self, sql: str, values: Iterable[Any]) -> Iterator[Any]:
        """The rows of `sql` for every distinct value, where `sql` has one `IN ({marks})`:
        run CHUNK values at a time, so any number of values fits SQLite's parameter limit.
        Rows come chunk by chunk: order across chunks is the caller's to restore."""
        wanted = list(dict.fromkeys(values))
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start : start + CHUNK]
            yield from self.db.execute(sql.format(marks=",".join("?" * len(chunk))), chunk)

    def close(self) -> None:
        self.db.close()

    def data_version(self) -> int:
        """Changes whenever another connection (another process, or another index object) has
        committed to the catalog since this connection last asked: a resident index that sees
        it change reopens (storage.py)."""
        return int(self.db.execute("PRAGMA data_version").fetchone()[0])

    def transaction(self) -> _Transaction:
        """`with catalog.transaction():` commits on success, rolls back on error (and forgets
        what was read inside it, which may have been rolled back too)."""
        self.db.execute("BEGIN IMMEDIATE")
        return _Transaction(self.db, self._forget_cache)

    # manifest -------------------------------------------------------------------------------
    def manifest(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT name, value FROM manifest"))

    def set_manifest(self, values: dict[str, str]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO manifest(name, value) VALUES (?, ?)", values.items()
        )

    def clear_manifest(self) -> None:
        self.db.execute("DELETE FROM manifest")

    # checkpoints ----------------------------------------------------------------------------
    def checkpoints(self) -> dict[str, Checkpoint]:
        rows = self.db.execute("SELECT shelf, offset, inode, fingerprint FROM checkpoints")
        return {row[0]: Checkpoint(*row) for row in rows}

    def set_checkpoint(self, checkpoint: Checkpoint) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO checkpoints(shelf, offset, inode, fingerprint) VALUES (?,?,?,?)",
            (checkpoint.shelf, checkpoint.offset, checkpoint.inode, checkpoint.fingerprint),
        )

    # memories and events --------------------------------------------------------------------
    def add_memory(self, line: dict[str, Any], created: int, content_hash: str) -> int | None:
        """Insert a memory line; returns its iid, or None when it was already there."""
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO memories (id, line, text, key, session, author, guaranteed,"
            " importance, created, status, searchable, content_hash)"
            " VALUES (?,?,?,?,?,?,?,?,?,'durable',1,?)",
            (
                line["id"],
                json.dumps(line, ensure_ascii=False),
                line["text"],
                line.get("key"),
                line.get("session"),
                str(line.get("author", "")),
                int(bool(line.get("pinned")) or line.get("temporal") == "milestone"),
                int(line.get("importance", 5)),
                created,
                content_hash,
            ),
        )
        self._forget_cache()
        if not cursor.rowcount:
            return None
        iid = cursor.lastrowid
        if line.get("session"):
            author = str(line.get("author", ""))
            self.db.executemany(
                "INSERT INTO addressed(iid, session, author, name) VALUES (?,?,?,?)",
                [(iid, line["session"], author, name)
                 for name in addressed_names(line["text"], author)],
            )  # fmt: skip
        return iid

    def add_event(self, line: dict[str, Any]) -> bool:
        self._forget_cache()
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO events(id, target, op, line) VALUES (?, ?, ?, ?)",
            (line["id"], line["target"], line["op"], json.dumps(line, ensure_ascii=False)),
        )
        return bool(cursor.rowcount)

    def set_status(self, memory_id: str, status: str, searchable: bool) -> None:
        self._forget_cache()
        self.db.execute(
            "UPDATE memories SET status = ?, searchable = ? WHERE id = ?",
            (status, int(searchable), memory_id),
        )

    def set_guaranteed(self, rows: Iterable[tuple[int, bool, int]]) -> None:
        self._forget_cache()
        self.db.executemany(
            "UPDATE memories SET guaranteed = ?, importance = ? WHERE iid = ?",
            ((int(flag), int(importance), int(iid)) for iid, flag, importance in rows),
        )

    @staticmethod
    def _memory(row: tuple[Any, ...]) -> CatalogMemory:
        iid, memory_id, line, text, status, searchable, digest, annotator, affect = row
        return CatalogMemory(
            iid, memory_id, line, text, status, bool(searchable), digest, annotator, affect or ""
        )

    def memories_by_id(self, ids: Iterable[str]) -> dict[str, CatalogMemory]:
        rows = self._in(_MEMORY_COLUMNS + " WHERE m.id IN ({marks})", ids)
        return {memory.id: memory for memory in map(self._memory, rows)}

    def memories_by_iid(self, iids: Iterable[int]) -> dict[int, CatalogMemory]:
        wanted = [int(iid) for iid in dict.fromkeys(iids)]
        found = {iid: self._memories[iid] for iid in wanted if iid in self._memories}
        missing = [iid for iid in wanted if iid not in found]
        for row in self._in(_MEMORY_COLUMNS + " WHERE m.iid IN ({marks})", missing):
            memory = self._memory(row)
            found[memory.iid] = self._memories[memory.iid] = memory
        return found

    def all_memories(self) -> Iterator[CatalogMemory]:
        return map(self._memory, self.db.execute(_MEMORY_COLUMNS + " ORDER BY m.iid"))

    def max_iid(self) -> int | None:
        found: int | None = self.db.execute("SELECT MAX(iid) FROM memories").fetchone()[0]
        return found

    def searchable_iids(self) -> list[int]:
        rows = self.db.execute("SELECT iid FROM memories WHERE searchable = 1 ORDER BY iid")
        return [row[0] for row in rows]

    def content_hashes(self) -> dict[int, str]:
        return dict(self.db.execute("SELECT iid, content_hash FROM memories"))

    def ids_with_keys(self, keys: Iterable[str]) -> list[str]:
        return [row[0] for row in self._in("SELECT id FROM memories WHERE key IN ({marks})", keys)]

    def keys(self) -> list[str]:
        """Every supersede key in use."""
        return [
            row[0]
            for row in self.db.execute("SELECT DISTINCT key FROM memories WHERE key IS NOT NULL")
        ]

    def events_for(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        rows = sorted(
            self._in("SELECT rowid, line FROM events WHERE target IN ({marks})", ids)
        )  # (one order across chunks: the order they were added)
        return [json.loads(line) for _, line in rows]

    def session_rows(self, sessions: Iterable[str]) -> dict[str, list[tuple[int, str]]]:
        """Each session's searchable memories as (iid, text), in time order."""
        found: dict[str, list[tuple[int, str]]] = {}
        for session in dict.fromkeys(sessions):
            rows = self.db.execute(
                "SELECT iid, text FROM memories WHERE session = ? AND searchable = 1"
                " ORDER BY created, iid",
                (session,),
            )
            found[session] = [(int(iid), text) for iid, text in rows]
        return found

    def guaranteed(self, limit: int) -> list[CatalogMemory]:
        """Pinned and milestone memories, most important and newest first (recall's bounded channel)."""
        where = " WHERE guaranteed = 1 AND searchable = 1 ORDER BY importance DESC, created DESC"
        return [
            self._memory(row)
            for row in self.db.execute(_MEMORY_COLUMNS + where + " LIMIT ?", (limit,))
        ]

    def speakers(self) -> list[str]:
        """Names of the people who said the memories (from authors such as 'user:Sam')."""
        if self._speakers is None:
            rows = self.db.execute("SELECT DISTINCT author FROM memories WHERE searchable = 1")
            names = {speaker_of(str(row[0])) for row in rows}
            self._speakers = sorted(name for name in names if name)
        return self._speakers

    def aliases(self) -> dict[str, str]:
        """The names speakers are addressed by in their sessions, case-folded (names.py)."""
        if self._aliases is None:
            rows = self.db.execute(
                "SELECT a.session, a.author, a.name FROM addressed AS a"
                " JOIN memories AS m ON m.iid = a.iid WHERE m.searchable = 1"
            )
            named = [(session, author, [name]) for session, author, name in rows]
            sessions = {session for session, _, _ in named}
            authors = self._in(
                "SELECT DISTINCT session, author FROM memories"
                " WHERE searchable = 1 AND session IN ({marks})",
                sessions,
            )
            self._aliases = aliases(named, authors)
        return self._aliases

    def links(self) -> list[tuple[str, str, str]]:
        if self._links is None:
            events = self.db.execute("SELECT target, line FROM events WHERE op = 'link'")
            written = self.db.execute(
                "SELECT id, line FROM memories WHERE line LIKE '%\"links\":%'"
            )
            self._links = typed_links(
                ((target, json.loads(line)) for target, line in events),
                ((memory_id, json.loads(line)) for memory_id, line in written),
            )
        return self._links

    def link_degrees(self) -> dict[str, int]:
        """How many links between memories touch each memory id (backends.link_degrees)."""
        if self._degrees is None:
            events = self.db.execute("SELECT target, line FROM events WHERE op = 'link'")
            written = self.db.execute(
                "SELECT id, line FROM memories WHERE line LIKE '%\"links\":%'"
            )
            self._degrees = link_degrees(
                ((target, json.loads(line)) for target, line in events),
                ((memory_id, json.loads(line)) for memory_id, line in written),
            )
        return self._degrees

    def counts(self) -> dict[str, int]:
        total, searchable, delta = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(searchable), 0), COALESCE(SUM(1 - in_base), 0) FROM memories"
        ).fetchone()
        events = self.db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        return {"memories": total, "searchable": searchable, "delta": delta, "events": events}

    # the vector base ------------------------------------------------------------------------
    def delta_iids(self) -> list[int]:
        """Searchable memories whose vectors are not in the base index."""
        rows = self.db.execute("SELECT iid FROM memories WHERE in_base = 0 AND searchable = 1")
        return [row[0] for row in rows]

    def hidden_iids(self) -> set[int]:
        rows = self.db.execute("SELECT iid FROM memories WHERE searchable = 0 AND in_base = 1")
        return {row[0] for row in rows}

    def set_base(self, iids: Iterable[int]) -> None:
        self.db.execute("UPDATE memories SET in_base = 0")
        self.db.executemany(
            "UPDATE memories SET in_base = 1 WHERE iid = ?", ((int(i),) for i in iids)
        )

    # rehearsals -----------------------------------------------------------------------------
    def add_rehearsals(self, times: dict[str, list[float]]) -> None:
        self.db.executemany(
            "INSERT INTO rehearsals(memory, at) VALUES (?, ?)",
            ((memory_id, at) for memory_id, moments in times.items() for at in moments),
        )

    def rehearsal_times(self, ids: Iterable[str] | None = None) -> dict[str, list[float]]:
        """memory id → sorted epoch seconds of its rehearsals (decay's input)."""
        rows = (
            self.db.execute("SELECT memory, at FROM rehearsals ORDER BY at")
            if ids is None
            else self._in(
                "SELECT memory, at FROM rehearsals WHERE memory IN ({marks}) ORDER BY at", ids
            )
        )  # (a memory's rows are all in one chunk)
        times: dict[str, list[float]] = {}
        for memory_id, at in rows:
            times.setdefault(memory_id, []).append(at)
        return times

    # derived annotations and the embedding cache ---------------------------------------------
    def affect_for(self, hashes: Iterable[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        rows = self._in(
            "SELECT content_hash, annotator, value FROM affect WHERE content_hash IN ({marks})",
            hashes,
        )
        return {digest: (annotator, json.loads(value)) for digest, annotator, value in rows}

    def set_affect(self, items: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
        self._forget_cache()
        self.db.executemany(
            "INSERT OR REPLACE INTO affect(content_hash, annotator, value) VALUES (?, ?, ?)",
            ((h, annotator, json.dumps(value)) for h, annotator, value in items),
        )

    def clear_affect(self, unreferenced_only: bool = False) -> None:
        self._forget_cache()
        if unreferenced_only:
            self.db.execute(
                "DELETE FROM affect WHERE content_hash NOT IN (SELECT content_hash FROM memories)"
            )
        else:
            self.db.execute("DELETE FROM affect")

    def distilled_for(self, hashes: Iterable[str]) -> dict[str, dict[str, Any]]:
        rows = self._in(
            "SELECT content_hash, value FROM distilled WHERE content_hash IN ({marks})", hashes
        )
        return {digest: json.loads(value) for digest, value in rows}

    def set_distilled(self, items: Iterable[tuple[str, dict[str, Any]]]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO distilled(content_hash, value) VALUES (?, ?)",
            ((digest, json.dumps(value)) for digest, value in items),
        )

    def clear_distilled(self) -> None:
        self.db.execute("DELETE FROM distilled")

    def vector_rows(self, hashes: Iterable[str]) -> dict[str, int]:
        rows = self._in(
            "SELECT content_hash, row FROM vectors WHERE content_hash IN ({marks})", hashes
        )
        return dict(rows)

    def add_vector_rows(self, items: Iterable[tuple[str, int]]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO vectors(content_hash, row) VALUES (?, ?)", items
        )

    def max_vector_row(self) -> int | None:
        found: int | None = self.db.execute("SELECT MAX(row) FROM vectors").fetchone()[0]
        return found

    def clear_vector_rows(self) -> None:
        self.db.execute("DELETE FROM vectors")

    # starting over --------------------------------------------------------------------------
    def clear(self) -> None:
        """Drop everything that mirrors the shelves; keep the manifest and derived caches."""
        self._forget_cache()
        for table in MIRROR_TABLES:
            self.db.execute(f"DELETE FROM {table}")

    def release_space(self) -> None:
        """Old pages (a forgotten memory's text among them) stay in the WAL file until it is
        truncated; a long-lived process would otherwise keep them on disk."""
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


class _Transaction:
    def __init__(self, db: sqlite3.Connection, on_rollback: Callable[[], None]) -> None:
        self.db = db
        self.on_rollback = on_rollback

    def __enter__(self) -> sqlite3.Connection:
        return self.db

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")
            self.on_rollback()
