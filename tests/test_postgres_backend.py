"""The PostgreSQL backend (indexers/postgres/) keeps the contracts of tests/contracts.py against
a real server with pgvector that the test session starts (conftest.postgres_dsn)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from contracts import (
    DIM,
    CatalogContract,
    FullTextContract,
    VectorIndexContract,
    VectorRowsContract,
    hashed,
    unit_vectors,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    def store(self, database: Callable[[], Database]) -> PgVectorRows:
        return PgVectorRows(database(), "hashing-16", DIM)

    @pytest.fixture
    def opener(
        self, database: Callable[[], Database], store: PgVectorRows
    ) -> Callable[[], PgVectorIndex]:
        return lambda: PgVectorIndex(database(), DIM, VectorSettings(), store)


class TestPgVectorIndexHnsw(TestPgVectorIndex):
    """Above `hnsw_above` the base carries an HNSW index (at this size it finds the exact top)."""

    @pytest.fixture
    def opener(
        self, database: Callable[[], Database], store: PgVectorRows
    ) -> Callable[[], PgVectorIndex]:
        return lambda: PgVectorIndex(database(), DIM, VectorSettings(hnsw_above=2), store)


class TestPgVectorRows(VectorRowsContract):
    @pytest.fixture
    def opener(self, database: Callable[[], Database]) -> Callable[[], PgVectorRows]:
        return lambda: PgVectorRows(database(), "hashing-16", DIM)


class TestPostgresCatalog(CatalogContract):
    @pytest.fixture
    def opener(self, database: Callable[[], Database]) -> Callable[[], PostgresCatalog]:
        return lambda: PostgresCatalog(database())


def test_rows_read_in_a_transaction_that_rolls_back_are_not_kept(
    database: Callable[[], Database],
) -> None:
    """An update appends rows and may read them back in its transaction; if it rolls back,
    the next update appends other vectors under the same numbers, and those are what a read
    returns (rows read outside a transaction are kept: committed rows never change)."""
    import numpy as np

    db = database()
    rows = PgVectorRows(db, "hashing-16", DIM)
    rows.append(unit_vectors(1, 1))
    rows.rows([0])
    with pytest.raises(RuntimeError), db.transaction():
        rows.append(unit_vectors(2, 2))
        assert np.allclose(rows.rows([1, 2]), unit_vectors(2, 2), atol=1e-6)
        raise RuntimeError("the update fails")
    rows.append(unit_vectors(2, 3))
    assert np.allclose(rows.rows([0, 1, 2]), [*unit_vectors(1, 1), *unit_vectors(2, 3)], atol=1e-6)


def test_the_base_kind_follows_hnsw_above(database: Callable[[], Database]) -> None:
    import numpy as np

    db = database()
    store = PgVectorRows(db, "hashing-16", DIM)
    store.append(unit_vectors(12))
    flat = PgVectorIndex(db, DIM, VectorSettings(hnsw_above=10), store)
    flat.build(np.arange(10), np.arange(10))
    assert flat.kind() == "flat"
    graph = PgVectorIndex(db, DIM, VectorSettings(hnsw_above=9), store)
    graph.build(np.arange(10), np.arange(10))
    assert graph.kind() == "hnsw" and graph.size() == 10
    graph.build(np.arange(12), np.arange(12))  # a second build reuses the index names
    assert graph.kind() == "hnsw" and graph.size() == 12


def test_the_graph_has_three_fifths_the_degree_of_the_local_one(
    database: Callable[[], Database],
) -> None:
    """pgvector's HNSW graph is built with three fifths of `vectors.hnsw_m`, rounded down, at
    least 2 (postgres/vectors.graph_degree), and ef_construction from the settings, at least
    2·m as pgvector asks."""
    import numpy as np

    db = database()
    store = PgVectorRows(db, "hashing-16", DIM)
    store.append(unit_vectors(8))
    for m, ef_construction, expected in ((20, 80, ["m=12", "ef_construction=80"]),
                                         (32, 80, ["m=19", "ef_construction=80"]),
                                         (12, 10, ["m=7", "ef_construction=14"]),
                                         (2, 1, ["m=2", "ef_construction=4"])):  # fmt: skip
        settings = VectorSettings(hnsw_above=5, hnsw_m=m, ef_construction=ef_construction)
        PgVectorIndex(db, DIM, settings, store).build(np.arange(8), np.arange(8))
        found = db.one("SELECT reloptions FROM pg_class WHERE relname = 'vector_base_hnsw'"
                       " AND relnamespace = %s::regnamespace", (db.schema,))  # fmt: skip
        assert found[0] == expected


HOSTILE = "x'); DROP TABLE memories; -- %s %(words)s {s} $1 \\ \""


def test_values_are_bound_never_spliced(database: Callable[[], Database]) -> None:
    """Text that would break a statement built by string formatting is stored and searched
    as text (every value is a bound parameter; only quoted identifiers are spliced)."""
    from contracts import document, memory_line

    db = database()
    catalog = PostgresCatalog(db)
    with catalog.transaction():
        iid = catalog.add_memories([(memory_line(1, HOSTILE, key=HOSTILE), 0, hashed(HOSTILE))])[0]
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
        catalog.set_distilled([(hashed(HOSTILE), {HOSTILE: HOSTILE})])
    assert catalog.distilled_for([hashed(HOSTILE)]) == {hashed(HOSTILE): {HOSTILE: HOSTILE}}


def test_an_older_fulltext_table_starts_again_empty(database: Callable[[], Database]) -> None:
    """A table of an older layout (postings rows and a table of frequencies, no packed
    `_lists` beside it) is a cache: opening it drops it with its companions and creates the
    current one, empty (the updater then sees fewer documents than searchable memories and
    rebuilds)."""
    from contracts import document

    db = database()
    fulltext = PostgresFullText(db, "fulltext_0")
    fulltext.create()
    fulltext.upsert([document(1, "coffee every morning")])
    fulltext.commit()
    db.execute("DROP TABLE {s}.{table}", table="fulltext_0_lists")
    db.execute("CREATE TABLE {s}.{table} (field SMALLINT, lexeme TEXT, df INTEGER)",
               table="fulltext_0_terms")  # fmt: skip
    reopened = PostgresFullText(database(), "fulltext_0")
    assert reopened.count() == 0 and reopened.scores("coffee", 10) == {}
    reopened.create()
    assert reopened.count() == 0 and not db.table_exists("fulltext_0_terms")
    reopened.upsert([document(2, "shellfish", evidence="she said shellfish")])
    reopened.commit()
    assert list(reopened.scores("shellfish", 10, field="evidence")) == [2]


# --- BM25 from the postings equals BM25 computed from scratch --------------------------------
VOCABULARY = ("coffee", "coffees", "tea", "the", "morning", "milk", "dog", "dogs", "rain", "é")
K1, B = 1.2, 0.75

texts = st.lists(st.sampled_from(VOCABULARY), min_size=0, max_size=8).map(" ".join)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), st.integers(1, 6), texts, texts, st.integers(0, 3)),
        st.tuples(st.just("delete"), st.integers(1, 8)),
        st.tuples(st.just("commit")),
        st.tuples(st.just("replace_all"), st.integers(0, 3), texts),
    ),
    min_size=1,
    max_size=14,
)


def reference_bm25(db: Database, bodies: dict[int, str], query: str) -> dict[int, float]:
    """BM25 (k1 1.2, b 0.75) over `bodies` by iid, from each body's English lexemes
    (PostgreSQL's to_tsvector: term frequency = positions) and word counts, from scratch."""
    import math
    import re

    lexemes = {
        iid: dict(db.rows("SELECT lexeme, COALESCE(array_length(positions, 1), 1)"
                          " FROM unnest(to_tsvector('english', %s))", (body.lower(),)))
        for iid, body in bodies.items()
    }  # fmt: skip
    wanted = db.one("SELECT tsvector_to_array(to_tsvector('english', %s))", (query.lower(),))[0]
    lengths = {iid: len(re.findall(r"\w+", body)) for iid, body in bodies.items()}
    n = max(len(bodies), 1)
    average = max(sum(lengths.values()), 1) / n
    found: dict[int, float] = {}
    for lexeme in wanted:
        df = sum(1 for terms in lexemes.values() if lexeme in terms)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for iid, terms in lexemes.items():
            if lexeme in terms:
                tf = terms[lexeme]
                norm = tf + K1 * (1 - B + B * lengths[iid] / average)
                found[iid] = found.get(iid, 0.0) + idf * tf * (K1 + 1) / norm
    return found


@pytest.fixture(params=["merged when due", "merged at every commit"])
def merging(request: pytest.FixtureRequest) -> Iterator[None]:
    """The merge threshold as shipped (these small tables never reach it: postings stay
    recent, removed documents' packed postings masked by T_gone), or a merge at every commit
    that changed a document (the lists then hold exactly the live documents' postings)."""
    from memdir.indexers.postgres import fulltext

    if request.param == "merged when due":
        yield
        return
    saved = fulltext.MERGE_MIN, fulltext.MERGE_RATIO
    fulltext.MERGE_MIN, fulltext.MERGE_RATIO = 0, 0.0
    try:
        yield
    finally:
        fulltext.MERGE_MIN, fulltext.MERGE_RATIO = saved


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations=operations, query=texts, window=st.integers(0, 3))
def test_bm25_from_the_postings_is_bm25_from_scratch(
    database: Callable[[], Database],
    merging: None,
    operations: list[tuple[Any, ...]],
    query: str,
    window: int,
) -> None:
    """After any sequence of upserts, deletes, replace_all and commits (statistics kept live,
    not recomputed; merged or not), every field's scores equal BM25 computed from the committed
    documents alone, also with the time and iid filters; count() is the number of documents."""
    db = database()
    try:
        check_bm25(db, operations, query, window)
    finally:
        db.close()  # one connection per example, not one left open each


