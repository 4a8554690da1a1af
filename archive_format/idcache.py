"""Where each id's lines are, so a write need not read every shelf: `.memdir/idcache.sqlite`.

The cache maps memory and tombstone ids (with a hash of the memory's text, its supersede key,
whether it is an inference, its created and expiry times), event targets (with the op and
time) and journal turn and digest ids (with their time) to the file, offset and length of
their lines. It is derived, and never trusted over the files:
- Each file's row holds the inode, size, mtime and a fingerprint of the prefix indexed (its
  first and last 4 KiB, as the index checkpoints do). A file that grew with that prefix intact
  is caught up from where indexing stopped, whether it grew in place or was written anew under
  another inode (a git pull or merge writes the whole shelf: its prefix is what tells); one
  truncated, edited in place or otherwise rewritten is indexed again from its start. memdir's
  own rewrites (rewrite.py: forget, re-applied tombstones, a merge's duplicates dropped,
  journal forget, import --undo, secret turns moved, NULs escaped) are followed from their
  edits instead (`rewritten`): the rows of the replaced lines go, the replacements' come and
  the rows after them move, so the next write reads no line of the rewritten file again.
- Answers are candidates. Callers fold the lines the cache points at; a line that is not what
  the cache says raises `Stale`, and the caller reads every shelf instead.
- An index rebuild (a clone's first `memdir index`) builds a missing cache as well, since it
  reads every shelf anyway (indexers/updater.py), so a clone's first write need not.
- A missing or corrupt cache is rebuilt; when none can be kept on disk (a read-only
  `.memdir/`, a full disk) one is built in memory for the call. Either way the write is
  slower, never wrong.
The cache is kept in SQLite's write-ahead log with `synchronous = NORMAL`: a commit is not
fsynced (a write pays for no flush of the cache), a killed process leaves no half commit, and a
crash of the machine can lose the last commits but never tears the file (the log is fsynced
before each checkpoint copies it into the database). Each file's row rolls back with the rows
it describes, so a cache that lost commits is simply behind, and the next sync catches it up
from the files like any other: a restart of the machine costs no rebuild. (Where the file system
offers no write-ahead log, every commit is fsynced instead.) A transaction that changed many
rows (a build, a rewrite that moved them) checkpoints the log and cuts it to nothing itself, so
the next write does not pay for that.

Syncing runs in an immediate transaction, so processes that do not hold the writer lock (a
boot refresh) can use the cache alongside a writer.
"""

from __future__ import annotations

import gc
import logging
import math
import os
import sqlite3
import threading
import zlib
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import shelf
from .clock import parse_time
from .cutoffs import named_day, stands
from .errors import BadInputError, FormatError
from .memdir import Memdir
from .validate import JOURNAL_KINDS, LINE_KINDS

log = logging.getLogger("memdir")

CACHE_NAME = "idcache.sqlite"
VERSION = 4  # PRAGMA user_version; any other value means: drop and rebuild
CHUNK = 500  # ids per `IN (...)` query, well under SQLite's variable limit
FINGERPRINT_WINDOW = 1 << 12
MARGIN = 1  # second: time filters are widened by it (times are rounded down), the fold decides

