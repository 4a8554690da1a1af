"""The derived indexes of one memdir, kept in step with its shelves: one object for callers.

`MemoryIndex` is the index's parts (storage.py: the catalog, Tantivy, FAISS, the embedding
cache and the memory table, opened lazily) with the two things done to them: the updater
(updater.py: staleness, ingest, rebuild, compaction, merge) and the reader (reader.py: search,
vectors, affect, rehearsals, status). Commands and recall bring the index up to date before
they read it (`needs_update()` is cheap), so results never lag the shelves.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from memdir.archive_format.lock import WriterLock

from .backends import CatalogMemory
from .reader import Hit, IndexReader
from .storage import IndexStorage, check_writable
from .updater import IndexUpdater, Progress, UpdateReport

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

__all__ = ["Hit", "MemoryIndex", "Progress", "UpdateReport"]

log = logging.getLogger("memdir")


class MemoryIndex(IndexStorage):
    """Tantivy + FAISS + the catalog for one memdir, under `.memdir/index/`."""

    @cached_property
    def updater(self) -> IndexUpdater:
        return IndexUpdater(self)

    @cached_property
    def reader(self) -> IndexReader:
        return IndexReader(self, catch_up=self.update)

    # keeping up with the shelves ------------------------------------------------------------
    def lock(self) -> WriterLock:
        return self.updater.lock()

    def needs_update(self) -> bool:
        """Cheap check: has any shelf changed since the last update? (Also follows a rebuild
        made by another process.) A damaged catalog is discarded: then an update is due.
        A read-only index is never due: it answers as last built (one warning when that is
        behind the shelves)."""
        if self.read_only:
            if not self.__dict__.get("_told_behind") and self.updater.needs_update():
                self.__dict__["_told_behind"] = True
                log.warning("the memdir is read-only: answering from its index as last built, "
                            "which is behind the shelves")  # fmt: skip
            return False
        try:
            return self.updater.needs_update()
        except Exception as error:
            if not self.heal(error):
                raise
        self.__dict__.pop("updater", None)
        self.__dict__.pop("reader", None)
        return True

    def update(self, progress: Progress | None = None, rebuild: bool = False) -> UpdateReport:
        """Bring the indexes up to date with the shelves (incrementally when possible); a
        damaged cache found on the way is thrown away and rebuilt (one notice)."""
        check_writable("an index update")
        try:
            return self.updater.update(progress, rebuild)
        except Exception as error:
            if not self.heal(error):
                raise
        self.__dict__.pop("updater", None)
        self.__dict__.pop("reader", None)
        return self.updater.update(progress, rebuild=True)

    def compact_fulltext(self) -> bool:
        """Write the full text again if replaced documents linger in its BM25 statistics
        (updater.compact_fulltext; what `memdir sync` and `memdir index --compact` do)."""
        return self.updater.compact_fulltext(force=True)

    def distill(self, recompute: bool = False) -> int:
        """Bring the index up to date (which distils new memories); with `recompute`, distil
        every memory again. Returns how many were distilled by the recompute."""
        self.update()
        return self.updater.redistill() if recompute else 0

    def distilled_of(self, memories: list[CatalogMemory]) -> dict[str, dict[str, Any]]:
        """Each memory's distillation (indexers/distill.py), by id; none for those not yet
        distilled."""
        found = self.catalog_caches.distilled_for(m.content_hash for m in memories)
        return {m.id: found[m.content_hash] for m in memories if m.content_hash in found}

    def distillations(self) -> list[dict[str, Any]]:
        """Every searchable memory's distillation beside what the user gave, and the labels
        recall uses (`effective`), for `memdir distill`."""
        from .distill import effective

        memories = [m for m in self.catalog.all_memories() if m.searchable]
        distilled = self.distilled_of(memories)
        return [
            {"id": m.id, "text": m.text, "status": m.status,
             "visibility": m.line.get("visibility", "normal"), "given": {k: m.line.get(k) for k in
             ("type", "subtype", "importance", "temporal")},
             "distilled": distilled.get(m.id), "effective": effective(m.line, distilled.get(m.id))}
            for m in memories
        ]  # fmt: skip

    def reannotate(self) -> int:
        """Re-derive every annotation with the configured annotator."""
        return self.updater.reannotate()

    # reading --------------------------------------------------------------------------------
    def answer(self, ask: Callable[[], T]) -> T:
        """`ask()` over the index; when it finds a part of the cache damaged (a memory table
        pointing past the vectors), the index is discarded, rebuilt from the shelves (one
        notice) and asked once more. A read-only index cannot heal: the error stands."""
        try:
            return ask()
        except Exception as error:
            if self.read_only or not self.heal(error):
                raise
        self.__dict__.pop("updater", None)
        self.__dict__.pop("reader", None)
        self.updater.update(rebuild=True)
        return ask()

    def search(self, query: str, k: int = 10, field: str = "text") -> list[Hit]:
        """Full-text search (BM25) on `field` (text, intent, rationale, evidence or meta for
        all three) with highlighted snippets."""
        return self.answer(lambda: self.reader.search(query, k, field))

    def similar(self, query: str, k: int = 10) -> list[Hit]:
        """Vector search only: the memories closest in meaning to the query."""
        return self.answer(lambda: self.reader.similar(query, k))

    def vector_hits(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top-k (iid, cosine) over the base index and the delta, skipping unsearchable ones."""
        return self.reader.vector_hits(vector, k)

    def scoring_table(self) -> Any:
        """Every searchable memory as arrays for exact scoring (indexers/recall/relevance.py), or None
        when the archive is larger than `recall.exact_below` (then recall uses a pool)."""
        from .recall.relevance import build_table

        return self.reader.scoring_table(lambda: build_table(self))

    def vector_matrix(self, iids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of these memories as rows (zeros where a memory has none), and a mask
        of those that have one."""
        return self.reader.vector_matrix(iids)

    def vectors_for(self, memories: list[CatalogMemory]) -> dict[int, np.ndarray]:
        """Each memory's cached vector, by iid (memories without one are left out)."""
        return self.reader.vectors_for(memories)

    def affect_of(self, memory: CatalogMemory) -> dict[str, Any]:
        """A memory's affect: what the user gave wins, else the annotator's annotation."""
        return self.reader.affects_of([memory])[memory.id]

    def affects_of(self, memories: list[CatalogMemory]) -> dict[str, dict[str, Any]]:
        """Affect for several memories at once (annotations come with the catalog rows)."""
        return self.reader.affects_of(memories)

    def affects(self) -> list[dict[str, Any]]:
        """Every searchable memory's affect, for `memdir annotate`."""
        return self.reader.affects()

    def rehearsals(self, ids: Iterable[str] | None = None) -> dict[str, list[float]]:
        """memory id → sorted epoch seconds of its rehearsals, as of the last update."""
        return self.reader.rehearsals(ids)

    def status(self) -> dict[str, Any]:
        return self.reader.status(self.needs_update)
