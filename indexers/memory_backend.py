"""In-memory implementations of the index protocols (backends.py), held in plain Python objects.

They are the smallest backends that keep every promise the protocols make, and they run the
same contract suite as Tantivy, FAISS and SQLite (tests/contracts.py): proof that a new
backend needs only these methods, and a reference to read one against. "Persistent" state
lives in a store object that several instances may share, as processes share files.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import backends
from .backends import (
    META_FIELDS,
    Catalog,
    CatalogMemory,
    Checkpoint,
    Document,
    FullTextIndex,
    Iids,
    Span,
    TextHit,
    VectorIndex,
    VectorRows,
    link_degrees,
    speaker_of,
    typed_links,
)
from .names import addressed_names, aliases
from .text import WORD as _WORD

if TYPE_CHECKING:
    import numpy as np

_BM25_K1, _BM25_B = 1.2, 0.75


def _stem(word: str) -> str:
    """A crude English stemmer: enough that 'coffees' finds 'coffee'."""
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("s", "")):
        if word.endswith(suffix) and len(word) > len(suffix) + 2 and not word.endswith("ss"):
            return word[: -len(suffix)] + keep
    return word


def _terms(text: str) -> list[str]:
    return [_stem(word) for word in _WORD.findall(text.lower())]


# --- full text -------------------------------------------------------------------------------
class MemoryFullText:
    """backends.FullTextIndex over a dict of committed documents (`store`), BM25-scored."""

    def __init__(self, store: dict[str, Document] | None = None) -> None:
        self.store: dict[str, Document] = {} if store is None else store
        self._staged: list[tuple[str, Document | None]] = []

    def upsert(self, documents: Sequence[Document]) -> None:
        self._staged.extend((document["id"], copy.copy(document)) for document in documents)

    def delete(self, ids: Sequence[str]) -> None:
        self._staged.extend((memory_id, None) for memory_id in ids)

    def replace_all(self, documents: Sequence[Document]) -> None:
        self._staged.append(("", None))  # "" stands for every document
        self.upsert(documents)

    def replaced(self) -> int:
        return 0  # scored from the live documents

    def commit(self) -> None:
        for memory_id, document in self._staged:
            if not memory_id:
                self.store.clear()
            elif document is None:
                self.store.pop(memory_id, None)
            else:
                self.store[memory_id] = document
        self._staged = []

    def rollback(self) -> None:
        self._staged = []

    def count(self) -> int:
        return len(self.store)

    def _ranked(self, text: str, field: str) -> list[tuple[float, Document]]:
        wanted = set(_terms(text))
        if not wanted:
            return []
        documents = list(self.store.values())
        bodies = [_terms(_field_text(d, field)) for d in documents]
        average = sum(map(len, bodies)) / len(bodies) if bodies else 0.0
        frequency = {term: sum(term in body for body in bodies) for term in wanted}
        ranked = []
        for document, body in zip(documents, bodies, strict=True):
            score = 0.0
            for term in wanted:
                count = body.count(term)
                if count:
                    idf = math.log(
                        1 + (len(bodies) - frequency[term] + 0.5) / (frequency[term] + 0.5)
                    )
                    norm = 1 - _BM25_B + _BM25_B * len(body) / (average or 1)
                    score += idf * count * (_BM25_K1 + 1) / (count + _BM25_K1 * norm)
            if score > 0:
                ranked.append((score, document))
        ranked.sort(key=lambda pair: -pair[0])
        return ranked

    def scores(
        self, text: str, limit: int, field: str = "text", within: Iids = None, between: Span = None
    ) -> dict[int, float]:
        if not text.strip() or limit <= 0 or within == []:
            return {}
        keep = set(within) if within is not None else None
        found: dict[int, float] = {}
        for score, document in self._ranked(text, field):
            iid = int(document.get("iid", -1))
            if keep is not None and iid not in keep:
                continue
            if between is not None and not between[0] <= document["time"] < between[1]:
                continue
            found[iid] = score
            if len(found) == limit:
                break
        return found

    def search(
        self, text: str, k: int, snippets: bool = False, field: str = "text"
    ) -> list[TextHit]:
        if not text.strip() or k <= 0:
            return []
        wanted = set(_terms(text))
        hits = []
        for score, document in self._ranked(text, field)[:k]:
            snippet = ""
            if snippets:
                shown = field if field in META_FIELDS else "text"
                snippet = _WORD.sub(
                    lambda m: f"[{m.group()}]" if _stem(m.group().lower()) in wanted else m.group(),
                    _field_text(document, shown),
                )
            hits.append(TextHit(document["id"], score, snippet))
        return hits


def _field_text(document: Document, field: str) -> str:
    """What a full-text field holds for a document (backends.TEXT_FIELDS)."""
    if field == "context":
        return document.get("context") or document["text"]
    if field == "meta":
        return " ".join(str(document.get(name) or "") for name in META_FIELDS)
    if field in META_FIELDS:
        return str(document.get(field) or "")
    return document["text"]


# --- vectors ---------------------------------------------------------------------------------
@dataclass
class VectorState:
    """What a vector index or an embedding cache holds between instances."""

    vectors: Any = None  # np.ndarray, rows
    iids: Any = None  # np.ndarray, aligned with vectors (the vector index only)


class MemoryVectorIndex:
    """backends.VectorIndex: an exact inner-product search over a matrix copied from `store`."""

    def __init__(self, store: MemoryVectorRows, state: VectorState | None = None) -> None:
        self.store = store
        self.state = VectorState() if state is None else state

    def build(self, iids: np.ndarray, rows: np.ndarray) -> None:
        import numpy as np

        self.state.vectors = self.store.rows(rows)
        self.state.iids = np.array(iids, dtype=np.int64)

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        from .vectors import exact_search

        if self.state.vectors is None or k <= 0:
            return []
        return exact_search(query, self.state.vectors, self.state.iids.tolist(), k)

    def size(self) -> int:
        return 0 if self.state.vectors is None else len(self.state.vectors)

    def kind(self) -> str:
        return "none" if self.state.vectors is None else "exact"

    def remove(self) -> None:
        self.state.vectors = self.state.iids = None


class MemoryVectorRows:
    """backends.VectorRows: rows in a list."""

    def __init__(self, dim: int, state: VectorState | None = None) -> None:
        self.dim = dim
        self.state = VectorState() if state is None else state

    def _all(self) -> np.ndarray:
        import numpy as np

        return (
            np.zeros((0, self.dim), np.float32)
            if self.state.vectors is None
            else self.state.vectors
        )

    def count(self) -> int:
        return len(self._all())

    def append(self, vectors: np.ndarray) -> int:
        import numpy as np

        first = self.count()
        self.state.vectors = np.vstack([self._all(), np.asarray(vectors, dtype=np.float32)])
        return first

    def rows(self, numbers: list[int] | np.ndarray) -> np.ndarray:
        import numpy as np

        wanted = np.asarray(numbers, dtype=np.int64)
        stored = self._all()
        if len(wanted) and (wanted.max() >= len(stored) or wanted.min() < 0):
            raise IndexError(f"vector row {int(wanted.max())} beyond the last one")
        return np.array(stored[wanted], dtype=np.float32).reshape(len(wanted), self.dim)

    def rewrite(self, vectors: np.ndarray) -> None:
        import numpy as np

        self.state.vectors = np.array(vectors, dtype=np.float32).reshape(-1, self.dim)

    def current(self) -> bool:
        return True


# --- the catalog -----------------------------------------------------------------------------
@dataclass
class _Memory:
    iid: int
    id: str
    line: str
    text: str
    key: str | None
    session: str | None
    author: str
    guaranteed: bool
    importance: int
    created: int
    content_hash: str
    status: str = "durable"
    searchable: bool = True
    in_base: bool = False


@dataclass
class CatalogState:
    """Everything a MemoryCatalog holds; instances sharing one see each other's writes."""

    manifest: dict[str, str] = field(default_factory=dict)
    checkpoints: dict[str, Checkpoint] = field(default_factory=dict)
    memories: dict[int, _Memory] = field(default_factory=dict)
    iids: dict[str, int] = field(default_factory=dict)  # memory id → iid
    events: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # id → (target, op, line)
    rehearsals: list[tuple[str, float]] = field(default_factory=list)
    # hash → (annotator, packed json), hash → packed json: as the SQL catalogs store them
    affect: dict[str, tuple[str, str]] = field(default_factory=dict)
    distilled: dict[str, str] = field(default_factory=dict)
    vectors: dict[str, int] = field(default_factory=dict)


