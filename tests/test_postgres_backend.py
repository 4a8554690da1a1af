"""The PostgreSQL backend (indexers/postgres/) keeps the contracts of tests/contracts.py against
a real server with pgvector that the test session starts (conftest.postgres_dsn)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from contracts import (
    DIM,
    CatalogContract,
    FullTextContract,
    VectorIndexContract,
    VectorRowsContract,
    unit_vectors,
)

from memdir.archive_format.settings import VectorSettings
from memdir.indexers.postgres.catalog import PostgresCatalog
from memdir.indexers.postgres.database import Database
from memdir.indexers.postgres.fulltext import PostgresFullText
from memdir.indexers.postgres.vectors import PgVectorIndex, PgVectorRows


@pytest.fixture
def database(postgres_dsn: str) -> Callable[[], Database]:
    """Opens a new connection to one fresh schema each time it is called."""
    schema = f"memdir_test_{uuid.uuid4().hex[:12]}"
    return lambda: Database(postgres_dsn, schema)


class TestPostgresFullText(FullTextContract):
    @pytest.fixture
    def opener(self, database: Callable[[], Database]) -> Callable[[], PostgresFullText]:
        def open_index() -> PostgresFullText:
            index = PostgresFullText(database(), "fulltext_0")
            index.create()
            return index

        return open_index


class TestPgVectorIndex(VectorIndexContract):
    @pytest.fixture
    def opener(self, database: Callable[[], Database]) -> Callable[[], PgVectorIndex]:
        return lambda: PgVectorIndex(database(), DIM, VectorSettings())


class TestPgVectorIndexHnsw(VectorIndexContract):
    """Above `hnsw_above` the base carries an HNSW index (at this size it finds the exact top)."""

    @pytest.fixture
    def opener(self, database: Callable[[], Database]) -> Callable[[], PgVectorIndex]:
        return lambda: PgVectorIndex(database(), DIM, VectorSettings(hnsw_above=2))


class TestPgVectorRows(VectorRowsContract):
    @pytest.fixture
    def opener(self, database: Callable[[], Database]) -> Callable[[], PgVectorRows]:
        return lambda: PgVectorRows(database(), "hashing-16", DIM)


class TestPostgresCatalog(CatalogContract):
    @pytest.fixture
    def opener(self, database: Callable[[], Database]) -> Callable[[], PostgresCatalog]:
        return lambda: PostgresCatalog(database())


def test_the_base_kind_follows_hnsw_above(database: Callable[[], Database]) -> None:
    import numpy as np

    db = database()
    flat = PgVectorIndex(db, DIM, VectorSettings(hnsw_above=10))
    flat.build(unit_vectors(10), np.arange(10))
    assert flat.kind() == "flat"
    graph = PgVectorIndex(db, DIM, VectorSettings(hnsw_above=9))
    graph.build(unit_vectors(10), np.arange(10))
    assert graph.kind() == "hnsw" and graph.size() == 10
    graph.build(unit_vectors(12), np.arange(12))  # a second build reuses the index names
    assert graph.kind() == "hnsw" and graph.size() == 12


HOSTILE = "x'); DROP TABLE memories; -- %s %(words)s {s} $1 \\ \""


def test_values_are_bound_never_spliced(database: Callable[[], Database]) -> None:
    """Text that would break a statement built by string formatting is stored and searched
    as text (every value is a bound parameter; only quoted identifiers are spliced)."""
    from contracts import document, memory_line

    db = database()
    catalog = PostgresCatalog(db)
    with catalog.transaction():
        iid = catalog.add_memory(memory_line(1, HOSTILE, key=HOSTILE), 0, HOSTILE)
        catalog.set_manifest({HOSTILE: HOSTILE})
    assert iid == 1
    assert catalog.memories_by_id(["m-000001"])["m-000001"].text == HOSTILE
    assert catalog.ids_with_keys([HOSTILE]) == ["m-000001"]
    assert catalog.manifest() == {HOSTILE: HOSTILE}
    fulltext = PostgresFullText(db, "fulltext_0")
    fulltext.create()
    fulltext.upsert([document(1, HOSTILE)])
    fulltext.commit()
    assert list(fulltext.scores(HOSTILE, 10)) == [1]
    assert [hit.id for hit in fulltext.search(HOSTILE, 10, snippets=True)] == ["m-000001"]
    assert catalog.counts()["memories"] == 1


def test_meta_fields_and_distillations_are_bound_too(database: Callable[[], Database]) -> None:
    """The meta-memory fields and the distillations take hostile text as text as well."""
    from contracts import document

    db = database()
    fulltext = PostgresFullText(db, "fulltext_0")
    fulltext.create()
    fulltext.upsert([document(1, "plain words", rationale=HOSTILE, intent=HOSTILE)])
    fulltext.commit()
    for field in ("rationale", "intent", "meta"):
        assert list(fulltext.scores(HOSTILE, 10, field=field)) == [1]
    assert fulltext.scores(HOSTILE, 10, field="evidence") == {}
    hits = fulltext.search(HOSTILE, 10, snippets=True, field="rationale")
    assert [hit.id for hit in hits] == ["m-000001"] and "[" in hits[0].snippet
    with pytest.raises(ValueError, match="no full-text field"):
        fulltext.scores("words", 10, field=HOSTILE)
    catalog = PostgresCatalog(db)
    with catalog.transaction():
        catalog.set_distilled([(HOSTILE, {HOSTILE: HOSTILE})])
    assert catalog.distilled_for([HOSTILE]) == {HOSTILE: {HOSTILE: HOSTILE}}


def test_an_older_fulltext_table_starts_again_empty(database: Callable[[], Database]) -> None:
    """A table from before the meta-memory fields (no `meta_terms`) is a cache of an older
    layout: opening it drops it and creates the current one, empty (the updater then sees
    fewer documents than searchable memories and rebuilds)."""
    from contracts import document

    db = database()
    fulltext = PostgresFullText(db, "fulltext_0")
    fulltext.create()
    fulltext.upsert([document(1, "coffee every morning")])
    fulltext.commit()
    db.execute("ALTER TABLE {s}.{table} DROP COLUMN meta_terms", table="fulltext_0")
    reopened = PostgresFullText(database(), "fulltext_0")
    reopened.create()
    assert reopened.count() == 0
    reopened.upsert([document(2, "shellfish", evidence="she said shellfish")])
    reopened.commit()
    assert list(reopened.scores("shellfish", 10, field="evidence")) == [2]


def test_an_older_catalog_schema_is_rebuilt(database: Callable[[], Database]) -> None:
    """A catalog written by a version without the `distilled` table (another schema id):
    the mirror tables are dropped, the manifest's version removed (the next update
    rebuilds), and the new table is there."""
    from contracts import memory_line

    db = database()
    catalog = PostgresCatalog(db)
    with catalog.transaction():
        catalog.add_memory(memory_line(1, "coffee"), 0, "h1")
        catalog.set_manifest({"version": "1", "generation": "3"})
    db.execute("DROP TABLE {s}.distilled")
    db.execute("UPDATE {s}.layout SET value = 'older' WHERE name = 'schema'")
    reopened = PostgresCatalog(database())
    assert reopened.counts()["memories"] == 0
    assert reopened.manifest() == {"generation": "3"}
    with reopened.transaction():
        reopened.set_distilled([("h1", {"type": "FACT"})])
    assert reopened.distilled_for(["h1"]) == {"h1": {"type": "FACT"}}