def check_bm25(db: Database, operations: list[tuple[Any, ...]], query: str, window: int) -> None:
    from contracts import document

    fulltext = PostgresFullText(db, f"fulltext_{uuid.uuid4().hex[:8]}")
    fulltext.create()
    staged: list[tuple[str, int, tuple[str, str, int] | None]] = []
    committed: dict[int, tuple[str, str, int]] = {}
    for operation in (*operations, ("commit",)):
        if operation[0] == "upsert":
            _, iid, text, rationale, time = operation
            fulltext.upsert([document(iid, text, time=time, context=f"{text} {rationale}",
                                      context_parts=[text, rationale], rationale=rationale)])  # fmt: skip
            staged.append(("set", iid, (text, rationale, time)))
        elif operation[0] == "delete":
            fulltext.delete([f"m-{operation[1]:06d}"])
            staged.append(("set", operation[1], None))
        elif operation[0] == "replace_all":  # the full text's compaction: these documents only
            _, count, text = operation
            fulltext.replace_all([document(iid, text, context=f"{text} ", context_parts=[text, ""])
                                  for iid in range(count)])  # fmt: skip
            staged.append(("clear", 0, None))
            staged.extend(("set", iid, (text, "", 0)) for iid in range(count))
        else:
            fulltext.commit()
            for action, iid, value in staged:
                if action == "clear":
                    committed.clear()
                elif value is None:
                    committed.pop(iid, None)
                else:
                    committed[iid] = value
            staged = []
    assert fulltext.count() == len(committed)
    fields = {
        "text": {iid: text for iid, (text, _, _) in committed.items()},
        "context": {iid: f"{text} {rationale}" for iid, (text, rationale, _) in committed.items()},
        "rationale": {iid: rationale for iid, (_, rationale, _) in committed.items()},
        "meta": {iid: rationale for iid, (_, rationale, _) in committed.items()},
    }  # fmt: skip
    for field, bodies in fields.items():
        # every word at once: a wrong frequency of any lexeme shows in some document's score
        everything = " ".join(VOCABULARY)
        assert fulltext.scores(everything, 100, field=field) == pytest.approx(
            reference_bm25(db, bodies, everything), rel=1e-9
        ), field
        expected = reference_bm25(db, bodies, query)
        found = fulltext.scores(query, 100, field=field)
        assert found == pytest.approx(expected, rel=1e-9), field
        assert list(found) == sorted(found, key=lambda iid: (-found[iid], iid))
        early = {iid for iid, (_, _, time) in committed.items() if time < window}
        assert fulltext.scores(query, 100, field=field, between=(0, window)) == pytest.approx(
            {iid: score for iid, score in expected.items() if iid in early}, rel=1e-9
        )
        odd = [1, 3, 5]
        assert fulltext.scores(query, 100, field=field, within=odd) == pytest.approx(
            {iid: score for iid, score in expected.items() if iid in odd}, rel=1e-9
        )
        best = fulltext.scores(query, 2, field=field)
        assert list(best) == list(found)[:2]