class MemoryCatalog:
    """backends.Catalog in dicts; a transaction restores a copy of the state on error."""

    def __init__(self, state: CatalogState | None = None) -> None:
        self.state = CatalogState() if state is None else state

    @contextmanager
    def _transaction(self) -> Iterator[object]:
        saved = copy.deepcopy(self.state)
        try:
            yield self
        except BaseException:
            self.state.__dict__.update(saved.__dict__)
            raise

    def transaction(self) -> AbstractContextManager[object]:
        return self._transaction()

    def close(self) -> None:
        pass

    # manifest and checkpoints
    def manifest(self) -> dict[str, str]:
        return dict(self.state.manifest)

    def set_manifest(self, values: dict[str, str]) -> None:
        self.state.manifest.update(values)

    def clear_manifest(self) -> None:
        self.state.manifest.clear()

    def checkpoints(self) -> dict[str, Checkpoint]:
        return dict(self.state.checkpoints)

    def set_checkpoint(self, checkpoint: Checkpoint) -> None:
        self.state.checkpoints[checkpoint.shelf] = checkpoint

    # memories and events
    def _view(self, memory: _Memory) -> CatalogMemory:
        annotator, value = self.state.affect.get(memory.content_hash, (None, ""))
        return CatalogMemory(
            memory.iid, memory.id, backends.packed_line(json.loads(memory.line)), memory.status,
            memory.searchable, memory.content_hash, annotator, value, memory.session,
        )  # fmt: skip

    def add_memories(self, items: Sequence[tuple[dict[str, Any], int, str]]) -> list[int | None]:
        return [self._add_memory(line, created, digest) for line, created, digest in items]

    def _add_memory(self, line: dict[str, Any], created: int, content_hash: str) -> int | None:
        if line["id"] in self.state.iids:
            return None
        iid = max(self.state.memories, default=0) + 1
        self.state.iids[line["id"]] = iid
        self.state.memories[iid] = _Memory(
            iid, line["id"], json.dumps(line, ensure_ascii=False), line["text"], line.get("key"),
            line.get("session"), str(line.get("author", "")),
            bool(line.get("pinned")) or line.get("temporal") == "milestone",
            int(line.get("importance", 5)), created, content_hash,
        )  # fmt: skip
        return iid

    def add_event(self, line: dict[str, Any]) -> bool:
        if line["id"] in self.state.events:
            return False
        self.state.events[line["id"]] = (
            line["target"], line["op"], json.dumps(line, ensure_ascii=False)
        )  # fmt: skip
        return True

    def set_statuses(self, items: Iterable[tuple[str, str, bool]]) -> None:
        for memory_id, status, searchable in items:
            if memory_id in self.state.iids:
                memory = self.state.memories[self.state.iids[memory_id]]
                memory.status, memory.searchable = status, searchable

    def set_guaranteed(self, rows: Iterable[tuple[int, bool, int]]) -> None:
        for iid, flag, importance in rows:
            if iid in self.state.memories:
                memory = self.state.memories[iid]
                memory.guaranteed, memory.importance = bool(flag), int(importance)

    def memories_by_id(self, ids: Iterable[str]) -> dict[str, CatalogMemory]:
        iids, memories = self.state.iids, self.state.memories
        return {i: self._view(memories[iids[i]]) for i in dict.fromkeys(ids) if i in iids}

    def memories_by_iid(self, iids: Iterable[int]) -> dict[int, CatalogMemory]:
        memories = self.state.memories
        return {int(i): self._view(memories[int(i)]) for i in iids if int(i) in memories}

    def all_memories(self) -> Iterator[CatalogMemory]:
        return iter([self._view(self.state.memories[i]) for i in sorted(self.state.memories)])

    def max_iid(self) -> int | None:
        return max(self.state.memories, default=None)

    def searchable_iids(self) -> list[int]:
        return sorted(i for i, m in self.state.memories.items() if m.searchable)

    def content_hashes(self) -> dict[int, str]:
        return {i: m.content_hash for i, m in self.state.memories.items()}

    def ids_with_keys(self, keys: Iterable[str]) -> list[str]:
        wanted = set(keys)
        return [m.id for m in self.state.memories.values() if m.key is not None and m.key in wanted]

    def keys(self) -> list[str]:
        return list(dict.fromkeys(m.key for m in self.state.memories.values() if m.key))

    def events_for(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        wanted = set(ids)
        return [
            json.loads(line) for target, _, line in self.state.events.values() if target in wanted
        ]

    def session_rows(self, sessions: Iterable[str]) -> dict[str, list[tuple[int, str]]]:
        found: dict[str, list[tuple[int, str]]] = {}
        for session in dict.fromkeys(sessions):
            members = sorted(
                (m.created, m.iid, m.text)
                for m in self.state.memories.values()
                if m.session == session and m.searchable
            )
            found[session] = [(iid, text) for _, iid, text in members]
        return found

    def guaranteed(self, limit: int) -> list[CatalogMemory]:
        chosen = sorted(
            (m for m in self.state.memories.values() if m.guaranteed and m.searchable),
            key=lambda m: (-m.importance, -m.created),
        )
        return [self._view(m) for m in chosen[:limit]]

    def speakers(self) -> list[str]:
        names = {speaker_of(m.author) for m in self.state.memories.values() if m.searchable}
        return sorted(name for name in names if name)

    def aliases(self) -> dict[str, str]:
        said = [m for m in self.state.memories.values() if m.searchable and m.session]
        return aliases(
            ((str(m.session), m.author, addressed_names(m.text, m.author)) for m in said),
            ((str(m.session), m.author) for m in said),
        )

    def links(self) -> list[tuple[str, str, str]]:
        return typed_links(
            ((target, json.loads(line)) for target, op, line in self.state.events.values() if op == "link"),
            ((m.id, json.loads(m.line)) for m in self.state.memories.values()),
        )  # fmt: skip

    def link_degrees(self) -> dict[str, int]:
        return link_degrees(
            ((target, json.loads(line)) for target, op, line in self.state.events.values() if op == "link"),
            ((m.id, json.loads(m.line)) for m in self.state.memories.values()),
        )  # fmt: skip

    def counts(self) -> dict[str, int]:
        memories = self.state.memories.values()
        return {
            "memories": len(memories),
            "searchable": sum(m.searchable for m in memories),
            "delta": sum(not m.in_base for m in memories),
            "events": len(self.state.events),
        }

    # the vector base
    def delta_iids(self) -> list[int]:
        return sorted(i for i, m in self.state.memories.items() if m.searchable and not m.in_base)

    def hidden_iids(self) -> set[int]:
        return {i for i, m in self.state.memories.items() if m.in_base and not m.searchable}

    def set_base(self, iids: Iterable[int]) -> None:
        chosen = {int(i) for i in iids}
        for iid, memory in self.state.memories.items():
            memory.in_base = iid in chosen

    # rehearsals
    def add_rehearsals(self, times: dict[str, list[float]]) -> None:
        self.state.rehearsals.extend((m, at) for m, moments in times.items() for at in moments)

    def rehearsal_times(self, ids: Iterable[str] | None = None) -> dict[str, list[float]]:
        wanted = None if ids is None else set(ids)
        times: dict[str, list[float]] = {}
        for memory_id, at in sorted(self.state.rehearsals, key=lambda pair: pair[1]):
            if wanted is None or memory_id in wanted:
                times.setdefault(memory_id, []).append(at)
        return times

    # derived caches
    def distilled_for(self, hashes: Iterable[str]) -> dict[str, dict[str, Any]]:
        found = self.state.distilled
        return {h: backends.unpacked_distilled(found[h]) for h in hashes if h in found}

    def set_distilled(self, items: Iterable[tuple[str, dict[str, Any]]]) -> None:
        for digest, value in items:
            self.state.distilled[digest] = backends.packed_distilled(value)

    def clear_distilled(self) -> None:
        self.state.distilled.clear()

    def affect_for(self, hashes: Iterable[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        affect = self.state.affect
        return {
            h: (affect[h][0], backends.unpacked_affect(*affect[h])) for h in hashes if h in affect
        }

    def set_affect(self, items: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
        for digest, annotator, value in items:
            self.state.affect[digest] = (annotator, backends.packed_affect(annotator, value))

    def clear_affect(self, unreferenced_only: bool = False) -> None:
        referenced = {m.content_hash for m in self.state.memories.values()}
        for digest in list(self.state.affect):
            if not unreferenced_only or digest not in referenced:
                del self.state.affect[digest]

    def vector_rows(self, hashes: Iterable[str]) -> dict[str, int]:
        return {h: self.state.vectors[h] for h in hashes if h in self.state.vectors}

    def add_vector_rows(self, items: Iterable[tuple[str, int]]) -> None:
        self.state.vectors.update(items)

    def max_vector_row(self) -> int | None:
        return max(self.state.vectors.values(), default=None)

    def clear_vector_rows(self) -> None:
        self.state.vectors.clear()

    def clear(self) -> None:
        self.state.memories.clear()
        self.state.iids.clear()
        self.state.events.clear()
        self.state.rehearsals.clear()
        self.state.checkpoints.clear()

    def release_space(self) -> None:
        pass

    def data_version(self) -> object:
        return object()  # cannot tell: a new token each time


if TYPE_CHECKING:  # mypy checks that each class implements its protocol
    _full_text: type[FullTextIndex] = MemoryFullText
    _vector_index: type[VectorIndex] = MemoryVectorIndex
    _vector_rows: type[VectorRows] = MemoryVectorRows
    _catalog: type[Catalog] = MemoryCatalog
