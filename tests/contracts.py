"""The behaviour every index backend promises (indexers/backends.py), as test suites.

Like vdirsyncer's StorageTests: one class per protocol — FullTextContract, VectorIndexContract,
VectorRowsContract, CatalogContract — whose tests use only the protocol's methods. A backend's
test module subclasses each class it implements (the name must start with Test) and provides
one fixture, `opener`: a function that opens the same store each time it is called, the way
another process would open the same files (VectorIndexContract needs a second, `store`). The
same suites run against Tantivy, FAISS and SQLite and against the in-memory backends
(indexers/memory_backend.py), so a new backend that passes them can stand in for the old ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pytest

from memdir.indexers.backends import (
    Catalog,
    CatalogMemory,
    Checkpoint,
    Document,
    FullTextIndex,
    VectorIndex,
    VectorRows,
)

MANY = 2500  # beyond SQLite's oldest limit of 999 bound values per statement, several times
UNICODE = "Zoë's café in Zürich — 東京で寿司 🍣, naïve façade"


def document(iid: int, text: str, time: int = 0, **fields: Any) -> Document:
    found: Document = {"id": f"m-{iid:06d}", "iid": iid, "text": text, "time": time}
    found.update(fields)  # type: ignore[typeddict-item]
    return found


class Contract:
    """A suite's one requirement of its subclass: the `opener` fixture."""

    @pytest.fixture
    def opener(self) -> Callable[[], Any]:
        raise NotImplementedError("the backend's test module provides `opener`")