# --- a bulk load parses a context in pieces ----------------------------------------------------
# Words and the marks PostgreSQL's parser reads specially: hyphens, numbers and versions,
# e-mail, URLs and paths, entities, XML tags and comments (which alone span a space), quotes,
# Greek final sigma (lower-cased by context), tabs and newlines.
TOKENS = ("dog", "dogs", "Running", "the", "a-b", "co-op-2", "<b", "x>", '<a title="x', 'y">',
          "<!--", "-->", "&amp;", "&#38;", "1.5", "-3", "+7", "2.0.1", "1e-3", "foo@bar.com",
          "http://x.y/z", "/usr/bin", "ΟΔΟΣ", "Σ", "é", "'", '"', "...", "-", "_", " ", "\t",
          "\n", "")  # fmt: skip
pieces = st.lists(st.sampled_from(TOKENS), max_size=8).map("".join)


def context_postings(db: Database, table: str) -> dict[str, int]:
    """The context field's term frequency of each lexeme in the lists of a table holding one
    document."""
    from memdir.indexers.postgres.fulltext import FIELD_CODES, postings_of

    rows = db.binary_rows("SELECT lexeme, postings, times FROM {s}.{lists} WHERE field = %s",
                          (FIELD_CODES["context"],), lists=f"{table}_lists")  # fmt: skip
    return {lexeme: int(postings_of(packed, times)["tf"][0]) for lexeme, packed, times in rows}


