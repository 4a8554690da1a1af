"""The narrow interfaces behind the index: full text, vectors and the catalog.

memdir's index is three kinds of store, each behind a Protocol here: a full-text index over
memory documents (Tantivy, fulltext.py), a vector index plus the embedding cache it is built
from (FAISS and a flat file, vectors.py), and the catalog that mirrors the shelves (SQLite or
PostgreSQL, catalog.py), split into the roles its users play (CatalogReader: what recall looks up, CatalogStatus: the
bookkeeping readers and staleness checks read, CatalogWriter: what the updater writes,
CatalogCaches: what is derived by content hash). The updater
and the reader use them only through these methods, so another
backend (an in-memory one in tests, a server engine later) is a new module, not a rewrite.
tests/contracts.py holds the behaviour each method promises, and every backend runs it.

Memories are numbered twice: their memory id (m-…) and an integer *iid* the catalog hands
out, which the full-text and vector indexes store so that their hits need no look-up.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from .affect import PLUTCHIK

if TYPE_CHECKING:
    import numpy as np


# --- full text -------------------------------------------------------------------------------
class Document(TypedDict, total=False):
    """A memory as the full-text index holds it (`id`, `text` and `time` are required)."""

    id: str
    iid: int  # the catalog's iid (a session document's: its name_code)
    text: str
    context: str  # the text with its same-session neighbours; defaults to `text`
    # the texts `context` joins with spaces (it and its neighbours'), before its attachments'
    # text after a newline: a backend may parse each once (postgres/fulltext.py's pieces)
    context_parts: list[str]
    type: str | None
    source: str
    status: str
    persona: list[str]
    session: str | None
    time: int  # epoch seconds
    intent: str  # the meta-memory fields, each searchable on its own (META_FIELDS)
    rationale: str
    evidence: str


# The meta-memory fields with a full-text field each; the field name "meta" searches all three.
META_FIELDS = ("intent", "rationale", "evidence")
TEXT_FIELDS = ("text", "context", *META_FIELDS, "meta")


# The filters of a score query: `within` keeps these iids, `between` the times in [start, end)
# (epoch seconds); None keeps all.
Iids = list[int] | None
Span = tuple[int, int] | None


@dataclass(frozen=True)
class TextHit:
    """A full-text search result: the document's id, its BM25 score, a highlighted snippet."""

    id: str
    score: float
    snippet: str


class FullTextIndex(Protocol):
    """Documents keyed by id, searched with BM25 over English-stemmed words.

    Writes are staged until `commit()` (one per update) and dropped by `rollback()`; readers,
    including other instances opened on the same store, see only committed documents.
    """

    def upsert(self, documents: Sequence[Document]) -> None:
        """Add documents, replacing any with the same id."""

    def delete(self, ids: Sequence[str]) -> None:
        """Remove documents by id (unknown ids are ignored)."""

    def replace_all(self, documents: Sequence[Document]) -> None:
        """Replace every document with `documents` (staged like upsert)."""

    def replaced(self) -> int:
        """Deleted or replaced documents that the committed BM25 statistics still count (0
        where the statistics are always those of the live documents); `replace_all` then
        `commit` brings it to 0, so the scores depend on the documents alone."""

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def count(self) -> int:
        """Documents in the last commit, including one made through another instance."""

    def scores(
        self, text: str, limit: int, field: str = "text", within: Iids = None, between: Span = None
    ) -> dict[int, float]:
        """BM25 scores of the best `limit` documents for a query on `field` (one of
        TEXT_FIELDS: "text", "context", a meta-memory field or "meta" for all three), best
        first, by iid; `within` keeps those iids, `between` times in
        [start, end). An empty query, limit 0 or `within=[]` gives {}."""

    def search(
        self, text: str, k: int, snippets: bool = False, field: str = "text"
    ) -> list[TextHit]:
        """The best `k` documents for a free-text query on `field` (as in `scores`), best
        first; with `snippets`, a piece of the field with the matched words in [brackets]."""