# --- full text -------------------------------------------------------------------------------
class FullTextContract(Contract):
    """backends.FullTextIndex."""

    @pytest.fixture
    def index(self, opener: Callable[[], FullTextIndex]) -> FullTextIndex:
        return opener()

    @staticmethod
    def filled(index: FullTextIndex, *documents: Document) -> FullTextIndex:
        index.upsert(list(documents))
        index.commit()
        return index

    def test_an_empty_index_finds_nothing(self, index: FullTextIndex) -> None:
        assert index.count() == 0
        assert index.search("coffee", 10) == []
        assert index.scores("coffee", 10) == {}
        index.commit()  # nothing staged: a no-op
        assert index.count() == 0

    def test_writes_are_seen_only_after_commit(self, index: FullTextIndex) -> None:
        index.upsert([document(1, "black coffee")])
        assert index.count() == 0
        index.commit()
        assert index.count() == 1
        assert [hit.id for hit in index.search("coffee", 10)] == ["m-000001"]

    def test_rollback_drops_staged_writes(self, index: FullTextIndex) -> None:
        self.filled(index, document(1, "black coffee"))
        index.upsert([document(2, "green tea")])
        index.delete(["m-000001"])
        index.rollback()
        index.commit()
        assert index.count() == 1
        assert [hit.id for hit in index.search("coffee tea", 10)] == ["m-000001"]

    def test_upsert_replaces_a_document_with_the_same_id(self, index: FullTextIndex) -> None:
        self.filled(index, document(1, "black coffee"), document(2, "a cup of coffee"))
        self.filled(index, document(1, "green tea"))
        assert index.count() == 2
        assert [hit.id for hit in index.search("coffee", 10)] == ["m-000002"]
        assert list(index.scores("tea", 10)) == [1]

    def test_delete_removes_and_ignores_unknown_ids(self, index: FullTextIndex) -> None:
        self.filled(index, document(1, "black coffee"), document(2, "a cup of coffee"))
        index.delete(["m-000001", "m-999999"])
        index.commit()
        assert index.count() == 1
        assert list(index.scores("coffee", 10)) == [2]

    def test_replace_all_leaves_scores_that_depend_on_the_documents_alone(
        self, index: FullTextIndex
    ) -> None:
        """After replaced and deleted documents, `replace_all` + commit scores exactly like the
        index did when it held only those documents, and `replaced()` is 0 (before, it may
        count the replaced ones where a backend's statistics lag)."""
        live = [document(i, f"coffee number {i} with milk") for i in range(1, 6)]
        self.filled(index, *live, document(7, "green tea"))
        before = index.scores("coffee milk", 10)
        self.filled(index, document(6, "coffee coffee coffee"), document(7, "tea"))
        index.delete(["m-000006"])
        index.upsert([document(7, "green tea")])
        index.commit()
        assert index.replaced() >= 0 and index.count() == 6
        index.replace_all([*live, document(7, "green tea")])
        assert index.count() == 6  # staged until the commit
        index.commit()
        assert index.replaced() == 0 and index.count() == 6
        assert index.scores("coffee milk", 10) == before
        index.replace_all([document(8, "espresso")])
        index.rollback()
        assert index.count() == 6 and index.scores("espresso", 10) == {}

    def test_ranking_basics(self, index: FullTextIndex) -> None:
        """Documents matching more of the query rank higher; those matching none are left
        out; scores are positive, best first, and `limit`/`k` cut the list."""
        self.filled(
            index,
            document(1, "coffee with milk every morning"),
            document(2, "espresso coffee every morning"),
            document(3, "the dog hates thunderstorms"),
            document(4, "milk for the cat every morning"),
        )
        scores = index.scores("espresso coffee", 10)
        assert list(scores) == [2, 1]
        assert all(score > 0 for score in scores.values())
        assert list(index.scores("espresso coffee", 1)) == [2]
        hits = index.search("espresso coffee", 10)
        assert [hit.id for hit in hits] == ["m-000002", "m-000001"]
        assert hits[0].score >= hits[1].score > 0
        assert len(index.search("every morning", 2)) == 2

    def test_scores_on_the_context_field(self, index: FullTextIndex) -> None:
        """`context` holds the text with its neighbours; a document without one is its text."""
        self.filled(
            index,
            document(1, "she moved last spring", context="she moved last spring to Lisbon"),
            document(2, "Lisbon has steep hills"),
        )
        assert set(index.scores("Lisbon", 10, field="context")) == {1, 2}
        assert list(index.scores("Lisbon", 10, field="text")) == [2]
        assert [hit.id for hit in index.search("Lisbon", 10)] == ["m-000002"]

    def test_meta_memory_fields_are_searched_on_their_own(self, index: FullTextIndex) -> None:
        """intent, rationale and evidence are fields of their own; "meta" searches all three;
        none of them leaks into the text field."""
        self.filled(
            index,
            document(1, "avoid the seafood place", rationale="her shellfish allergy"),
            document(2, "book a window seat", intent="comfort", evidence="she said shellfish"),
            document(3, "shellfish platter was great"),
        )
        assert list(index.scores("shellfish", 10, field="rationale")) == [1]
        assert list(index.scores("shellfish", 10, field="evidence")) == [2]
        assert list(index.scores("comfort", 10, field="intent")) == [2]
        assert set(index.scores("shellfish", 10, field="meta")) == {1, 2}
        assert list(index.scores("shellfish", 10, field="text")) == [3]
        hits = index.search("allergy", 10, snippets=True, field="rationale")
        assert [hit.id for hit in hits] == ["m-000001"] and "[allergy]" in hits[0].snippet
        assert index.search("allergy", 10) == []

    def test_within_and_between_restrict_scores(self, index: FullTextIndex) -> None:
        self.filled(
            index,
            document(1, "coffee at ten", time=10),
            document(2, "coffee at twenty", time=20),
            document(3, "coffee at thirty", time=30),
        )
        assert set(index.scores("coffee", 10, within=[1, 3, 99])) == {1, 3}
        assert index.scores("coffee", 10, within=[]) == {}
        assert set(index.scores("coffee", 10, between=(10, 30))) == {1, 2}  # end excluded
        assert set(index.scores("coffee", 10, within=[2, 3], between=(0, 25))) == {2}

    def test_snippets_bracket_the_matched_words(self, index: FullTextIndex) -> None:
        self.filled(index, document(1, "I drink my coffee black"))
        [hit] = index.search("coffee", 10, snippets=True)
        assert "[coffee]" in hit.snippet and "black" in hit.snippet
        assert index.search("coffee", 10)[0].snippet == ""

    def test_english_stemming(self, index: FullTextIndex) -> None:
        self.filled(index, document(1, "two coffees please"), document(2, "a single coffee"))
        assert set(index.scores("coffee", 10)) == {1, 2}
        assert set(index.scores("Coffees", 10)) == {1, 2}

    def test_unicode_text(self, index: FullTextIndex) -> None:
        self.filled(index, document(1, UNICODE), document(2, "plain ascii words"))
        for query in ("zürich", "ZÜRICH", "café", "東京で寿司"):
            assert list(index.scores(query, 10)) == [1], query
        [hit] = index.search("façade", 10, snippets=True)
        assert hit.id == "m-000001" and "[façade]" in hit.snippet

    def test_queries_with_syntax_characters_never_fail(self, index: FullTextIndex) -> None:
        self.filled(index, document(1, "I drink my coffee black"))
        for query in ("(", '"unbalanced', "a:b", "*", "coffee AND", "what's up?"):
            assert isinstance(index.search(query, 10), list)
            assert isinstance(index.scores(query, 10), dict)
        assert list(index.scores("coffee?! (black)", 10)) == [1]

    def test_empty_queries_and_limits(self, index: FullTextIndex) -> None:
        self.filled(index, document(1, "black coffee"))
        assert index.search("   ", 10) == [] and index.scores("", 10) == {}
        assert index.search("coffee", 0) == [] and index.scores("coffee", 0) == {}

    def test_commits_persist_and_reach_other_instances(
        self, opener: Callable[[], FullTextIndex]
    ) -> None:
        writer, reader = opener(), opener()
        self.filled(writer, document(1, "black coffee"))
        assert reader.count() == 1  # another instance on the same store sees the commit
        reopened = opener()
        assert reopened.count() == 1
        assert list(reopened.scores("coffee", 10)) == [1]

    def test_many_documents(self, index: FullTextIndex) -> None:
        self.filled(
            index, *(document(n, f"note {n} about coffee", time=n) for n in range(1, MANY + 1))
        )
        assert index.count() == MANY
        assert len(index.scores("coffee", MANY + 10)) == MANY
        wanted = list(range(1, MANY + 1, 2))
        assert set(index.scores("coffee", MANY, within=wanted)) == set(wanted)