SCHEMA = """
CREATE TABLE files(
    number INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, inode INTEGER NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, fingerprint TEXT NOT NULL);
CREATE TABLE records(
    id TEXT NOT NULL, file INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL,
    tombstone INTEGER NOT NULL, text_hash INTEGER, key TEXT, inference INTEGER, created INTEGER,
    expires INTEGER, settled INTEGER, confirmed INTEGER, standing INTEGER, day INTEGER);
CREATE INDEX records_id ON records(id);
CREATE INDEX records_text ON records(text_hash) WHERE text_hash IS NOT NULL;
CREATE INDEX records_key ON records(key) WHERE key IS NOT NULL;
CREATE INDEX records_created ON records(created);
CREATE INDEX records_inference ON records(expires) WHERE inference = 1;
CREATE INDEX records_due ON records(expires) WHERE inference = 1 AND settled IS NULL;
CREATE INDEX records_settled ON records(settled) WHERE inference = 1;
CREATE INDEX records_standing ON records(standing) WHERE standing = 1;
CREATE INDEX records_day ON records(day) WHERE day IS NOT NULL;
CREATE TABLE events(
    target TEXT NOT NULL, file INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL,
    op TEXT, at INTEGER);
CREATE INDEX events_target ON events(target);
CREATE INDEX events_at ON events(at);
CREATE TABLE journal(
    id TEXT NOT NULL, digest INTEGER NOT NULL, file INTEGER NOT NULL, offset INTEGER NOT NULL,
    length INTEGER NOT NULL, at INTEGER);
CREATE INDEX journal_id ON journal(id);
CREATE INDEX journal_at ON journal(at);
"""
TABLES = ("records", "events", "journal")
COLUMNS = {"records": 14, "events": 6, "journal": 6}
WAL_LIMIT = 1 << 22  # bytes of write-ahead log kept after a checkpoint (a build writes 100s of MB)
BULK_LINES = 20_000  # indexing more lines at once drops and rebuilds the SQL indexes
LARGE = 20_000  # rows changed in one transaction after which the log is checkpointed at once
BATCH_LINES = 50_000  # rows inserted per executemany while indexing
DECIDED = ("confirm", "reject", "expire", "forget")  # after one of these, never due to expire


Edit = tuple[int, int, bytes]  # a replaced line: its offset, its length, the new lines (or b"")


class Stale(Exception):
    """A line is not where, or not what, the cache says: read the files instead."""


def text_hash(text: str) -> int:
    """A 32-bit hash of a memory's text: equal texts, equal hashes (the rest is checked)."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def fingerprint(handle: Any, length: int) -> str:
    """The first `length` bytes of an open file, cheaply (shelf.prefix_fingerprint)."""
    return shelf.prefix_fingerprint(handle, length, FINGERPRINT_WINDOW)


def _epoch(value: Any) -> int | None:
    """Whole seconds since 1970 (rounded down), None for what is not a time."""
    if not isinstance(value, str):
        return None
    if len(value) == 20 and value[4] == "-" and value[10] == "T" and value[19] == "Z":
        try:  # the canonical form, without building a datetime
            year, month, day = int(value[0:4]), int(value[5:7]), int(value[8:10])
            hour, minute, second = int(value[11:13]), int(value[14:16]), int(value[17:19])
        except ValueError:
            return None
        if 1 <= month <= 12 and 1 <= day <= 28 and hour < 24 and minute < 60 and second < 60:
            return _days(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    try:
        return math.floor(parse_time(value).timestamp())
    except (BadInputError, ValueError, OverflowError):
        return None  # the fold will say what is wrong with it


def _days(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil)."""
    year -= month <= 2
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    of_era_days = of_era * 365 + of_era // 4 - of_era // 100 + of_year
    return era * 146097 + of_era_days - 719468


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


EVERY_KIND = LINE_KINDS + JOURNAL_KINDS


def _decoded(raw: bytes) -> Any:
    """A line's JSON object, or None when shelf.decode_line refuses it (not UTF-8, not JSON,
    too deep, a lone surrogate that SQLite could not store, …): `verify` says so."""
    try:
        return shelf.decode_line(raw, "")
    except FormatError:
        return None


def _standing(data: dict[str, Any]) -> bool:
    """Whether a memory line is one wake keeps at any age (cutoffs.stands), by its own fields.
    A keyed memory is not marked: a briefing reaches each key's current memory through `keys`,
    and marking every older value of every key would fold them all."""
    if _text(data.get("key")):
        return False
    importance = data.get("importance")
    return stands(key=None, pinned=data.get("pinned") is True,
                  source=_text(data.get("source")), type=_text(data.get("type")),
                  importance=importance if isinstance(importance, int) else None)  # fmt: skip


def _day(text: Any, created: int | None) -> int | None:
    """The calendar day a memory's text names (cutoffs.named_day), as the epoch of its start
    in UTC; None when it names none (most texts cost named_day one scan)."""
    if not isinstance(text, str) or created is None:
        return None
    day = named_day(text, datetime.fromtimestamp(created, timezone.utc))
    if day is None:
        return None
    return int(datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp())