# --- vectors ---------------------------------------------------------------------------------
class VectorIndex(Protocol):
    """The vectors of memories by iid, searched by inner product (cosine, as they are unit
    vectors); written whole by `build` from the embedding cache (VectorRows) it was opened
    over. It may score approximately: it proposes, the cache scores."""

    def build(self, iids: np.ndarray, rows: np.ndarray) -> None:
        """Replace the index with exactly these memories, whose vectors are the cache's rows
        `rows` (aligned with `iids`; memories may share a row)."""

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Up to `k` (iid, inner product) pairs, highest first."""

    def size(self) -> int: ...

    def kind(self) -> str:
        """What kind of index answers ("flat", "hnsw", …; "none" before the first build)."""

    def remove(self) -> None: ...


class VectorRows(Protocol):
    """The embedding cache of one model: rows appended and read by row number, read back as
    float32 (kept at least as precisely as float16)."""

    def count(self) -> int: ...

    def append(self, vectors: np.ndarray) -> int:
        """Store rows after the last one; returns the first new row number."""

    def rows(self, numbers: list[int] | np.ndarray) -> np.ndarray:
        """These rows, in the order asked (IndexError for a row that does not exist)."""

    def rewrite(self, vectors: np.ndarray) -> None:
        """Replace every row (compaction after a rebuild)."""

    def current(self) -> bool:
        """Whether the rows are stored as this version writes them: a compaction that would
        keep every row where it is may then leave them alone."""


# --- the catalog -----------------------------------------------------------------------------
def speaker_of(author: str) -> str | None:
    """The person behind an author: 'user:Sam' → Sam, 'locomo:Caroline' → Caroline, plain
    'user' → user (the person the memdir is about; the people notes may give them names:
    `memdir people add Sam --alias user`).

    Plain 'assistant' or 'memdir' name no one in particular.
    """
    if author == "user":
        return "user"
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

    The shelf line (its text among it) and the affect annotation are parsed on first use:
    recall reads them for its shortlist only (it scores the wider pool from the memory table).
    """

    iid: int
    id: str
    stored_line: str  # the line, packed (packed_line)
    status: str
    searchable: bool
    content_hash: str  # hex sha256 of the text
    annotator: str | None = None  # who annotated its affect, None when nobody has
    stored_affect: str = ""  # that annotation, packed (packed_affect)
    session: str | None = None  # the line's session (the catalog's column)

    @cached_property
    def line(self) -> dict[str, Any]:
        return unpacked_line(self.stored_line, self.id, self.session)

    @cached_property
    def text(self) -> str:
        return str(self.line["text"])

    @cached_property
    def annotation(self) -> tuple[str, dict[str, Any]] | None:
        """(annotator, affect) of the derived annotation, when there is one."""
        if self.annotator is None:
            return None
        return self.annotator, unpacked_affect(self.annotator, self.stored_affect)


# Lines and derived values are stored as compact JSON without the keys that hold what they
# almost always hold: a memory line's id and session (the catalog's columns) and its usual
# kind, source, author, store, importance, temporal class and visibility; an affect's copy of
# its annotator's name and an all-zero chord; a distillation's nulls.
# A stored value names under ABSENT the keys of those its value did not have (and a value with
# a key of that name is stored whole, in a list), so unpacking gives back the value that was
# packed (up to key order), whatever it held.
ABSENT = "-"
ZERO_CHORD = dict.fromkeys(PLUTCHIK, 0.0)
DISTILLED_NULLS = ("type", "subtype")


def packed(value: Mapping[str, Any], defaults: Mapping[str, Any]) -> str:
    if ABSENT in value:
        return json.dumps([value], ensure_ascii=False, separators=(",", ":"))
    kept = {k: v for k, v in value.items() if k not in defaults or v != defaults[k]}
    absent = [k for k in defaults if k not in value]
    if absent:
        kept[ABSENT] = absent
    return json.dumps(kept, ensure_ascii=False, separators=(",", ":"))


def unpacked(stored: str, defaults: Mapping[str, Any]) -> dict[str, Any]:
    value = json.loads(stored)
    if isinstance(value, list):
        whole: dict[str, Any] = value[0]
        return whole
    absent = value.pop(ABSENT, ())
    value.update({k: v for k, v in defaults.items() if k not in absent and k not in value})
    return value


LINE_DEFAULTS = {"kind": "memory", "source": "teaching", "author": "user", "store": "semantic",
                 "importance": 5, "temporal": "persistent", "visibility": "normal"}  # fmt: skip


def _line_defaults(memory_id: str, session: str | None) -> dict[str, Any]:
    found: dict[str, Any] = {"id": memory_id, **LINE_DEFAULTS}
    if session is not None:
        found["session"] = session
    return found


def packed_line(line: Mapping[str, Any]) -> str:
    """A memory line as the catalog stores it beside its id and session columns."""
    return packed(line, _line_defaults(line["id"], line.get("session")))


def unpacked_line(stored: str, memory_id: str, session: str | None) -> dict[str, Any]:
    return unpacked(stored, _line_defaults(memory_id, session))


def _affect_defaults(annotator: str) -> dict[str, Any]:
    return {"annotator": annotator, "chord": dict(ZERO_CHORD)}


def packed_affect(annotator: str, value: Mapping[str, Any]) -> str:
    """An affect annotation (affect.Affect.to_dict) as the catalog stores it."""
    return packed(value, _affect_defaults(annotator))