# --- vectors ---------------------------------------------------------------------------------
DIM = 16
ROW_ATOL = 1e-3  # float16 keeps a unit vector's components to within 2**-11


def unit_vectors(count: int, seed: int = 7) -> Any:
    import numpy as np

    vectors = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class VectorIndexContract(Contract):
    """backends.VectorIndex over DIM-dimensional unit vectors, built from the rows of the
    embedding cache it reads: the backend's test module provides `store` too, the VectorRows
    that the indexes `opener` opens are over."""

    @pytest.fixture
    def store(self) -> VectorRows:
        raise NotImplementedError("the backend's test module provides `store`")

    @pytest.fixture
    def index(self, opener: Callable[[], VectorIndex]) -> VectorIndex:
        return opener()

    @staticmethod
    def cached(store: VectorRows, vectors: Any) -> Any:
        """The cache rows of `vectors`, appended to the store."""
        import numpy as np

        first = store.append(vectors)
        return np.arange(first, first + len(vectors))

    def test_an_empty_index(self, index: VectorIndex) -> None:
        assert index.size() == 0 and index.kind() == "none"
        assert index.search(unit_vectors(1)[0], 5) == []

    def test_search_ranks_by_inner_product(self, index: VectorIndex, store: VectorRows) -> None:
        import numpy as np

        vectors = unit_vectors(60)
        iids = np.arange(1000, 1060, dtype=np.int64)  # any ids, not row numbers
        index.build(iids, self.cached(store, vectors))
        assert index.size() == 60 and index.kind() != "none"
        query = vectors[17]
        hits = index.search(query, 5)
        expected = np.argsort(-(vectors @ query))[:5]
        assert [iid for iid, _ in hits] == [int(iids[i]) for i in expected]
        assert hits[0][1] == pytest.approx(1.0, abs=1e-2)  # an index may quantise (8 bits)
        assert [score for _, score in hits] == sorted((score for _, score in hits), reverse=True)
        assert all(isinstance(iid, int) for iid, _ in hits)

    def test_only_the_memories_built_with_are_found(
        self, index: VectorIndex, store: VectorRows
    ) -> None:
        """Rows of the cache the build did not name are never returned; memories that share
        a row (the same text) are found together, with one score."""
        import numpy as np

        vectors = unit_vectors(12, 4)
        rows = self.cached(store, vectors)
        iids = np.asarray([50, 51, 52, 53, 54])
        index.build(iids, rows[[2, 7, 7, 9, 11]])
        assert index.size() == 5
        hits = index.search(vectors[7], 12)
        assert {iid for iid, _ in hits} == {50, 51, 52, 53, 54}
        assert sorted(iid for iid, _ in hits[:2]) == [51, 52] and hits[0][1] == hits[1][1]
        assert [iid for iid, _ in index.search(vectors[3], 5)] != []  # its nearest named rows

    def test_k_beyond_the_size_and_k_zero(self, index: VectorIndex, store: VectorRows) -> None:
        import numpy as np

        index.build(np.asarray([5, 6, 7]), self.cached(store, unit_vectors(3)))
        assert sorted(iid for iid, _ in index.search(unit_vectors(1, 3)[0], 10)) == [5, 6, 7]
        assert index.search(unit_vectors(1, 3)[0], 0) == []

    def test_build_replaces_the_whole_index(self, index: VectorIndex, store: VectorRows) -> None:
        import numpy as np

        index.build(np.asarray([1, 2, 3, 4]), self.cached(store, unit_vectors(4, 1)))
        index.build(np.asarray([8, 9]), self.cached(store, unit_vectors(2, 2)))
        assert index.size() == 2
        assert sorted(iid for iid, _ in index.search(unit_vectors(1)[0], 10)) == [8, 9]

    def test_an_empty_build_and_remove(self, index: VectorIndex, store: VectorRows) -> None:
        import numpy as np

        index.build(np.zeros(0, np.int64), np.zeros(0, np.int64))
        assert index.size() == 0 and index.search(unit_vectors(1)[0], 5) == []
        index.build(np.asarray([1, 2, 3]), self.cached(store, unit_vectors(3)))
        index.remove()
        assert index.size() == 0 and index.kind() == "none"
        assert index.search(unit_vectors(1)[0], 5) == []

    def test_a_build_persists(self, opener: Callable[[], VectorIndex], store: VectorRows) -> None:
        import numpy as np

        vectors = unit_vectors(20)
        opener().build(np.arange(20), self.cached(store, vectors))
        reopened = opener()
        assert reopened.size() == 20
        assert reopened.search(vectors[4], 1)[0][0] == 4