def _row(data: Any, number: int, offset: int, length: int) -> tuple[str, tuple[Any, ...]] | None:
    """The table and row a decoded line goes to, or None when it names nothing."""
    if not isinstance(data, dict):
        return None
    kind = data.get("kind")
    if kind == "memory" or kind == "tombstone":
        memory_id = data.get("id")
        if not isinstance(memory_id, str) or memory_id.startswith("t-"):
            return None  # a forgotten turn's tombstone (journal forget) names no memory
        if kind == "tombstone":
            return "records", (memory_id, number, offset, length, 1) + (None,) * 9
        text = data.get("text")
        created = _epoch(data.get("created"))
        return "records", (
            memory_id, number, offset, length, 0,
            text_hash(text) if isinstance(text, str) else None,
            _text(data.get("key")), int(data.get("source") == "inference"),
            created, _epoch(data.get("expires")), None, None,
            int(_standing(data)), _day(text, created),
        )  # fmt: skip
    if kind == "event" and isinstance(data.get("target"), str):
        return "events", (
            data["target"],
            number,
            offset,
            length,
            _text(data.get("op")),
            _epoch(data.get("at")),
        )
    if kind in ("turn", "digest") and isinstance(data.get("id"), str):
        return "journal", (
            data["id"],
            int(kind == "digest"),
            number,
            offset,
            length,
            _epoch(data.get("at")),
        )
    return None


