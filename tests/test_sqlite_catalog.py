"""The SQLite catalog (indexers/catalog.py) keeps the Catalog contract; a list of values of any
length is bound as one JSON array in one statement; a catalog of an older schema is rebuilt
with its caches kept (renamed, or copied into the leaner layout); what recall reads comes back
as it was written, however it is stored."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from contracts import CatalogContract, hashed, memory_line
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdir.indexers.affect import PLUTCHIK
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
            catalog.add_memories([(memory_line(number), number, hashed(f"h{number}"))])[0]
            catalog.add_vector_rows([(hashed(f"h{number}"), number)])
    statements: list[str] = []
    catalog.db.set_trace_callback(statements.append)
    found = catalog.memories_by_id(f"m-{number:06d}" for number in range(count))
    assert len(found) == count
    assert len(statements) == 1
    # content hashes are bound as bytes: one statement too
    rows = catalog.vector_rows(hashed(f"h{number}") for number in range(count))
    assert rows == {hashed(f"h{number}"): number for number in range(count)}
    assert len(statements) == 2
    catalog.close()


def test_releasing_space_packs_the_file(tmp_path: Path) -> None:
    """What a rebuild ends with: the pages deleted rows left free are given back and the
    rest packed, so the file is no larger than the rows it holds."""
    path = tmp_path / "catalog.sqlite"
    catalog = SqliteCatalog(path)
    with catalog.transaction():
        catalog.set_affect((hashed(f"h{n}"), "vader/1", {"valence": n / 5000}) for n in range(5000))
        catalog.add_vector_rows((hashed(f"h{n}"), n) for n in range(5000))
    catalog.release_space()
    full = path.stat().st_size
    with catalog.transaction():
        catalog.clear_affect()
    catalog.release_space()
    assert catalog.db.execute("PRAGMA freelist_count").fetchone()[0] == 0
    assert path.stat().st_size < full * 0.6
    assert len(catalog.vector_rows(hashed(f"h{n}") for n in range(5000))) == 5000
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
INSERT INTO memories VALUES (1, 'm-000001', '{{}}', 'coffee');
INSERT INTO affect VALUES ('{h1}', 'vader', '{{"valence": 0.5}}');
INSERT INTO vectors VALUES ('{h1}', 41);
PRAGMA user_version = 12345;
"""


def test_an_older_schema_is_rebuilt_and_its_caches_kept(tmp_path: Path) -> None:
    """Another schema id: the tables that mirror the shelves start empty and the manifest
    loses its version (so the next update rebuilds them), while the affect annotations and
    the embedding cache's rows (renamed from `vectors`) survive, as does the model's name."""
    path = tmp_path / "catalog.sqlite"
    h1 = hashed("coffee")
    with sqlite3.connect(path) as db:
        db.executescript(OLDER.format(h1=h1))
    catalog = SqliteCatalog(path)
    catalog.check()
    assert catalog.counts()["memories"] == 0
    assert catalog.manifest() == {"model": "minilm"}
    assert catalog.vector_rows([h1]) == {h1: 41}
    assert catalog.affect_for([h1]) == {h1: ("vader", {"valence": 0.5})}
    with catalog.transaction():
        assert catalog.add_memories([(memory_line(1), 0, h1)])[0] == 1
    catalog.close()


# The cache tables as memdir wrote them before the leaner catalog (INDEX_VERSION 12): hex text
# keys, rowid tables, values as json.dumps gave them.
PREVIOUS = """
CREATE TABLE manifest (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE memories (iid INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, line TEXT NOT NULL,
    text TEXT NOT NULL, content_hash TEXT NOT NULL);
CREATE TABLE affect (content_hash TEXT PRIMARY KEY, annotator TEXT NOT NULL, value TEXT NOT NULL);
CREATE TABLE distilled (content_hash TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE vector_rows (content_hash TEXT PRIMARY KEY, number BIGINT NOT NULL);
INSERT INTO manifest VALUES ('version', '12'), ('model', 'minilm');
PRAGMA user_version = 54321;
"""