def parsed_whole(db: Database, body: str) -> dict[str, int]:
    return dict(db.rows("SELECT lexeme, COALESCE(array_length(positions, 1), 1)"
                        " FROM unnest(to_tsvector('english', %s))", (body.lower(),)))  # fmt: skip


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(pieces, min_size=1, max_size=5), attached=st.one_of(st.none(), pieces))
def test_a_context_parsed_in_pieces_has_the_whole_body_s_postings(
    database: Callable[[], Database], parts: list[str], attached: str | None
) -> None:
    """A bulk load parses a context given with its parts (the memory's and its neighbours'
    texts, joined by spaces, its attachments' text after a newline) piece by piece and sums
    the frequencies: the lists hold what parsing the whole context would give."""
    from contracts import document

    body = " ".join(parts) + (f"\n{attached}" if attached is not None else "")
    db = database()
    try:
        table = f"fulltext_{uuid.uuid4().hex[:8]}"
        fulltext = PostgresFullText(db, table)
        fulltext.create()
        fulltext.upsert([document(1, parts[0], context=body, context_parts=parts)])
        fulltext.commit()
        assert context_postings(db, table) == parsed_whole(db, body)
    finally:
        db.close()


@pytest.mark.parametrize(
    "parts",
    [
        ["dog " * 200 + "cat", "dog " * 100],  # 300 dogs: a tsvector keeps 255 positions
        ["a " * 17000, "cat cat cat"],  # past the 16,383rd word the three cats are one position
        ["<b", "title>cat", "cat"],  # an XML tag across the space: not a word
        ["cat", "dog"],  # parts that are not the context's: parsed whole
    ],
)
def test_a_context_the_pieces_cannot_stand_for_is_parsed_whole(
    database: Callable[[], Database], parts: list[str]
) -> None:
    from contracts import document

    db = database()
    body = " ".join(parts) if parts[0] != "cat" else "cat and a dog"
    fulltext = PostgresFullText(db, "fulltext_0")
    fulltext.create()
    fulltext.upsert([document(1, parts[0], context=body, context_parts=parts)])
    fulltext.commit()
    assert context_postings(db, "fulltext_0") == parsed_whole(db, body)


