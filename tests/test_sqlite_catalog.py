"""The SQLite catalog (indexers/catalog.py) keeps the Catalog contract; a list of values of any
length is bound as one JSON array in one statement; a catalog of an older schema is rebuilt
with its caches kept."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from contracts import CatalogContract, memory_line

from memdir.indexers.catalog import SqliteCatalog


class TestSqliteCatalog(CatalogContract):
    @pytest.fixture
    def opener(self, tmp_path: Path) -> Callable[[], SqliteCatalog]:
        return lambda: SqliteCatalog(tmp_path / "catalog.sqlite")


def test_a_lookup_of_any_size_is_one_statement(tmp_path: Path) -> None:
    """More values than SQLite's oldest limit of 999 host parameters, in one statement."""
    catalog = SqliteCatalog(tmp_path / "catalog.sqlite")
    count = 2001
    with catalog.transaction():
        for number in range(count):
            catalog.add_memory(memory_line(number), number, f"h{number}")
    statements: list[str] = []
    catalog.db.set_trace_callback(statements.append)
    found = catalog.memories_by_id(f"m-{number:06d}" for number in range(count))
    assert len(found) == count
    assert len(statements) == 1
    catalog.close()


# The catalog as memdir wrote it before the SQLite and PostgreSQL catalogs shared one schema.
OLDER = """
CREATE TABLE manifest (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE checkpoints (shelf TEXT PRIMARY KEY, offset INTEGER NOT NULL,
    inode INTEGER NOT NULL, fingerprint TEXT NOT NULL);
CREATE TABLE memories (iid INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, line TEXT NOT NULL,
    text TEXT NOT NULL);
CREATE TABLE events (id TEXT PRIMARY KEY, target TEXT NOT NULL, op TEXT NOT NULL,
    line TEXT NOT NULL);
CREATE TABLE affect (content_hash TEXT PRIMARY KEY, annotator TEXT NOT NULL, value TEXT NOT NULL);
CREATE TABLE vectors (content_hash TEXT PRIMARY KEY, row INTEGER NOT NULL);
INSERT INTO manifest VALUES ('version', '7'), ('model', 'minilm');
INSERT INTO memories VALUES (1, 'm-000001', '{}', 'coffee');
INSERT INTO affect VALUES ('h1', 'vader', '{"valence": 0.5}');
INSERT INTO vectors VALUES ('h1', 41);
PRAGMA user_version = 12345;
"""


def test_an_older_schema_is_rebuilt_and_its_caches_kept(tmp_path: Path) -> None:
    """Another schema id: the tables that mirror the shelves start empty and the manifest
    loses its version (so the next update rebuilds them), while the affect annotations and
    the embedding cache's rows (renamed from `vectors`) survive, as does the model's name."""
    path = tmp_path / "catalog.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(OLDER)
    catalog = SqliteCatalog(path)
    catalog.check()
    assert catalog.counts()["memories"] == 0
    assert catalog.manifest() == {"model": "minilm"}
    assert catalog.vector_rows(["h1"]) == {"h1": 41}
    assert catalog.affect_for(["h1"]) == {"h1": ("vader", {"valence": 0.5})}
    with catalog.transaction():
        assert catalog.add_memory(memory_line(1), 0, "h1") == 1
    catalog.close()