def _chunks(items: Iterable[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) == CHUNK:
            yield batch
            batch = []
    if batch:
        yield batch


class IdCache:
    """An open, synced id cache of one memdir (see the module docstring)."""

    def __init__(self, memdir: Memdir, db: sqlite3.Connection) -> None:
        self.memdir = memdir
        self.db = db
        self.files: dict[int, tuple[str, int]] = {}  # number -> (name, inode), after sync
        self._dropped = False  # rows of a file deleted during this sync
        # lines read from the files to index them since this cache was opened: what a sync
        # cost (a rewrite that the cache followed costs none; tests and benchmarks read it)
        self.lines_read = 0

    # --- keeping it in step with the files ---------------------------------------------------
    def tracked(self) -> dict[str, Path]:
        """The files the cache covers, by their name relative to the memdir, in fold order."""
        root = self.memdir.root
        shelves = self.memdir.shelves()
        journal = sorted(self.memdir.journal_dir.glob("*.jsonl"))
        return {path.relative_to(root).as_posix(): path for path in [*shelves, *journal]}

    def sync(self) -> None:
        """Bring the cache up to date with the files (one transaction)."""
        db = self.db
        changes = db.total_changes
        db.execute("BEGIN IMMEDIATE")
        try:
            known = {
                row[1]: row
                for row in db.execute(
                    "SELECT number, name, inode, size, mtime_ns, fingerprint FROM files"
                )
            }
            wanted = self.tracked()
            last = [db.execute(f"SELECT MAX(rowid) FROM {t}").fetchone()[0] or 0 for t in TABLES]
            self._dropped = False
            for name in known.keys() - wanted.keys():
                self._drop_file(known[name][0])
            self.files = {}
            for name, path in wanted.items():
                self._sync_file(name, path, known.get(name))
            self._settle(None if self._dropped else (last[0], last[1]))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            self.files = {}
            raise
        self._checkpoint_if_large(changes)

    def _checkpoint_if_large(self, changes: int) -> None:
        """After a transaction that changed many rows (a build, a rewrite that moved them) the
        write-ahead log holds as many pages: copy them into the database and cut the log to
        nothing now, or the next write pays for it (≈ 20 ms at 1M, measured)."""
        if self.db.total_changes - changes < LARGE:
            return
        try:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as error:  # busy: the next write's commit cuts the log instead
            log.debug("id cache log not checkpointed: %s", error)

    def _settle(self, after: tuple[int, int] | None, touched: bool = False) -> None:
        """Mark each inference with the time of the first event that settled it for good (a
        decision, a sweep, a forget) and of its last confirm: those added, or with events
        added, after the given rowids (of records, of events), or every one (after=None);
        `touched`: also those the temporary table `touched` names (their events went)."""
        marks = ",".join("?" * len(DECIDED))
        update = (
            f"UPDATE records SET settled = (SELECT MIN(at) FROM events WHERE target = records.id "
            f"AND op IN ({marks})), confirmed = (SELECT MAX(at) FROM events "
            "WHERE target = records.id AND op = 'confirm') WHERE inference = 1"
        )
        if after is None:
            self.db.execute(update, DECIDED)
            return
        also = " OR id IN (SELECT id FROM touched)" if touched else ""
        self.db.execute(
            f"{update} AND (rowid > ? OR id IN "
            f"(SELECT target FROM events WHERE rowid > ? AND op IN ({marks})){also})",
            (*DECIDED, *after, *DECIDED),
        )

    def _drop_file(self, number: int) -> None:
        self._dropped = True  # events may have gone: every mark _settle sets is computed again
        for table in TABLES:
            self.db.execute(f"DELETE FROM {table} WHERE file = ?", (number,))
        self.db.execute("DELETE FROM files WHERE number = ?", (number,))

    def _sync_file(self, name: str, path: Path, known: tuple[Any, ...] | None) -> None:
        try:
            handle = open(path, "rb")
        except FileNotFoundError:  # removed since it was listed
            if known is not None:
                self._drop_file(known[0])
            return
        with handle:
            stat = os.fstat(handle.fileno())
            start = 0
            if known is not None:
                number, _, inode, size, mtime_ns, mark = known
                self.files[number] = (name, inode)
                same_file = inode == stat.st_ino
                if same_file and size == stat.st_size and mtime_ns == stat.st_mtime_ns:
                    return
                grown = stat.st_size > size or (stat.st_size == size and size == 0)
                # appended to — in place, or written anew with the old bytes first, as a git
                # pull or merge writes a shelf (a new inode): index the new lines only
                if grown and fingerprint(handle, size) == mark:
                    start = size
                else:
                    self._drop_file(number)
                    known = None
            if known is None:
                number = self.db.execute(
                    "INSERT INTO files(name, inode, size, mtime_ns, fingerprint) "
                    "VALUES (?, ?, 0, 0, '')",
                    (name, stat.st_ino),
                ).lastrowid
                assert number is not None
            self.files[number] = (name, stat.st_ino)
            end = self._index(handle, number, start, stat.st_size)
            self.db.execute(
                "UPDATE files SET inode = ?, size = ?, mtime_ns = ?, fingerprint = ? "
                "WHERE number = ?",
                (stat.st_ino, end, stat.st_mtime_ns, fingerprint(handle, end), number),
            )

    def _index(self, handle: Any, number: int, start: int, size: int) -> int:
        """Index the complete lines in [start, size); returns the offset after the last one."""
        blob = os.pread(handle.fileno(), size - start, start) if size > start else b""
        count = blob.count(b"\n")  # complete lines: a newline-less tail is torn or still written
        self.lines_read += count
        bulk = count >= BULK_LINES
        if bulk:  # building the indexes once at the end is several times faster
            self.db.execute("PRAGMA cache_size = -65536")
            for (name,) in self.db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
            ).fetchall():
                self.db.execute(f"DROP INDEX {name}")
        collecting = gc.isenabled()
        gc.disable()  # a million short-lived dicts would trigger full collections over and over
        try:
            offset = start
            rows: dict[str, list[tuple[Any, ...]]] = {table: [] for table in TABLES}
            for done, (length, data) in enumerate(shelf.decoded_lines(blob), start=1):
                found = _row(data, number, offset, length)  # data None: refused (`verify` says)
                if found is not None:
                    rows[found[0]].append(found[1])
                offset += length
                if done % BATCH_LINES == 0 or done == count:
                    for table, values in rows.items():
                        marks = ",".join("?" * COLUMNS[table])
                        self.db.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
                        values.clear()
        finally:
            if collecting:
                gc.enable()
        if bulk:
            for statement in SCHEMA.split(";"):
                if "CREATE INDEX" in statement:
                    self.db.execute(statement)
        return offset

    def rewritten(self, path: Path, before: os.stat_result, end: int, edits: list[Edit]) -> None:
        """Follow a rewrite of `path` (rewrite.py) that replaced the lines at the given offsets
        of the file as it was (`before`, its complete lines ending at `end`), without reading
        the file again: rows of the replaced lines go, the replacements' come, the rows after
        them move. Skipped when the cache had not indexed exactly that file: the next sync
        then indexes it from its start (a new inode), as it does after any other rewrite."""
        name = path.relative_to(self.memdir.root).as_posix()
        db = self.db
        changes = db.total_changes
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT number, inode, size FROM files WHERE name = ?", (name,)
            ).fetchone()
            if row is None or (row[1], row[2]) != (before.st_ino, end):
                db.execute("ROLLBACK")
                return
            number = row[0]
            last = [db.execute(f"SELECT MAX(rowid) FROM {t}").fetchone()[0] or 0 for t in TABLES]
            # each replaced line's offset, and how far the lines after it move
            db.execute("CREATE TEMP TABLE IF NOT EXISTS moves(start INTEGER PRIMARY KEY, shift)")
            db.execute("CREATE TEMP TABLE IF NOT EXISTS touched(id TEXT)")
            db.execute("DELETE FROM moves")
            db.execute("DELETE FROM touched")
            edits = sorted(edits)
            moved, shifts = 0, []
            for offset, length, replacement in edits:
                moved += len(replacement) - length
                shifts.append((offset, moved))
            db.executemany("INSERT INTO moves VALUES (?, ?)", shifts)
            db.execute(
                "INSERT INTO touched SELECT target FROM events "
                "WHERE file = ? AND offset IN (SELECT start FROM moves)",
                (number,),
            )  # inferences whose settling events may have gone
            for table in TABLES:
                db.execute(
                    f"DELETE FROM {table} WHERE file = ? AND offset IN (SELECT start FROM moves)",
                    (number,),
                )
                db.execute(
                    f"UPDATE {table} SET offset = offset + (SELECT shift FROM moves "
                    f"WHERE start < {table}.offset ORDER BY start DESC LIMIT 1) "
                    "WHERE file = ? AND offset > ?",
                    (number, edits[0][0] if edits else end),
                )
            rows: dict[str, list[tuple[Any, ...]]] = {table: [] for table in TABLES}
            shift = 0
            for offset, length, replacement in edits:
                at = offset + shift
                shift += len(replacement) - length
                for raw in replacement.split(b"\n")[:-1]:  # one line, none, or several
                    found = _row(_decoded(raw), number, at, len(raw) + 1)
                    if found is not None:
                        rows[found[0]].append(found[1])
                    at += len(raw) + 1
            for table, values in rows.items():
                marks = ",".join("?" * COLUMNS[table])
                db.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
            self._settle((last[0], last[1]), touched=True)
            new_end = end + moved
            with open(path, "rb") as handle:
                stat = os.fstat(handle.fileno())
                if stat.st_size < new_end:  # not the file rewritten: the next sync reads it
                    db.execute("ROLLBACK")
                    return
                db.execute(
                    "UPDATE files SET inode = ?, size = ?, mtime_ns = ?, fingerprint = ? "
                    "WHERE number = ?",
                    (stat.st_ino, new_end, stat.st_mtime_ns, fingerprint(handle, new_end),
                     number),
                )  # fmt: skip
            db.execute("COMMIT")
            self.files[number] = (name, stat.st_ino)
            self._checkpoint_if_large(changes)
        except (sqlite3.Error, OSError) as error:  # the next sync indexes the file again
            log.debug("id cache not updated after rewriting %s: %s", name, error)
            if db.in_transaction:
                db.execute("ROLLBACK")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    # --- questions ---------------------------------------------------------------------------
    def _column(self, query: str, values: Iterable[str]) -> set[str]:
        """The first column of `query` (whose `{marks}` takes the values) over every value."""
        found: set[str] = set()
        for batch in _chunks(set(values)):
            rows = self.db.execute(query.format(marks=",".join("?" * len(batch))), batch)
            found.update(row[0] for row in rows)
        return found

    def present(self, ids: Iterable[str]) -> set[str]:
        """Which of `ids` a memory or tombstone line on some shelf carries."""
        return self._column("SELECT id FROM records WHERE id IN ({marks})", ids)

    def turns_present(self, ids: Iterable[str]) -> set[str]:
        """Which of `ids` a journal turn line carries."""
        return self._column("SELECT id FROM journal WHERE digest = 0 AND id IN ({marks})", ids)

    def with_text(self, text: str) -> set[str]:
        """Ids of memories whose text may be `text` (a hash match)."""
        rows = self.db.execute("SELECT id FROM records WHERE text_hash = ?", (text_hash(text),))
        return {row[0] for row in rows}

    def matching(self, given: str) -> set[str]:
        """Ids equal to, or starting with, `given` or 'm-' + `given` (as ArchiveView.resolve)."""
        given = given.strip()
        found: set[str] = set()
        for prefix in {given} if given.startswith("m-") else {given, f"m-{given}"}:
            # Ids are ASCII; every id starting with `prefix` sorts below prefix + U+10FFFF.
            rows = self.db.execute(
                "SELECT id FROM records WHERE id >= ? AND id < ?", (prefix, prefix + "\U0010ffff")
            )
            found.update(row[0] for row in rows)
        return found

    def unique_prefixes(self, ids: Iterable[str], minimum: int = 10) -> dict[str, str]:
        """For each id, its shortest prefix of at least `minimum` characters that names only
        it (what `matching` and ArchiveView.resolve accept): long enough to pass its nearest
        neighbours in sort order."""
        found: dict[str, str] = {}
        for memory_id in set(ids):
            before = self.db.execute(
                "SELECT max(id) FROM records WHERE id < ?", (memory_id,)
            ).fetchone()[0]
            after = self.db.execute(
                "SELECT min(id) FROM records WHERE id > ?", (memory_id,)
            ).fetchone()[0]
            shared = max(_common(memory_id, other) for other in (before, after, ""))
            found[memory_id] = memory_id[: max(minimum, shared + 1)]
        return found

    def keys_of(self, ids: Iterable[str]) -> set[str]:
        """The supersede keys of the memories `ids`."""
        query = "SELECT DISTINCT key FROM records WHERE id IN ({marks}) AND key IS NOT NULL"
        return self._column(query, ids)

    def keys(self) -> set[str]:
        """Every supersede key on the shelves."""
        rows = self.db.execute("SELECT DISTINCT key FROM records WHERE key IS NOT NULL")
        return {row[0] for row in rows}

    def ranked(self, key: str) -> list[tuple[str, float]]:
        """The memories with `key`, each with the latest time (in whole seconds) at which it
        could have become durable (created, or its last confirm), latest first."""
        rows = self.db.execute(
            "SELECT id, CASE WHEN created IS NULL THEN 1e18 "
            "ELSE MAX(created, IFNULL(confirmed, created)) END AS bound "
            "FROM records WHERE key = ? ORDER BY bound DESC",
            (key,),
        )
        return [(row[0], float(row[1])) for row in rows]

    def since(self, moment: datetime) -> set[str]:
        """Memories created, and targets of events dated, at or after `moment` (or undated)."""
        start = moment.timestamp() - MARGIN
        found = {
            row[0]
            for row in self.db.execute(
                "SELECT id FROM records WHERE created >= ? OR created IS NULL", (start,)
            )
        }
        found.update(
            row[0]
            for row in self.db.execute(
                "SELECT target FROM events WHERE at >= ? OR at IS NULL", (start,)
            )
        )
        return found

    def standing(self) -> set[str]:
        """Memories wake keeps at any age while current (cutoffs.stands) that have no key:
        pinned, important, hard-typed teachings; the fold decides whether each is current."""
        rows = self.db.execute("SELECT id FROM records WHERE standing = 1")
        return {row[0] for row in rows}

    def dated(self, since: datetime) -> set[str]:
        """Memories whose text names a calendar day on or after `since`'s (the upcoming ones
        wake lists, however long ago they were written); the fold decides what is current."""
        start = int(datetime(since.year, since.month, since.day, tzinfo=timezone.utc).timestamp())
        rows = self.db.execute("SELECT id FROM records WHERE day >= ?", (start - 86400,))
        return {row[0] for row in rows}

    def open_inferences(self, now: datetime) -> set[str]:
        """Inferences that may still be provisional at `now`: not yet past their expiry."""
        rows = self.db.execute(
            "SELECT id FROM records WHERE inference = 1 AND (expires IS NULL OR expires > ?)",
            (now.timestamp() - MARGIN,),
        )
        return {row[0] for row in rows}

    def due(self, now: datetime) -> set[str]:
        """Inferences past their expiry at `now` that no decision, sweep or forget settled."""
        rows = self.db.execute(
            "SELECT id FROM records WHERE inference = 1 AND settled IS NULL AND expires <= ? "
            "UNION SELECT id FROM records WHERE inference = 1 AND settled > ? AND expires <= ?",
            (now.timestamp() + MARGIN, now.timestamp() - MARGIN, now.timestamp() + MARGIN),
        )  # the second part: settled only after `now` (a `--now` in the past)
        return {row[0] for row in rows}

    def lines(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        """The memory and tombstone lines of `ids` and every event about them, in fold order
        (file name, then offset). Raises Stale when a line is not what the cache recorded."""
        wanted: list[tuple[int, int, int, str, str]] = []
        for batch in _chunks(set(ids)):
            marks = ",".join("?" * len(batch))
            for table, column in (("records", "id"), ("events", "target")):
                wanted.extend(
                    (*row, column)
                    for row in self.db.execute(
                        f"SELECT file, offset, length, {column} FROM {table} "
                        f"WHERE {column} IN ({marks})",
                        batch,
                    )
                )
        return self._fetch(wanted)

    def journal_lines(self, since: datetime, until: datetime | None) -> list[dict[str, Any]]:
        """The turn and digest lines dated in [since, until] (or undated), in file order."""
        rows = self.db.execute(
            "SELECT file, offset, length, id, 'id' FROM journal "
            "WHERE (at >= ? AND at <= ?) OR at IS NULL",
            (since.timestamp() - MARGIN, until.timestamp() + MARGIN if until else 2**62),
        )
        return self._fetch(rows.fetchall())

    def journal_start(self) -> datetime | None:
        """When the earliest dated journal line is (to the second)."""
        first = self.db.execute("SELECT MIN(at) FROM journal").fetchone()[0]
        return None if first is None else datetime.fromtimestamp(first, timezone.utc)

    def _fetch(self, wanted: list[tuple[int, int, int, str, str]]) -> list[dict[str, Any]]:
        order = {number: name for number, (name, _) in self.files.items()}
        wanted.sort(key=lambda row: (order.get(row[0], ""), row[1]))
        return list(self._read(wanted))

    def _read(self, wanted: list[tuple[int, int, int, str, str]]) -> Iterator[dict[str, Any]]:
        handles: dict[int, Any] = {}
        try:
            for number, offset, length, name, column in wanted:
                if number not in handles:
                    handles[number] = self._open_file(number)
                raw = os.pread(handles[number].fileno(), length, offset)
                where = f"{self.memdir.root / self.files[number][0]} (byte {offset})"
                try:
                    data: Any = shelf.parse(raw.rstrip(b"\n"), where, EVERY_KIND)
                except FormatError as error:
                    data = _decoded(raw)
                    if isinstance(data, dict) and data.get(column) == name:
                        shelf.skip_malformed(error)  # the line it indexed, malformed: skipped
                        continue
                if not (
                    raw.endswith(b"\n") and isinstance(data, dict) and data.get(column) == name
                ):
                    raise Stale(f"{self.files[number][0]} byte {offset}: not {name}'s line")
                yield data
        finally:
            for handle in handles.values():
                handle.close()

    def _open_file(self, number: int) -> Any:
        name, inode = self.files.get(number, ("", -1))
        try:
            handle = open(self.memdir.root / name, "rb")
        except OSError:
            raise Stale(f"{name or number}: gone") from None
        if os.fstat(handle.fileno()).st_ino != inode:
            handle.close()
            raise Stale(f"{name}: replaced since the cache was synced")
        return handle


# (path, thread) -> (pid, cache, the file's inode): a forked child opens its own, a cache file
# deleted or replaced behind this process's back is opened again, and each thread has its own
# connection (`memdir serve` answers on several; SQLite arbitrates between connections).
_open: dict[tuple[Path, int], tuple[int, IdCache, int]] = {}


def _common(one: str, other: str | None) -> int:
    """How many leading characters two ids share."""
    return len(os.path.commonprefix([one, other or ""]))


def _inode(path: Path) -> int:
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return -1


def _connect(path: Path | str) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    try:
        # the write-ahead log, fsynced only before a checkpoint: consistent after a crash of
        # the machine (the last commits may be lost), no flush per write (module docstring)
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        db.execute(f"PRAGMA synchronous = {'NORMAL' if mode in ('wal', 'memory') else 'FULL'}")
        db.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT}")
        if db.execute("PRAGMA user_version").fetchone()[0] != VERSION:
            db.execute("BEGIN IMMEDIATE")
            if db.execute("PRAGMA user_version").fetchone()[0] != VERSION:  # still, once locked
                tables = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                for (name,) in tables.fetchall():
                    db.execute(f"DROP TABLE {name}")
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {VERSION}")
            db.execute("COMMIT")
    except BaseException:
        db.close()
        raise
    return db


