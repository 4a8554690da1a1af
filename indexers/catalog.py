"""The catalog: a SQLite file in the cache that mirrors the shelves line by line.

It holds each memory's line and text, each event's line, the shelf checkpoints, derived
annotations (affect), the embedding cache and the index manifest. It is a cache: deleting
`.memdir/` loses nothing. SQLite is in the standard library and opens in well under a
millisecond, so a cold command pays nothing to consult it. `secure_delete` is on so forgotten
text does not linger in free pages.
"""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

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
CREATE TABLE IF NOT EXISTS vectors (
    content_hash TEXT PRIMARY KEY, row INTEGER NOT NULL  -- row in the model's vector file
);
"""


# A catalog written with another SCHEMA (an older memdir) loses the tables that mirror the
# shelves and its manifest's version, so the next update rebuilds; the embedding and affect
# caches survive, and the manifest still names their model (rename the tables if their layout
# ever changes).
SCHEMA_ID = zlib.crc32(SCHEMA.encode("utf-8")) & 0x7FFFFFFF
MIRROR_TABLES = ("checkpoints", "memories", "events", "rehearsals")


def speaker_of(author: str) -> str | None:
    """The person behind an author: 'user:Sam' → Sam, 'locomo:Caroline' → Caroline.

    Plain 'user', 'assistant' or 'memdir' name no one in particular.
    """
    if ":" not in author:
        return None
    name = author.split(":", 1)[1].strip()
    return name or None


@dataclass(frozen=True)
class Checkpoint:
    """How far a shelf has been indexed, and a fingerprint of that prefix."""

    shelf: str
    offset: int
    inode: int
    fingerprint: str


@dataclass
class CatalogMemory:
    """A catalogued memory: enough to score and show it without reading the shelves.

    The shelf line and the affect annotation are parsed on first use: recall reads them for its
    shortlist only (it scores the wider pool from the memory table).
    """

    iid: int
    id: str
    stored_line: str  # the line's JSON
    text: str
    status: str
    searchable: bool
    content_hash: str
    annotator: str | None = None  # who annotated its affect, None when nobody has
    stored_affect: str = ""  # that annotation's JSON

    @cached_property
    def line(self) -> dict[str, Any]:
        line: dict[str, Any] = json.loads(self.stored_line)
        return line

    @cached_property
    def annotation(self) -> tuple[str, dict[str, Any]] | None:
        """(annotator, affect) of the derived annotation, when there is one."""
        if self.annotator is None:
            return None
        return self.annotator, json.loads(self.stored_affect)


class Catalog:
    """Access to the catalog database; one connection per instance."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
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
        self._speakers: list[str] | None = None

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
        self._speakers = None

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

    def close(self) -> None:
        self.db.close()

    def transaction(self) -> sqlite3.Connection:
        """`with catalog.transaction():` commits on success, rolls back on error."""
        self.db.execute("BEGIN IMMEDIATE")
        return _Transaction(self.db)  # type: ignore[return-value]

    # manifest -------------------------------------------------------------------------------
    def manifest(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT name, value FROM manifest"))

    def set_manifest(self, values: dict[str, str]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO manifest(name, value) VALUES (?, ?)", values.items()
        )

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
        return cursor.lastrowid if cursor.rowcount else None

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

    def ids_with_keys(self, keys: Iterable[str]) -> list[str]:
        wanted = list(set(keys))
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        return [
            row[0]
            for row in self.db.execute(f"SELECT id FROM memories WHERE key IN ({marks})", wanted)
        ]

    def _select(self, where: str, values: Iterable[Any]) -> Iterator[CatalogMemory]:
        query = (
            "SELECT m.iid, m.id, m.line, m.text, m.status, m.searchable, m.content_hash,"
            " a.annotator, a.value"
            " FROM memories AS m LEFT JOIN affect AS a ON a.content_hash = m.content_hash"
            " WHERE " + where
        )
        for row in self.db.execute(query, list(values)):
            iid, memory_id, line, text, status, searchable, digest, annotator, affect = row
            yield CatalogMemory(
                iid,
                memory_id,
                line,
                text,
                status,
                bool(searchable),
                digest,
                annotator,
                affect or "",
            )

    def memories_by_id(self, ids: Iterable[str]) -> dict[str, CatalogMemory]:
        wanted = list(dict.fromkeys(ids))
        found: dict[str, CatalogMemory] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for memory in self._select(f"id IN ({marks})", chunk):
                found[memory.id] = memory
        return found

    def memories_by_iid(self, iids: Iterable[int]) -> dict[int, CatalogMemory]:
        wanted = [int(iid) for iid in dict.fromkeys(iids)]
        found = {iid: self._memories[iid] for iid in wanted if iid in self._memories}
        missing = [iid for iid in wanted if iid not in found]
        for start in range(0, len(missing), 500):
            chunk = missing[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for memory in self._select(f"iid IN ({marks})", chunk):
                found[memory.iid] = self._memories[memory.iid] = memory
        return found

    def all_memories(self) -> Iterator[CatalogMemory]:
        return self._select("1 ORDER BY iid", ())

    def events_for(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        wanted = list(dict.fromkeys(ids))
        lines: list[dict[str, Any]] = []
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(
                f"SELECT line FROM events WHERE target IN ({marks}) ORDER BY rowid", chunk
            )
            lines.extend(json.loads(row[0]) for row in rows)
        return lines

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

    def add_rehearsals(self, times: dict[str, list[float]]) -> None:
        self.db.executemany(
            "INSERT INTO rehearsals(memory, at) VALUES (?, ?)",
            ((memory_id, at) for memory_id, moments in times.items() for at in moments),
        )

    def rehearsal_times(self, ids: Iterable[str]) -> dict[str, list[float]]:
        """memory id → sorted epoch seconds of its rehearsals (recall's decay step)."""
        wanted = list(dict.fromkeys(ids))
        times: dict[str, list[float]] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(
                f"SELECT memory, at FROM rehearsals WHERE memory IN ({marks}) ORDER BY at", chunk
            )
            for memory_id, at in rows:
                times.setdefault(memory_id, []).append(at)
        return times

    def speakers(self) -> list[str]:
        """Names of the people who said the memories (from authors such as 'user:Sam')."""
        if self._speakers is None:
            rows = self.db.execute("SELECT DISTINCT author FROM memories WHERE searchable = 1")
            names = {speaker_of(str(row[0])) for row in rows}
            self._speakers = sorted(name for name in names if name)
        return self._speakers

    def keys(self) -> list[str]:
        """Every supersede key in use."""
        return [
            row[0]
            for row in self.db.execute("SELECT DISTINCT key FROM memories WHERE key IS NOT NULL")
        ]

    def guaranteed(self, limit: int) -> list[CatalogMemory]:
        """Pinned and milestone memories, most important and newest first (recall's bounded channel)."""
        where = "guaranteed = 1 AND searchable = 1 ORDER BY importance DESC, created DESC LIMIT ?"
        return list(self._select(where, (limit,)))

    def link_degrees(self) -> dict[str, int]:
        """How many links between memories touch each memory id (written links plus link
        events). Links to journal turns (a dream summary's backlinks) do not count: they would
        make every summary look well connected."""
        if self._degrees is not None:
            return self._degrees
        pairs: list[tuple[str, str]] = []
        for target, line in self.db.execute("SELECT target, line FROM events WHERE op = 'link'"):
            pairs.append((target, str(json.loads(line).get("to") or "")))
        for memory_id, line in self.db.execute(
            "SELECT id, line FROM memories WHERE line LIKE '%\"links\":%'"
        ):
            pairs.extend((memory_id, str(link["to"])) for link in json.loads(line).get("links", ()))
        degrees: dict[str, int] = {}
        for one, other in pairs:
            if one.startswith("m-") and other.startswith("m-"):
                degrees[one] = degrees.get(one, 0) + 1
                degrees[other] = degrees.get(other, 0) + 1
        self._degrees = degrees
        return degrees

    def counts(self) -> dict[str, int]:
        total, searchable, delta = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(searchable), 0), COALESCE(SUM(1 - in_base), 0) FROM memories"
        ).fetchone()
        events = self.db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        return {"memories": total, "searchable": searchable, "delta": delta, "events": events}

    # derived annotations and the embedding cache ---------------------------------------------
    def affect_for(self, hashes: Iterable[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        found: dict[str, tuple[str, dict[str, Any]]] = {}
        wanted = list(dict.fromkeys(hashes))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(
                f"SELECT content_hash, annotator, value FROM affect WHERE content_hash IN ({marks})",
                chunk,
            )
            found.update((h, (annotator, json.loads(value))) for h, annotator, value in rows)
        return found

    def set_affect(self, items: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
        self._forget_cache()
        self.db.executemany(
            "INSERT OR REPLACE INTO affect(content_hash, annotator, value) VALUES (?, ?, ?)",
            ((h, annotator, json.dumps(value)) for h, annotator, value in items),
        )

    def vector_rows(self, hashes: Iterable[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        wanted = list(dict.fromkeys(hashes))
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(
                f"SELECT content_hash, row FROM vectors WHERE content_hash IN ({marks})", chunk
            )
            found.update(rows)
        return found

    def add_vector_rows(self, items: Iterable[tuple[str, int]]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO vectors(content_hash, row) VALUES (?, ?)", items
        )

    def delta_iids(self) -> list[int]:
        """Searchable memories whose vectors are not in the base index."""
        rows = self.db.execute("SELECT iid FROM memories WHERE in_base = 0 AND searchable = 1")
        return [row[0] for row in rows]

    def mark_in_base(self, iids: Iterable[int]) -> None:
        self.db.executemany(
            "UPDATE memories SET in_base = 1 WHERE iid = ?", ((int(i),) for i in iids)
        )

    def clear(self) -> None:
        """Drop everything but the embedding cache and affect annotations."""
        self._forget_cache()
        self.db.execute("DELETE FROM memories")
        self.db.execute("DELETE FROM events")
        self.db.execute("DELETE FROM rehearsals")
        self.db.execute("DELETE FROM checkpoints")


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        return self.db

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