def test_the_first_commit_packs_the_postings(database: Callable[[], Database]) -> None:
    """A new table's first commit (a rebuild's bulk load) packs every posting into the lists
    and leaves no posting row; a later commit's postings are rows, and a document it removes
    leaves its iid in T_gone; a merge packs the rows and empties both. Through all of it BM25
    is the same as on a table written one document per commit, and as BM25 from scratch."""
    from contracts import document

    from memdir.indexers.postgres import fulltext as module

    db = database()
    bulk, single = PostgresFullText(db, "fulltext_0"), PostgresFullText(db, "fulltext_1")
    texts = {n: f"coffee {'tea ' * (n % 3)}morning {n}" for n in range(1, 41)}
    for index in (bulk, single):
        index.create()
    bulk.upsert([document(n, text) for n, text in texts.items()])
    bulk.commit()

    def rows(index: PostgresFullText, part: str) -> int:
        return int(db.one("SELECT COUNT(*) FROM {s}.{name}", name=f"{index.table}_{part}")[0])

    assert rows(bulk, "postings") == 0 and rows(bulk, "lists") > 0
    for n, text in texts.items():
        single.upsert([document(n, text)])
        single.commit()
    for index in (bulk, single):
        index.upsert([document(50, "tea tea rain")])
        index.delete(["m-000002"])
        index.commit()
    texts[50] = "tea tea rain"
    del texts[2]
    assert rows(bulk, "postings") == 4 and rows(bulk, "gone") == 1  # tea, rain in text, context
    query = "coffee tea rain morning"
    expected = reference_bm25(db, texts, query)
    assert bulk.scores(query, 50) == single.scores(query, 50) == pytest.approx(expected, rel=1e-9)
    saved = module.MERGE_MIN
    module.MERGE_MIN = 0
    try:
        bulk.upsert([document(51, "milk")])
        bulk.commit()
    finally:
        module.MERGE_MIN = saved
    texts[51] = "milk"
    assert rows(bulk, "postings") == 0 and rows(bulk, "gone") == 0
    assert bulk.scores(query, 50) == pytest.approx(reference_bm25(db, texts, query), rel=1e-9)
    lists = db.binary_rows("SELECT postings, times FROM {s}.{name}", name="fulltext_0_lists")
    merged = [module.postings_of(postings, times) for postings, times in lists]
    assert 2 not in {int(iid) for postings in merged for iid in postings["iid"]}
    assert {int(time) for postings in merged for time in postings["time"]} == {0}


def test_an_older_catalog_schema_is_rebuilt(database: Callable[[], Database]) -> None:
    """A catalog written by a version before the leaner layout (another schema id; cache
    tables `affect` and `vector_rows` keyed by hex text, no `distilled` table): the mirror
    tables are dropped, the manifest's version removed (the next update rebuilds), the caches
    copied into the new tables (bytea keys, packed values) and the old ones dropped."""
    from contracts import memory_line

    db = database()
    catalog = PostgresCatalog(db)
    h1 = hashed("coffee")
    with catalog.transaction():
        catalog.add_memories([(memory_line(1, "coffee"), 0, h1)])[0]
        catalog.set_manifest({"version": "1", "generation": "3"})
    for table in ("affect_values", "distillations", "embedding_rows"):
        db.execute("DROP TABLE {s}.{table}", table=table)
    db.execute("CREATE TABLE {s}.affect (content_hash TEXT PRIMARY KEY, annotator TEXT NOT NULL,"
               " value TEXT NOT NULL)")  # fmt: skip
    db.execute("CREATE TABLE {s}.vector_rows (content_hash TEXT PRIMARY KEY, number BIGINT)")
    affect = {"valence": 0.5, "chord": {"joy": 0.0}, "annotator": "vader/1"}
    db.execute("INSERT INTO {s}.affect VALUES (%s, 'vader/1', %s)", (h1, json.dumps(affect)))
    db.execute("INSERT INTO {s}.vector_rows VALUES (%s, 41), ('h2', 42)", (h1,))
    db.execute("UPDATE {s}.layout SET value = 'older' WHERE name = 'schema'")
    reopened = PostgresCatalog(database())
    assert reopened.counts()["memories"] == 0
    assert reopened.manifest() == {"generation": "3"}
    assert reopened.affect_for([h1]) == {h1: ("vader/1", affect)}
    assert reopened.vector_rows([h1]) == {h1: 41} and reopened.max_vector_row() == 41
    assert not db.table_exists("affect") and not db.table_exists("vector_rows")
    with reopened.transaction():
        reopened.set_distilled([(h1, {"type": "FACT"})])
    assert reopened.distilled_for([h1]) == {h1: {"type": "FACT"}}