def open_cache(memdir: Memdir) -> IdCache:
    """The memdir's id cache, synced with its files.

    A corrupt cache file is removed and rebuilt. When the cache cannot be kept on disk (a
    read-only `.memdir/`, a full disk, a lock held too long), one is built in memory from the
    files for this call: as slow as reading every shelf, and as right.
    """
    cache = kept_cache(memdir)
    if cache is not None:
        return cache
    scratch = IdCache(memdir, _connect(":memory:"))
    scratch.sync()
    return scratch


def kept_cache(memdir: Memdir) -> IdCache | None:
    """The memdir's id cache on disk, synced with its files; None when none can be kept (then
    open_cache builds one in memory, and a rewrite has nothing to tell)."""
    path = memdir.cache_dir / CACHE_NAME
    held = _open.get(_key(path))
    cache = held[1] if held is not None and held[0] == os.getpid() else None
    if cache is not None and held is not None and _inode(path) != held[2]:
        _close(path)  # deleted or replaced since this process opened it
        cache = None
    for attempt in range(2):
        try:
            if cache is None:
                memdir.cache_dir.mkdir(parents=True, exist_ok=True)
                cache = IdCache(memdir, _connect(path))
                _open[_key(path)] = (os.getpid(), cache, _inode(path))
            cache.sync()
            return cache
        except (sqlite3.DatabaseError, OSError) as error:
            log.debug("id cache %s unusable: %s", path, error)
            _close(path)
            cache = None
            busy = isinstance(error, sqlite3.OperationalError) and "locked" in str(error)
            if attempt or busy or not _remove(path):
                break  # otherwise it was damaged: start again from the files
    return None


def _key(path: Path) -> tuple[Path, int]:
    return path, threading.get_ident()


def _close(path: Path) -> None:
    held = _open.pop(_key(path), None)
    if held is not None and held[0] == os.getpid():
        held[1].db.close()


def _remove(path: Path) -> bool:
    """Delete the cache file and its logs; False when that is not possible. The database goes
    first: SQLite discards a write-ahead log it finds beside an empty or new database."""
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm", f"{path.name}-journal"):
        try:
            (path.parent / name).unlink(missing_ok=True)
        except OSError:
            return False
    return True