class VectorRowsContract(Contract):
    """backends.VectorRows of DIM-dimensional rows, read back as float32 (stored at least as
    precisely as float16: ROW_ATOL)."""

    @pytest.fixture
    def rows(self, opener: Callable[[], VectorRows]) -> VectorRows:
        return opener()

    def test_empty_rows(self, rows: VectorRows) -> None:
        assert rows.count() == 0
        assert rows.rows([]).shape == (0, DIM)
        with pytest.raises(IndexError):
            rows.rows([0])

    def test_append_numbers_rows_and_reads_them_back(self, rows: VectorRows) -> None:
        import numpy as np

        first, second = unit_vectors(3, 1), unit_vectors(2, 2)
        assert rows.append(first) == 0
        assert rows.append(second) == 3
        assert rows.count() == 5
        got = rows.rows([4, 0, 0])
        assert got.dtype == np.float32 and got.shape == (3, DIM)
        assert np.allclose(got, [second[1], first[0], first[0]], rtol=0, atol=ROW_ATOL)
        assert np.allclose(rows.rows(np.asarray([1, 2])), first[1:], rtol=0, atol=ROW_ATOL)
        with pytest.raises(IndexError):
            rows.rows([5])

    def test_rewrite_replaces_every_row(self, rows: VectorRows) -> None:
        import numpy as np

        rows.append(unit_vectors(4, 1))
        rows.rows([0, 1, 2, 3])  # read before: what a store keeps of them is dropped too
        kept = unit_vectors(2, 2)
        rows.rewrite(kept)
        assert rows.count() == 2 and np.allclose(rows.rows([0, 1]), kept, rtol=0, atol=ROW_ATOL)
        with pytest.raises(IndexError):
            rows.rows([2])
        rows.rewrite(np.zeros((0, DIM), np.float32))
        assert rows.count() == 0
        with pytest.raises(IndexError):
            rows.rows([0])

    def test_rows_persist(self, opener: Callable[[], VectorRows]) -> None:
        import numpy as np

        vectors = unit_vectors(3)
        opener().append(vectors)
        assert np.allclose(opener().rows([0, 1, 2]), vectors, rtol=0, atol=ROW_ATOL)


# --- the catalog -----------------------------------------------------------------------------
def hashed(name: str) -> str:
    """A content hash as the updater gives it (hex sha256), named for a test."""
    return hashlib.sha256(name.encode("utf-8")).hexdigest()


def memory_line(number: int, text: str | None = None, **fields: Any) -> dict[str, Any]:
    """A memory line as the updater hands it over (only the fields the catalog reads matter)."""
    return {
        "kind": "memory",
        "id": f"m-{number:06d}",
        "created": "2026-05-01T09:00:00Z",
        "text": text if text is not None else f"memory number {number}",
        "source": "teaching",
        "author": "user",
        **fields,
    }


def memory_lines(field: str, *values: Any) -> list[dict[str, Any]]:
    """Memory lines numbered from 1, each with `field` set to its value (left out for None)."""
    return [
        memory_line(number, **({field: value} if value is not None else {}))
        for number, value in enumerate(values, 1)
    ]


def event_line(number: int, target: str, op: str = "confirm", **fields: Any) -> dict[str, Any]:
    return {"kind": "event", "id": f"e-{number:06d}", "target": target, "op": op,
            "at": "2026-05-02T09:00:00Z", **fields}  # fmt: skip