def unpacked_affect(annotator: str, stored: str) -> dict[str, Any]:
    return unpacked(stored, _affect_defaults(annotator))


def packed_distilled(value: Mapping[str, Any]) -> str:
    """A distillation (distill.Distillation.to_dict) as the catalog stores it."""
    return packed(value, dict.fromkeys(DISTILLED_NULLS))


def unpacked_distilled(stored: str) -> dict[str, Any]:
    return unpacked(stored, dict.fromkeys(DISTILLED_NULLS))


def typed_links(
    link_events: Iterable[tuple[str, dict[str, Any]]],
    written: Iterable[tuple[str, dict[str, Any]]],
) -> list[tuple[str, str, str]]:
    """Every link between two memories as (from, to, type), from link events (target, event
    line) and links written into memory lines (memory id, memory line); links to journal
    turns are left out."""
    found = [(target, str(line.get("to") or ""), str(line.get("link_type") or "related"))
             for target, line in link_events]  # fmt: skip
    for memory_id, line in written:
        found.extend((memory_id, str(link.get("to") or ""), str(link.get("type") or "related"))
                     for link in line.get("links", ()))  # fmt: skip
    return [link for link in found if link[0].startswith("m-") and link[1].startswith("m-")]


def link_degrees(
    link_events: Iterable[tuple[str, dict[str, Any]]],
    written: Iterable[tuple[str, dict[str, Any]]],
) -> dict[str, int]:
    """How many links between memories touch each memory id, from link events (target, event
    line) and links written into memory lines (memory id, memory line). Links to journal turns
    (a dream summary's backlinks) do not count: they would make every summary look well
    connected."""
    pairs = [(target, str(line.get("to") or "")) for target, line in link_events]
    for memory_id, line in written:
        pairs.extend((memory_id, str(link["to"])) for link in line.get("links", ()))
    degrees: dict[str, int] = {}
    for one, other in pairs:
        if one.startswith("m-") and other.startswith("m-"):
            degrees[one] = degrees.get(one, 0) + 1
            degrees[other] = degrees.get(other, 0) + 1
    return degrees


Links = list[tuple[str, str, str]]
_neighbours_kept: tuple[Links, dict[str, list[tuple[str, str]]]] | None = None


def neighbours(links: Links) -> dict[str, list[tuple[str, str]]]:
    """Memory id → (the other end, link type) for each of `links` (`CatalogReader.links`)
    touching it, either direction, in the links' order. A catalog hands out the same list until
    its next write, so the map of the last list asked for is kept (read-only, shared by
    threads): at a million memories after a sleep, making it on every recall (activation and
    decay each) took two thirds of a warm recall (BENCHMARKS.md, "At a million memories")."""
    global _neighbours_kept
    kept = _neighbours_kept
    if kept is not None and kept[0] is links:
        return kept[1]
    found: dict[str, list[tuple[str, str]]] = {}
    for one, other, kind in links:
        found.setdefault(one, []).append((other, kind))
        found.setdefault(other, []).append((one, kind))
    _neighbours_kept = (links, found)
    return found


