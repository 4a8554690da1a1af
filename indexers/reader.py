"""Reading the index: full-text and vector search, vectors and affect by memory, rehearsals,
status. Nothing here writes; the updater (updater.py) keeps the parts in step with the shelves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .backends import CatalogMemory, CatalogReader, CatalogStatus
from .embedding import embed_queries
from .storage import IndexStorage
from .vectors import exact_search

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Hit:
    """A search result."""

    id: str
    text: str
    score: float
    snippet: str = ""


class IndexReader:
    """Queries over one memdir's index parts. `catch_up` brings the index up to date; the reader
    calls it only when the vectors on disk came from another embedding model."""

    def __init__(self, storage: IndexStorage, catch_up: Callable[[], object]) -> None:
        self.storage = storage
        self.catch_up = catch_up

    # the catalog through its reading roles only: nothing here can write to it
    @property
    def catalog(self) -> CatalogReader:
        return self.storage.catalog

    @property
    def bookkeeping(self) -> CatalogStatus:
        return self.storage.bookkeeping

    def search(self, query: str, k: int = 10, field: str = "text") -> list[Hit]:
        """Full-text search (BM25) on `field` (backends.TEXT_FIELDS) with highlighted snippets."""
        hits = self.storage.fulltext.search(query, k, snippets=True, field=field)
        found = self.catalog.memories_by_id(hit.id for hit in hits)
        return [
            Hit(h.id, found[h.id].text, h.score, h.snippet)
            for h in hits
            if h.id in found and found[h.id].searchable
        ]

    def vector_hits(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top-k (iid, cosine) over the base index and the delta, skipping unsearchable ones."""
        storage = self.storage
        if self.bookkeeping.manifest().get("model") != storage.embedder.model_id:
            self.catch_up()  # built with another embedding model: its vectors are not comparable
        hidden = self.bookkeeping.hidden_iids()
        # twice as many as asked: the graph finds more of the exact top k that way, and an older
        # memdir's base (8-bit scores) misorders near-ties at the cut, which the cached vectors
        # set right (HNSW at 100k: 0.957 of the exact top 10 → 0.969)
        proposed = [iid for iid, _ in storage.base.search(vector, 2 * k + len(hidden))]
        from_base = self._exact([iid for iid in proposed if iid not in hidden], vector)
        delta = self.bookkeeping.delta_iids()
        matrix, found = self.vector_matrix(delta)
        from_delta = exact_search(
            vector, matrix[found], [i for i, f in zip(delta, found, strict=True) if f], k
        )
        merged = sorted(from_base + from_delta, key=lambda hit: -hit[1])
        return merged[:k]

    def _exact(self, iids: list[int], vector: np.ndarray) -> list[tuple[int, float]]:
        """(iid, cosine) with the cached vectors, as the delta's are scored (an older memdir's
        base scores with 8 bits)."""
        matrix, found = self.vector_matrix(iids)
        scores = matrix @ vector.reshape(-1)
        return [(iid, float(score)) for iid, score, f in zip(iids, scores, found, strict=True) if f]

    def similar(self, query: str, k: int = 10) -> list[Hit]:
        """Vector search only: the memories closest in meaning to the query."""
        from .blas import single_thread

        with single_thread():
            vector = embed_queries(self.storage.embedder, [query])[0]
        hits = self.vector_hits(vector, k)
        found = self.catalog.memories_by_iid(iid for iid, _ in hits)
        return [Hit(found[iid].id, found[iid].text, score) for iid, score in hits if iid in found]

    def scoring_table(self, build: Callable[[], Any]) -> Any:
        """Every searchable memory as arrays for exact scoring (`build` makes it), or None when
        the archive is larger than `recall.exact_below` (then recall uses a pool). Kept until
        the next update."""
        storage = self.storage
        limit = storage.memdir.settings.recall.exact_below
        if storage.cached_scoring_table is None:
            if self.bookkeeping.counts()["searchable"] > limit:
                storage.cached_scoring_table = False  # too large: remembered until the next update
            else:
                storage.cached_scoring_table = build()
        return storage.cached_scoring_table or None

    def vector_matrix(self, iids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of these memories as rows (zeros where a memory has none), and a mask
        of those that have one."""
        import numpy as np

        rows = self.storage.memory_table.get(np.asarray(iids, dtype=np.int64))["row"]
        found = rows >= 0
        matrix = np.zeros((len(rows), self.storage.embedder.dim), dtype=np.float32)
        if found.any():
            matrix[found] = self.storage.store.rows(rows[found])
        return matrix, found

    def vectors_for(self, memories: list[CatalogMemory]) -> dict[int, np.ndarray]:
        """Each memory's cached vector, by iid (memories without one are left out)."""
        iids = [memory.iid for memory in memories]
        matrix, found = self.vector_matrix(iids)
        return {iid: matrix[i] for i, iid in enumerate(iids) if found[i]}

    def affects_of(self, memories: list[CatalogMemory]) -> dict[str, dict[str, Any]]:
        """Each memory's affect: what the user gave wins, else the annotator's annotation
        (annotations come with the catalog rows)."""
        found: dict[str, dict[str, Any]] = {}
        for memory in memories:
            given = memory.line.get("affect") or {}
            annotation = memory.annotation
            value: dict[str, Any] = dict(annotation[1]) if annotation else {}
            value.update({k: given[k] for k in ("valence", "arousal", "chord") if k in given})
            if given:
                value["annotator"] = given.get("annotator", "user")
            found[memory.id] = value
        return found

    def affects(self) -> list[dict[str, Any]]:
        """Every searchable memory's affect, for `memdir annotate`."""
        rows = []
        for memory in self.catalog.all_memories():
            if memory.searchable:
                affect = self.affects_of([memory])[memory.id]
                rows.append(
                    {
                        "id": memory.id,
                        "text": memory.text,
                        "status": memory.status,
                        "visibility": memory.line.get("visibility", "normal"),
                        "valence": affect.get("valence", 0.0),
                        "arousal": affect.get("arousal", 0.0),
                        "chord": affect.get("chord", {}),
                        "annotator": affect.get("annotator", "none"),
                    }
                )
        return rows

    def rehearsals(self, ids: Iterable[str] | None = None) -> dict[str, list[float]]:
        """memory id → sorted epoch seconds of its rehearsals (recall lines that returned it,
        its confirm event), as of the last update; every memory's when `ids` is None."""
        return self.catalog.rehearsal_times(ids)

    def status(self, needs_update: Callable[[], bool]) -> dict[str, Any]:
        """What `memdir index --status` shows (`needs_update` asked only if the model matches)."""
        storage = self.storage
        counts = self.bookkeeping.counts()
        manifest = self.bookkeeping.manifest()
        return {
            "version": manifest.get("version"),
            "model": manifest.get("model"),
            "embedder": storage.embedder.kind,
            "embedder_warning": storage.embedder_warning,
            "annotator": manifest.get("annotator"),
            "memories": counts["memories"],
            "searchable": counts["searchable"],
            "events": counts["events"],
            "fulltext_documents": storage.fulltext.count(),
            # replaced documents BM25 still counts (compacted away: docs/FORMAT.md "Sync")
            "fulltext_replaced": storage.fulltext.replaced() + storage.sessions.replaced(),
            "vector_base": {"kind": storage.base.kind(), "size": storage.base.size()},
            "vector_delta": counts["delta"],
            "up_to_date": manifest.get("model") == storage.embedder.model_id and not needs_update(),
            "bytes": storage.size_bytes(),
        }