class CatalogContract(Contract):
    """backends.Catalog."""

    @pytest.fixture
    def catalog(self, opener: Callable[[], Catalog]) -> Catalog:
        return opener()

    @staticmethod
    def add(catalog: Catalog, *lines: dict[str, Any], created: int = 0) -> list[int]:
        """Add memory lines (in one transaction); their iids."""
        with catalog.transaction():
            iids = catalog.add_memories(
                [
                    (line, created + offset, hashed(f"hash-{line['id']}"))
                    for offset, line in enumerate(lines)
                ]
            )
        assert None not in iids
        return [iid for iid in iids if iid is not None]

    def test_an_empty_catalog(self, catalog: Catalog) -> None:
        assert catalog.manifest() == {} and catalog.checkpoints() == {}
        assert catalog.counts() == {"memories": 0, "searchable": 0, "delta": 0, "events": 0}
        assert list(catalog.all_memories()) == [] and catalog.max_iid() is None
        assert catalog.searchable_iids() == [] and catalog.content_hashes() == {}
        assert catalog.memories_by_id([]) == {} and catalog.memories_by_iid([1]) == {}
        assert catalog.ids_with_keys(["k"]) == [] and catalog.keys() == []
        assert catalog.events_for(["m-000001"]) == [] and catalog.guaranteed(5) == []
        assert catalog.speakers() == [] and catalog.link_degrees() == {}
        assert catalog.delta_iids() == [] and catalog.hidden_iids() == set()
        assert catalog.rehearsal_times() == {} and catalog.rehearsal_times(["m-1"]) == {}
        assert catalog.affect_for([hashed("h")]) == {} and catalog.vector_rows([hashed("h")]) == {}
        assert catalog.max_vector_row() is None
        assert catalog.session_rows(["s"]) == {"s": []}

    def test_memories_round_trip(self, catalog: Catalog) -> None:
        lines = [memory_line(1), memory_line(2, UNICODE, key="FACT:city"), memory_line(3)]
        iids = self.add(catalog, *lines)
        assert len(set(iids)) == 3 and iids == sorted(iids)
        with catalog.transaction():
            assert catalog.add_memories([(lines[0], 0, hashed("other"))]) == [None]  # there
        found = catalog.memories_by_id([line["id"] for line in lines] + ["m-999999"])
        assert set(found) == {line["id"] for line in lines}
        memory = found["m-000002"]
        assert isinstance(memory, CatalogMemory)
        assert (memory.iid, memory.text, memory.line) == (iids[1], UNICODE, lines[1])
        assert (memory.status, memory.searchable, memory.content_hash) == (
            "durable", True, hashed("hash-m-000002"),
        )  # fmt: skip
        assert memory.annotation is None
        assert catalog.memories_by_iid([iids[1], 12345])[iids[1]].id == "m-000002"
        assert [m.iid for m in catalog.all_memories()] == iids
        assert catalog.max_iid() == iids[-1]
        assert catalog.content_hashes() == {
            iid: hashed(f"hash-{line['id']}") for iid, line in zip(iids, lines, strict=True)
        }
        assert catalog.counts() == {"memories": 3, "searchable": 3, "delta": 3, "events": 0}

    def test_a_batch_of_memories(self, catalog: Catalog) -> None:
        """One batch numbers its new memories after the largest iid, in order; one whose id
        is already there, or earlier in the batch, is not added (None in its place)."""
        first = self.add(catalog, memory_line(1, "a first one", session="s", author="user:Sam"))
        with catalog.transaction():
            added = catalog.add_memories([
                (memory_line(2, "Hi Sam", session="s", author="user:Jo"), 5, hashed("h2")),
                (memory_line(1, "again"), 0, hashed("again")),
                (memory_line(3), 7, hashed("h3")),
                (memory_line(3, "twice"), 0, hashed("twice")),
            ])  # fmt: skip
        assert added == [first[0] + 1, None, first[0] + 2, None]
        found = catalog.memories_by_id(["m-000001", "m-000002", "m-000003"])
        assert [found[i].text for i in sorted(found)] == [
            "a first one",
            "Hi Sam",
            "memory number 3",
        ]
        assert found["m-000003"].content_hash == hashed("h3")
        assert catalog.counts()["memories"] == 3 and catalog.max_iid() == first[0] + 2
        assert catalog.session_rows(["s"]) == {
            "s": [(first[0], "a first one"), (first[0] + 1, "Hi Sam")]
        }

    def test_status_and_searchability(self, catalog: Catalog) -> None:
        iids = self.add(catalog, memory_line(1), memory_line(2))
        assert catalog.memories_by_iid(iids)[iids[0]].searchable  # (read once: may be cached)
        with catalog.transaction():
            catalog.set_statuses([("m-000001", "rejected", False)])
        memory = catalog.memories_by_iid([iids[0]])[iids[0]]
        assert (memory.status, memory.searchable) == ("rejected", False)
        assert catalog.memories_by_id(["m-000001"])["m-000001"].status == "rejected"
        assert catalog.searchable_iids() == [iids[1]]
        assert catalog.counts()["searchable"] == 1

    def test_events(self, catalog: Catalog) -> None:
        self.add(catalog, memory_line(1), memory_line(2))
        lines = [
            event_line(3, "m-000002", "link", to="m-000001"),
            event_line(1, "m-000001"),
            event_line(2, "m-000002", "reject", reason=UNICODE),
        ]
        with catalog.transaction():
            assert all(catalog.add_event(line) for line in lines)
            assert not catalog.add_event(lines[0])
        assert catalog.events_for(["m-000002"]) == [lines[0], lines[2]]  # in the order added
        assert catalog.events_for(["m-000001", "m-000002"]) == lines
        assert catalog.counts()["events"] == 3

    def test_manifest_and_checkpoints(self, catalog: Catalog) -> None:
        with catalog.transaction():
            catalog.set_manifest({"version": "8", "model": "hashing"})
            catalog.set_manifest({"model": "minilm"})
            catalog.set_checkpoint(Checkpoint("a.jsonl", 10, 1, "f1"))
            catalog.set_checkpoint(Checkpoint("a.jsonl", 20, 1, "f2"))
            catalog.set_checkpoint(Checkpoint("b.jsonl", 5, 2, "f3"))
        assert catalog.manifest() == {"version": "8", "model": "minilm"}
        assert catalog.checkpoints() == {
            "a.jsonl": Checkpoint("a.jsonl", 20, 1, "f2"),
            "b.jsonl": Checkpoint("b.jsonl", 5, 2, "f3"),
        }
        with catalog.transaction():
            catalog.clear_manifest()
        assert catalog.manifest() == {}

    def test_a_failed_transaction_changes_nothing(self, catalog: Catalog) -> None:
        [iid] = self.add(catalog, memory_line(1))
        with pytest.raises(RuntimeError), catalog.transaction():
            catalog.add_memories([(memory_line(2), 0, hashed("h2"))])[0]
            catalog.set_statuses([("m-000001", "rejected", False)])
            assert not catalog.memories_by_iid([iid])[iid].searchable  # (read inside it)
            catalog.set_manifest({"version": "8"})
            catalog.add_rehearsals({"m-000001": [5.0]})
            raise RuntimeError("fail halfway")
        assert [m.id for m in catalog.all_memories()] == ["m-000001"]
        assert catalog.memories_by_id(["m-000001"])["m-000001"].searchable
        assert catalog.memories_by_iid([iid])[iid].searchable
        assert catalog.manifest() == {} and catalog.rehearsal_times() == {}

    def test_commits_persist_and_reach_other_instances(self, opener: Callable[[], Catalog]) -> None:
        writer, reader = opener(), opener()
        self.add(writer, memory_line(1, UNICODE))
        with writer.transaction():
            writer.set_manifest({"version": "8"})
            writer.add_rehearsals({"m-000001": [7.0]})
            writer.set_affect([(hashed("hash-m-000001"), "vader/1", {"valence": 0.5})])
            writer.add_vector_rows([(hashed("hash-m-000001"), 0)])
        writer.close()
        for other in (reader, opener()):
            assert other.memories_by_id(["m-000001"])["m-000001"].text == UNICODE
            assert other.manifest() == {"version": "8"}
            assert other.rehearsal_times() == {"m-000001": [7.0]}
            assert other.vector_rows([hashed("hash-m-000001")]) == {hashed("hash-m-000001"): 0}

    def test_supersede_keys(self, catalog: Catalog) -> None:
        self.add(catalog, *memory_lines("key", "FACT:coffee", "FACT:coffee", "FACT:city", None))
        assert sorted(catalog.ids_with_keys(["FACT:coffee", "nope"])) == ["m-000001", "m-000002"]
        assert catalog.ids_with_keys([]) == []
        assert sorted(catalog.keys()) == ["FACT:city", "FACT:coffee"]

    def test_session_rows_in_time_order(self, catalog: Catalog) -> None:
        with catalog.transaction():
            late = catalog.add_memories([(memory_line(1, "late", session="s1"), 30, hashed("h1"))])[
                0
            ]
            early = catalog.add_memories(
                [(memory_line(2, "early", session="s1"), 10, hashed("h2"))]
            )[0]
            tie = catalog.add_memories([(memory_line(3, "tie", session="s1"), 10, hashed("h3"))])[0]
            catalog.add_memories([(memory_line(4, "gone", session="s1"), 20, hashed("h4"))])[0]
            other = catalog.add_memories(
                [(memory_line(5, "other", session="s2"), 5, hashed("h5"))]
            )[0]
            catalog.set_statuses([("m-000004", "rejected", False)])
        assert catalog.session_rows(["s1", "s2", "s3", "s1"]) == {
            "s1": [(early, "early"), (tie, "tie"), (late, "late")],
            "s2": [(other, "other")],
            "s3": [],
        }

    def test_guaranteed_memories(self, catalog: Catalog) -> None:
        with catalog.transaction():
            first = catalog.add_memories(
                [(memory_line(1, pinned=True, importance=5), 10, hashed("h1"))]
            )[0]
            catalog.add_memories(
                [(memory_line(2, temporal="milestone", importance=9), 5, hashed("h2"))]
            )[0]
            catalog.add_memories([(memory_line(3, pinned=True, importance=5), 20, hashed("h3"))])[0]
            fourth = catalog.add_memories([(memory_line(4, importance=10), 30, hashed("h4"))])[0]
            catalog.add_memories([(memory_line(5, pinned=True, importance=10), 40, hashed("h5"))])[
                0
            ]
            catalog.set_statuses([("m-000005", "rejected", False)])
        assert [m.id for m in catalog.guaranteed(10)] == ["m-000002", "m-000003", "m-000001"]
        assert [m.id for m in catalog.guaranteed(1)] == ["m-000002"]
        with catalog.transaction():  # a distilled milestone joins; a memory can leave
            assert first is not None and fourth is not None
            catalog.set_guaranteed([(fourth, True, 10), (first, False, 5)])
        assert [m.id for m in catalog.guaranteed(10)] == ["m-000004", "m-000002", "m-000003"]

    def test_speakers(self, catalog: Catalog) -> None:
        self.add(
            catalog,
            *memory_lines("author", "user:Sam", "chat:Ana", "user", "locomo:Zoë", "chat:Sam"),
        )
        # plain `user` is the person the memdir is about (the people notes may name them)
        assert catalog.speakers() == ["Ana", "Sam", "Zoë", "user"]
        with catalog.transaction():
            catalog.set_statuses([("m-000002", "rejected", False)])
        assert catalog.speakers() == ["Sam", "Zoë", "user"]

    def test_aliases(self, catalog: Catalog) -> None:
        """A name one author keeps addressing the only other author of a session by, after a
        greeting at least once, is an alias of that speaker; rejected memories do not count."""
        greetings = ["Bo: Hey Kate!", "Bo: Thanks, Kate.", "Bo: Sounds great, Kate!"]
        self.add(
            catalog,
            *(memory_line(n + 1, text, author="chat:Bo", session="s1")
              for n, text in enumerate(greetings)),
            memory_line(4, "Emi: Hi Bo, how are you?", author="chat:Emi", session="s1"),
            # three people in s2: whom "Max" addresses is unclear
            *(memory_line(n + 5, "Hi Max!", author=author, session="s2")
              for n, author in enumerate(["chat:Bo", "chat:Bo", "chat:Bo"])),
            memory_line(8, "hello", author="chat:Emi", session="s2"),
            memory_line(9, "hello", author="chat:Cy", session="s2"),
        )  # fmt: skip
        assert catalog.aliases() == {"kate": "Emi"}
        with catalog.transaction():
            catalog.set_statuses([("m-000001", "rejected", False)])
        assert catalog.aliases() == {}

    def test_link_degrees(self, catalog: Catalog) -> None:
        self.add(
            catalog,
            memory_line(1),
            memory_line(2, links=[{"to": "m-000001", "type": "related"}]),
            memory_line(3, links=[{"to": "j-000001", "type": "summarises"}]),
        )
        with catalog.transaction():
            catalog.add_event(event_line(1, "m-000003", "link", to="m-000001"))
            catalog.add_event(event_line(2, "m-000003", "link", to="j-000002"))
        assert catalog.link_degrees() == {"m-000001": 2, "m-000002": 1, "m-000003": 1}
        assert sorted(catalog.links()) == [("m-000002", "m-000001", "related"),
                                           ("m-000003", "m-000001", "related")]  # fmt: skip

    def test_vector_base_bookkeeping(self, catalog: Catalog) -> None:
        one, two, three = self.add(catalog, memory_line(1), memory_line(2), memory_line(3))
        assert catalog.delta_iids() == [one, two, three]
        with catalog.transaction():
            catalog.set_base([one, two])
        assert catalog.delta_iids() == [three] and catalog.counts()["delta"] == 1
        with catalog.transaction():
            catalog.set_statuses([("m-000001", "forgotten", False)])
            catalog.set_statuses([("m-000003", "rejected", False)])
        assert catalog.hidden_iids() == {one} and catalog.delta_iids() == []
        with catalog.transaction():
            catalog.set_base([two])
        assert catalog.hidden_iids() == set() and catalog.counts()["delta"] == 2

    def test_rehearsal_times(self, catalog: Catalog) -> None:
        with catalog.transaction():
            catalog.add_rehearsals({"m-000001": [30.0, 10.0], "m-000002": [20.0]})
            catalog.add_rehearsals({"m-000001": [20.0]})
        assert catalog.rehearsal_times() == {"m-000001": [10.0, 20.0, 30.0], "m-000002": [20.0]}
        assert catalog.rehearsal_times(["m-000002", "m-000009"]) == {"m-000002": [20.0]}
        assert catalog.rehearsal_times([]) == {}

    def test_affect_annotations_by_content_hash(self, catalog: Catalog) -> None:
        self.add(catalog, memory_line(1), memory_line(2))
        with catalog.transaction():
            catalog.set_affect([(hashed("hash-m-000001"), "vader/1", {"valence": -0.5})])
            catalog.set_affect(
                [(hashed("hash-m-000001"), "vader/2", {"valence": 0.25, "chord": {}})]
            )
            catalog.set_affect([(hashed("unreferenced"), "vader/2", {"valence": 1.0})])
        assert catalog.affect_for([hashed("hash-m-000001"), hashed("nope")]) == {
            hashed("hash-m-000001"): ("vader/2", {"valence": 0.25, "chord": {}})
        }
        memory = catalog.memories_by_id(["m-000001"])["m-000001"]
        assert memory.annotation == ("vader/2", {"valence": 0.25, "chord": {}})
        with catalog.transaction():
            catalog.clear_affect(unreferenced_only=True)
        assert set(catalog.affect_for([hashed("hash-m-000001"), hashed("unreferenced")])) == {
            hashed("hash-m-000001")
        }
        with catalog.transaction():
            catalog.clear_affect()
        assert catalog.affect_for([hashed("hash-m-000001")]) == {}

    def test_distillations_by_content_hash(self, catalog: Catalog) -> None:
        with catalog.transaction():
            catalog.set_distilled(
                [(hashed("a"), {"type": "FACT", "annotator": "memdir-distill/1"})]
            )
            catalog.set_distilled([(hashed("a"), {"type": "RULE"}), (hashed("b"), {"type": None})])
        found = catalog.distilled_for([hashed("a"), hashed("b"), hashed("nope")])
        assert found == {hashed("a"): {"type": "RULE"}, hashed("b"): {"type": None}}
        with catalog.transaction():
            catalog.clear_distilled()
        assert catalog.distilled_for([hashed("a")]) == {}

    def test_vector_rows_by_content_hash(self, catalog: Catalog) -> None:
        with catalog.transaction():
            catalog.add_vector_rows([(hashed("a"), 0), (hashed("b"), 1)])
            catalog.add_vector_rows([(hashed("b"), 5)])
        assert catalog.vector_rows([hashed("a"), hashed("b"), hashed("c")]) == {
            hashed("a"): 0,
            hashed("b"): 5,
        }
        assert catalog.max_vector_row() == 5
        with catalog.transaction():
            catalog.clear_vector_rows()
        assert catalog.vector_rows([hashed("a")]) == {} and catalog.max_vector_row() is None

    def test_a_large_batch_upserts_as_small_ones_do(self, catalog: Catalog) -> None:
        """A batch of many rows (which a database may load another way than a few: PostgreSQL
        copies it) stores what one row at a time would: a key given twice keeps its last row,
        a key already stored takes the batch's, and any text, quotes and tabs and newlines and
        backslashes among it, comes back as it went in."""
        odd = "tab\there, a newline\nthere, a backslash \\N and a quote ' \" " + UNICODE
        lines = [memory_line(n, f"{odd} {n}", key=odd, session=odd) for n in range(1, MANY + 1)]
        iids = self.add(catalog, *lines)
        hashes = [hashed(f"hash-{n}") for n in range(MANY)]
        with catalog.transaction():
            catalog.set_affect([(hashes[0], "vader/1", {"valence": 0.5})])
            catalog.set_distilled([(hashes[0], {"type": "FACT"})])
            catalog.add_vector_rows([(hashes[0], 7)])
        with catalog.transaction():
            catalog.set_affect(
                [(digest, "vader/1", {"valence": -0.25, "note": odd}) for digest in hashes]
                + [(hashes[1], "vader/2", {"valence": 1.0})]
            )
            catalog.set_distilled([(digest, {"type": odd}) for digest in hashes]
                                  + [(hashes[1], {"type": "RULE"})])  # fmt: skip
            catalog.add_vector_rows([(digest, n) for n, digest in enumerate(hashes)]
                                    + [(hashes[1], MANY)])  # fmt: skip
            catalog.add_rehearsals({line["id"]: [1.5, 0.5] for line in lines})
        affect = catalog.affect_for(hashes)
        assert affect[hashes[0]] == ("vader/1", {"valence": -0.25, "note": odd})
        assert affect[hashes[1]] == ("vader/2", {"valence": 1.0}) and len(affect) == MANY
        distilled = catalog.distilled_for(hashes)
        assert distilled[hashes[0]] == {"type": odd} and distilled[hashes[1]] == {"type": "RULE"}
        rows = catalog.vector_rows(hashes)
        assert rows[hashes[0]] == 0 and rows[hashes[1]] == MANY and rows[hashes[2]] == 2
        memories = catalog.memories_by_iid(iids)
        assert [memories[iid].text for iid in iids] == [line["text"] for line in lines]
        assert catalog.ids_with_keys([odd]) == [line["id"] for line in lines]
        assert catalog.rehearsal_times([lines[0]["id"]]) == {lines[0]["id"]: [0.5, 1.5]}

    def test_clear_keeps_the_manifest_and_derived_caches(self, catalog: Catalog) -> None:
        self.add(catalog, memory_line(1))
        with catalog.transaction():
            catalog.add_event(event_line(1, "m-000001"))
            catalog.add_rehearsals({"m-000001": [1.0]})
            catalog.set_checkpoint(Checkpoint("a.jsonl", 1, 1, "f"))
            catalog.set_manifest({"model": "hashing"})
            catalog.set_affect([(hashed("hash-m-000001"), "vader/1", {"valence": 0.1})])
            catalog.add_vector_rows([(hashed("hash-m-000001"), 0)])
        with catalog.transaction():
            catalog.clear()
        assert catalog.counts() == {"memories": 0, "searchable": 0, "delta": 0, "events": 0}
        assert catalog.rehearsal_times() == {} and catalog.checkpoints() == {}
        assert catalog.manifest() == {"model": "hashing"}
        assert set(catalog.affect_for([hashed("hash-m-000001")])) == {hashed("hash-m-000001")}
        assert catalog.vector_rows([hashed("hash-m-000001")]) == {hashed("hash-m-000001"): 0}
        self.add(catalog, memory_line(1))  # the same memory can be catalogued again
        catalog.release_space()
        assert [m.id for m in catalog.all_memories()] == ["m-000001"]

    def test_lookups_of_many_values_at_once(self, catalog: Catalog) -> None:
        """Every lookup by a list takes any number of values (SQLite binds at most 999 per
        statement in old versions), and events keep their order across chunks."""
        lines = [memory_line(n, key=f"K{n}") for n in range(1, MANY + 1)]
        iids = self.add(catalog, *lines)
        ids = [line["id"] for line in lines]
        events = [event_line(n, ids[(n * 7) % MANY]) for n in range(MANY)]
        with catalog.transaction():
            for event in events:
                catalog.add_event(event)
            catalog.add_rehearsals({memory_id: [1.0, 2.0] for memory_id in ids})
            catalog.set_affect((hashed(f"hash-{i}"), "vader/1", {"valence": 0.0}) for i in ids)
            catalog.add_vector_rows((hashed(f"hash-{i}"), row) for row, i in enumerate(ids))
        assert len(catalog.memories_by_id([*ids, *ids, "m-missing"])) == MANY
        assert set(catalog.memories_by_iid(iids)) == set(iids)
        assert sorted(catalog.ids_with_keys(f"K{n}" for n in range(1, MANY + 1))) == ids
        assert catalog.events_for(reversed(ids)) == events
        assert len(catalog.rehearsal_times(ids)) == MANY
        assert len(catalog.affect_for(hashed(f"hash-{i}") for i in ids)) == MANY
        assert catalog.vector_rows(hashed(f"hash-{i}") for i in ids) == {
            hashed(f"hash-{i}"): row for row, i in enumerate(ids)
        }