# The catalog is the shelves mirrored line by line, with the index's bookkeeping and derived
# caches: each memory's line, text and current status, each event's line, the rehearsal times
# decay reads, the shelf checkpoints, the index manifest, the affect annotations,
# distillations and the embedding cache's row numbers (by content hash). Every query memdir
# makes of it is a method of one of four roles, and each user names the roles it needs: recall
# a CatalogReader, the index reader that and CatalogStatus (so it cannot write), the updater
# all four. Writes go inside `transaction()`.
class CatalogReader(Protocol):
    """What recall and the other readers look up: memories, their events, links and
    rehearsals, and the sets recall's channels start from."""

    def memories_by_id(self, ids: Iterable[str]) -> dict[str, CatalogMemory]: ...

    def memories_by_iid(self, iids: Iterable[int]) -> dict[int, CatalogMemory]: ...

    def all_memories(self) -> Iterator[CatalogMemory]:
        """Every memory, by iid."""

    def searchable_iids(self) -> list[int]:
        """The iids of searchable memories, ascending."""

    def ids_with_keys(self, keys: Iterable[str]) -> list[str]:
        """Ids of the memories that carry any of these supersede keys."""

    def keys(self) -> list[str]:
        """Every supersede key in use."""

    def events_for(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        """The event lines that target these memories, in the order they were added."""

    def session_rows(self, sessions: Iterable[str]) -> dict[str, list[tuple[int, str]]]:
        """Each session's searchable memories as (iid, text), by creation time then iid."""

    def guaranteed(self, limit: int) -> list[CatalogMemory]:
        """Searchable pinned and milestone memories, most important and newest first."""

    def speakers(self) -> list[str]:
        """Sorted names of the people who said searchable memories (see speaker_of)."""

    def aliases(self) -> dict[str, str]:
        """{name, case-folded: speaker} for the names speakers are addressed by in the sessions
        of searchable memories (names.aliases over names.addressed_names of each)."""

    def link_degrees(self) -> dict[str, int]:
        """See the module function link_degrees."""

    def links(self) -> list[tuple[str, str, str]]:
        """See the module function typed_links (recall's spreading activation)."""

    def rehearsal_times(self, ids: Iterable[str] | None = None) -> dict[str, list[float]]:
        """memory id → sorted epoch seconds of its rehearsals; every memory's when `ids` is
        None (memories without rehearsals are left out)."""


class CatalogStatus(Protocol):
    """The index's bookkeeping as its readers and staleness checks see it (index status,
    doctor, sync): the manifest, the shelf checkpoints, the counts, the vector base."""

    def close(self) -> None: ...

    def data_version(self) -> object:
        """A token that changes when another connection has written to the catalog (a
        backend that cannot tell gives a new one each time): storage.resident_index."""

    def manifest(self) -> dict[str, str]: ...

    def checkpoints(self) -> dict[str, Checkpoint]: ...

    def counts(self) -> dict[str, int]:
        """memories, searchable, delta (memories not in the vector base) and events."""

    def delta_iids(self) -> list[int]:
        """Searchable memories whose vectors are not in the vector base."""

    def hidden_iids(self) -> set[int]:
        """Memories in the vector base that are no longer searchable."""

    def max_iid(self) -> int | None: ...

    def content_hashes(self) -> dict[int, str]:
        """Every memory's content hash, by iid."""


class CatalogWriter(Protocol):
    """What the index updater writes as it reads the shelves, and how it starts over."""

    def transaction(self) -> AbstractContextManager[object]:
        """`with catalog.transaction():` commits on success and rolls back on error."""

    def add_memories(self, items: Sequence[tuple[dict[str, Any], int, str]]) -> list[int | None]:
        """Insert memory lines, each as (line, created in epoch seconds, content hash), with
        status durable, searchable and not in the vector base; returns their iids in order,
        None for one whose id is already there (or earlier in `items`)."""

    def add_event(self, line: dict[str, Any]) -> bool:
        """Insert an event line; False when an event with that id is already there."""

    def set_statuses(self, items: Iterable[tuple[str, str, bool]]) -> None:
        """(memory id, status, searchable) for each."""

    def set_guaranteed(self, rows: Iterable[tuple[int, bool, int]]) -> None:
        """(iid, guaranteed, importance) for each: whether the memory is in `guaranteed` and
        the importance it is ordered by there (a distilled milestone's, say)."""

    def add_rehearsals(self, times: dict[str, list[float]]) -> None:
        """Recall lines' and confirm events' times: decay's input (rehearsal_times)."""

    def set_base(self, iids: Iterable[int]) -> None:
        """Exactly these memories now have their vector in the vector base."""

    def set_manifest(self, values: dict[str, str]) -> None: ...

    def clear_manifest(self) -> None: ...

    def set_checkpoint(self, checkpoint: Checkpoint) -> None: ...

    def clear(self) -> None:
        """Drop what mirrors the shelves (memories, events, rehearsals, checkpoints); keep the
        manifest and the derived caches."""

    def release_space(self) -> None:
        """Give deleted rows' pages back to the filesystem (a forgotten memory's text)."""


class CatalogCaches(Protocol):
    """What is derived from a memory's text, by content hash, and kept through a rebuild."""

    def affect_for(self, hashes: Iterable[str]) -> dict[str, tuple[str, dict[str, Any]]]: ...

    def set_affect(self, items: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
        """(content hash, annotator, affect) annotations, replacing earlier ones."""

    def clear_affect(self, unreferenced_only: bool = False) -> None:
        """Drop the annotations (only those no memory's content hash refers to)."""

    def distilled_for(self, hashes: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The distillations (indexers/distill.py) of these content hashes."""

    def set_distilled(self, items: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """(content hash, distillation) pairs, replacing earlier ones."""

    def clear_distilled(self) -> None:
        """Drop every distillation (`memdir distill --recompute`)."""

    def vector_rows(self, hashes: Iterable[str]) -> dict[str, int]:
        """The embedding cache's row of each content hash it holds."""

    def add_vector_rows(self, items: Iterable[tuple[str, int]]) -> None: ...

    def max_vector_row(self) -> int | None: ...

    def clear_vector_rows(self) -> None: ...


class Catalog(CatalogReader, CatalogStatus, CatalogWriter, CatalogCaches, Protocol):
    """A whole catalog: every role, as a backend implements it and the index storage holds
    it. It adds no method; code that uses a catalog names the role it needs."""