def test_the_previous_cache_tables_are_copied_into_the_leaner_ones(tmp_path: Path) -> None:
    """Opening a catalog of the layout before hashes were bytes and values packed copies every
    annotation, distillation and embedding row into the new tables, as they were, and drops
    the old tables; a key that is no content hash (none can refer to it) is left behind."""
    path = tmp_path / "catalog.sqlite"
    affect = {"valence": 0.8481, "arousal": 0.4085, "chord": dict.fromkeys(PLUTCHIK, 0.0),
              "annotator": "vader/1"}  # fmt: skip
    distilled = {"type": None, "subtype": None, "importance": 6, "temporal": "persistent",
                 "relational": 1.0, "confidence": 0.0686, "annotator": "memdir-distill/1"}  # fmt: skip
    first, second = hashed("first"), hashed("second")
    with sqlite3.connect(path) as db:
        db.executescript(PREVIOUS)
        db.executemany("INSERT INTO affect VALUES (?, ?, ?)", [
            (first, "vader/1", json.dumps(affect)),
            (second, "vader/1+nrc/1", json.dumps({**affect, "chord": {"joy": 0.5}})),
            ("h1", "vader/1", json.dumps(affect)),
        ])  # fmt: skip
        db.executemany("INSERT INTO distilled VALUES (?, ?)", [(first, json.dumps(distilled))])
        db.executemany("INSERT INTO vector_rows VALUES (?, ?)", [(first, 7), (second, 3)])
    catalog = SqliteCatalog(path)
    catalog.check()
    assert catalog.manifest() == {"model": "minilm"}  # so the next update rebuilds
    assert catalog.affect_for([first, second]) == {
        first: ("vader/1", affect),
        second: ("vader/1+nrc/1", {**affect, "chord": {"joy": 0.5}}),
    }
    assert catalog.distilled_for([first]) == {first: distilled}
    assert catalog.vector_rows([first, second]) == {first: 7, second: 3}
    assert catalog.max_vector_row() == 7
    assert catalog.db.execute("SELECT COUNT(*) FROM affect_values").fetchone()[0] == 2
    tables = {row[0] for row in catalog.db.execute("SELECT name FROM sqlite_master")}
    assert not tables & {"affect", "distilled", "vector_rows"}
    catalog.close()


# What recall reads back: a memory's line and text, its affect annotation (as annotate_many
# gives them, and any other dict), its distillation.
_floats = st.floats(-1, 1, allow_nan=False).map(lambda value: round(value, 4))
_chords = st.one_of(
    st.just(dict.fromkeys(PLUTCHIK, 0.0)),
    st.fixed_dictionaries({emotion: _floats for emotion in PLUTCHIK}),
    st.dictionaries(st.sampled_from(PLUTCHIK), _floats),
)
_annotators = st.sampled_from(["vader/1", "vader/1+nrc/1", "user"])
# (no NUL: SQLite's json_each, which binds a list of sessions, cuts a string at one)
_texts = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), min_size=1, max_size=40
)


@st.composite
def _affects(draw: Any) -> tuple[str, dict[str, Any]]:
    annotator = draw(_annotators)
    value: dict[str, Any] = {"valence": draw(_floats), "arousal": draw(_floats)}
    if draw(st.booleans()):
        value["chord"] = draw(_chords)
    if draw(st.booleans()):
        value["annotator"] = draw(st.one_of(st.just(annotator), _annotators))
    if draw(st.booleans()):
        value[draw(st.sampled_from(["-", "note", "chord"]))] = draw(st.one_of(st.none(), _texts))
    return annotator, value


_distillations = st.fixed_dictionaries(
    {"type": st.one_of(st.none(), st.sampled_from(["FACT", "PERSON"])),
     "importance": st.integers(1, 10), "annotator": st.just("memdir-distill/1")},
    optional={"subtype": st.one_of(st.none(), _texts), "confidence": _floats,
              "temporal": st.one_of(st.none(), st.just("milestone"))},
)  # fmt: skip


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=_texts,
    extra=st.dictionaries(
        st.sampled_from(["session", "key", "affect", "kind", "store", "visibility", "-"]),
        st.one_of(st.none(), _texts),
    ),
    numbers=st.dictionaries(st.sampled_from(["importance", "links"]), st.integers(1, 10)),
    left_out=st.sets(st.sampled_from(["kind", "source", "author", "created"])),
    affect=_affects(),
    distilled=_distillations,
)
def test_what_recall_reads_comes_back_as_written(
    tmp_path: Path,
    text: str,
    extra: dict[str, Any],
    numbers: dict[str, int],
    left_out: set[str],
    affect: Any,
    distilled: dict[str, Any],
) -> None:
    """A memory's line (the usual values, others, keys left out), its text, its affect
    annotation and its distillation, read back in a new connection, are what was written."""
    path = tmp_path / "catalog.sqlite"
    path.unlink(missing_ok=True)
    catalog = SqliteCatalog(path)
    line = memory_line(1, text, **extra, **numbers)
    for key in left_out:
        del line[key]
    digest = hashed(text)
    annotator, value = affect
    with catalog.transaction():
        iid = catalog.add_memories([(line, 0, digest)])[0]
        catalog.set_affect([(digest, annotator, value)])
        catalog.set_distilled([(digest, distilled)])
    catalog.close()
    catalog = SqliteCatalog(path)  # a new process: nothing cached
    (memory,) = catalog.memories_by_iid([iid]).values()
    assert (memory.line, memory.text, memory.content_hash) == (line, text, digest)
    assert memory.annotation == (annotator, value)
    assert catalog.affect_for([digest]) == {digest: (annotator, value)}
    assert catalog.distilled_for([digest]) == {digest: distilled}
    if extra.get("session") is not None:
        assert catalog.session_rows([extra["session"]]) == {extra["session"]: [(iid, text)]}
    catalog.close()
