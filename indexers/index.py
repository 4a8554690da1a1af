"""The derived indexes of one memdir, kept in step with its shelves.

`MemoryIndex.update()` reads only what was appended since the last checkpoint of each shelf,
adds new memories to Tantivy and the vector delta, applies lifecycle events, and commits. A
shelf that was rewritten (forget's compaction, a git checkout or merge), a new manifest
version or a different embedding model triggers a full rebuild, which re-embeds nothing it has
embedded before (vectors are cached by content hash). Searches bring the index up to date
first, so results never lag the shelves.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.archive_format import shelf as shelf_io
from memdir.archive_format.clock import parse_time
from memdir.archive_format.decay import rehearsal_times
from memdir.archive_format.errors import LockedError
from memdir.archive_format.fold import ArchiveView, fold
from memdir.archive_format.lock import WriterLock
from memdir.archive_format.memdir import Memdir

from .catalog import Catalog, CatalogMemory, Checkpoint, speaker_of
from .decay import parseable
from .fulltext import FullText
from .memorytable import CONTEXT, MemoryTable, name_code
from .vectors import BaseIndex, VectorStore, exact_search, safe_name

if TYPE_CHECKING:
    import numpy as np

    from .affect import Annotator
    from .embedding import Embedder

INDEX_VERSION = "8"
FINGERPRINT_WINDOW = 1 << 16
NOT_SEARCHABLE = frozenset({"rejected", "superseded", "forgotten"})
EMBED_BATCH = 512

log = logging.getLogger("memdir")

Progress = Callable[[str, int, int], None]


@dataclass
class UpdateReport:
    """What an update did."""

    rebuilt: bool = False
    reason: str = ""
    memories: int = 0
    events: int = 0
    embedded: int = 0
    merged: bool = False
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Hit:
    """A search result."""

    id: str
    text: str
    score: float
    snippet: str = ""


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def past_blank_lines(path: Path, end: int) -> int:
    """`end`, moved over trailing blank lines (which the reader skips): otherwise the checkpoint
    never reaches the end of the shelf and every command would run an update."""
    with open(path, "rb") as handle:
        handle.seek(end)
        tail = handle.read(1 << 16)
    return end + len(tail) if tail.endswith(b"\n") and not tail.strip() else end


def fingerprint(path: Path, length: int) -> str:
    """A cheap fingerprint of a shelf's first `length` bytes: its head and tail windows.

    Rewrites that change the inode (atomic renames, git checkouts) or the bytes near either end
    of the indexed prefix are detected without reading the whole shelf.
    """
    digest = hashlib.sha256(str(length).encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(min(length, FINGERPRINT_WINDOW)))
        if length > FINGERPRINT_WINDOW:
            handle.seek(max(FINGERPRINT_WINDOW, length - FINGERPRINT_WINDOW))
            digest.update(
                handle.read(length - max(FINGERPRINT_WINDOW, length - FINGERPRINT_WINDOW))
            )
    return digest.hexdigest()


def _epoch(text: str) -> int:
    return int(parse_time(text).timestamp())


_FAR_FUTURE = datetime(9999, 1, 1, tzinfo=timezone.utc)


class MemoryIndex:
    """Tantivy + FAISS + the catalog for one memdir, under `.memdir/index/`."""

    def __init__(
        self,
        memdir: Memdir,
        embedder: Embedder | None = None,
        annotator: Annotator | None = None,
    ) -> None:
        self.memdir = memdir
        self.root = memdir.cache_dir / "index"
        self.root.mkdir(parents=True, exist_ok=True)
        self.catalog = Catalog(self.root / "catalog.sqlite")
        self._embedder = embedder
        self._annotator = annotator
        self.embedder_warning: str | None = None
        self.vector_settings = memdir.settings.vectors
        self._fulltext: FullText | None = None
        self._sessions: FullText | None = None
        self._scoring_table: Any = None
        self._generation: int | None = None
        self._base: BaseIndex | None = None
        self._store: VectorStore | None = None
        self._memory_table: MemoryTable | None = None

    # components, loaded lazily --------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from .embedding import load_embedder

            config = self.memdir.settings.embedder
            self._embedder, self.embedder_warning = load_embedder(config.path, config.kind)
            if self.embedder_warning:
                log.warning(self.embedder_warning.removeprefix("memdir: "))
        return self._embedder

    @property
    def annotator(self) -> Annotator:
        if self._annotator is None:
            from .affect import load_annotator

            self._annotator = load_annotator(self.memdir.settings.affect.annotator)
        return self._annotator

    @property
    def fulltext(self) -> FullText:
        if self._fulltext is None:
            self._fulltext = FullText(self.root / f"tantivy-{self.generation}")
        return self._fulltext

    @property
    def sessions(self) -> FullText:
        """One document per session (its memories joined): recall's session prior."""
        if self._sessions is None:
            self._sessions = FullText(self.root / f"sessions-{self.generation}")
        return self._sessions

    @property
    def store(self) -> VectorStore:
        """The embedding cache: the model's vectors, one row per distinct text."""
        if self._store is None:
            self._store = VectorStore(
                self.root / "vectors" / f"{safe_name(self.embedder.model_id)}.f32",
                self.embedder.dim,
            )
        return self._store

    @property
    def memory_table(self) -> MemoryTable:
        """What recall needs of each memory at scale, by iid (indexers/memorytable.py); one file
        per generation, like the Tantivy directories, since a rebuild renumbers the memories."""
        if self._memory_table is None:
            self._memory_table = MemoryTable(self.root / f"memories-{self.generation}.table")
        return self._memory_table

    @property
    def base(self) -> BaseIndex:
        if self._base is None:
            self._base = BaseIndex(
                self.root / "faiss" / "base.index", self.embedder.dim, self.vector_settings
            )
        return self._base

    def lock(self) -> WriterLock:
        """Only one process updates the index at a time; others wait (then fail clearly)."""
        return _IndexLock(
            self.memdir.cache_dir / "index.lock",
            timeout=float(os.environ.get("MEMDIR_INDEX_TIMEOUT", 120)),
        )

    def close(self) -> None:
        self.catalog.close()

    # keeping up with the shelves ------------------------------------------------------------
    @property
    def generation(self) -> int:
        """Which Tantivy directories are current. A rebuild writes the next generation beside
        the old one and switches in one catalog commit, so readers never see it half-built."""
        if self._generation is None:
            self._generation = int(self.catalog.manifest().get("generation", "0"))
        return self._generation

    def _expected_manifest(self) -> dict[str, str]:
        return {
            "version": INDEX_VERSION,
            "generation": str(self.generation),
            "model": self.embedder.model_id,
            "dim": str(self.embedder.dim),
            "annotator": f"{self.annotator.name}/{self.annotator.version}",
        }

    def _stale_reason(self) -> str | None:
        """Why a full rebuild is needed, or None when appending is enough."""
        manifest = self.catalog.manifest()
        if not manifest:
            return "no index yet"
        if manifest.get("version") != INDEX_VERSION:
            return f"index version {manifest.get('version')} → {INDEX_VERSION}"
        checkpoints = self.catalog.checkpoints()
        present = {path.name for path in self.memdir.shelves()}
        for name, checkpoint in checkpoints.items():
            path = self.memdir.shelves_dir / name
            if name not in present:
                return f"shelf {name} disappeared"
            stat = path.stat()
            if stat.st_ino != checkpoint.inode or stat.st_size < checkpoint.offset:
                return f"shelf {name} was rewritten"
            if fingerprint(path, checkpoint.offset) != checkpoint.fingerprint:
                return f"shelf {name} was rewritten"
        if manifest.get("model") != self.embedder.model_id:
            return f"embedding model changed ({manifest.get('model')} → {self.embedder.model_id})"
        if manifest.get("annotator") != self._expected_manifest()["annotator"]:
            return "affect annotator changed"
        if self._vector_cache_lost():
            return "vector cache missing"
        missing = self._files_missing()
        if missing:
            return missing
        if self.fulltext.count() != self.catalog.counts()["searchable"]:
            return "full-text index out of step with the catalog"
        return None

    def _files_missing(self) -> str | None:
        """Cheap check (no model load) for index files deleted from under the catalog."""
        if not (self.root / f"tantivy-{self.generation}" / "meta.json").is_file():
            return "full-text index missing"
        if not (self.root / "faiss" / "base.index").is_file():
            return "vector index missing"
        if not self.memory_table.exists():
            return "memory table missing"
        last = self.catalog.db.execute("SELECT MAX(iid) FROM memories").fetchone()[0]
        if last is not None and len(self.memory_table) <= last:
            return "memory table shorter than the catalog"
        return None

    def _vector_cache_lost(self) -> bool:
        """True when the catalog points at vector rows the model's store no longer holds."""
        last = self.catalog.db.execute("SELECT MAX(row) FROM vectors").fetchone()[0]
        return last is not None and last >= self.store.count()

    def follow_rebuilds(self) -> None:
        """If another process rebuilt the index (a new generation), reopen its files: the old
        generation's memory table numbers memories differently. One catalog read."""
        current = self.catalog.manifest().get("generation")
        if (
            self._generation is not None
            and current is not None
            and int(current) != self._generation
        ):
            self._fulltext = self._sessions = self._base = self._memory_table = None
            self._generation = None
            self._scoring_table = None

    def needs_update(self) -> bool:
        """Cheap check: has any shelf changed since the last update?

        Also notices a rebuild made by another process (a new generation) and reopens.
        """
        self.follow_rebuilds()
        checkpoints = self.catalog.checkpoints()
        if self.catalog.manifest().get("version") != INDEX_VERSION:
            return True  # no index yet, or one written by another memdir version
        shelves = self.memdir.shelves()
        if {path.name for path in shelves} != set(checkpoints):
            return any(path.stat().st_size for path in shelves) or bool(checkpoints)
        for path in shelves:
            stat = path.stat()
            checkpoint = checkpoints[path.name]
            if stat.st_ino != checkpoint.inode or stat.st_size != checkpoint.offset:
                return True
            if fingerprint(path, checkpoint.offset) != checkpoint.fingerprint:
                return True
        return self._files_missing() is not None

    def update(self, progress: Progress | None = None, rebuild: bool = False) -> UpdateReport:
        """Bring the indexes up to date with the shelves (incrementally when possible)."""
        with self.lock():
            reason = "asked to rebuild" if rebuild else self._stale_reason()
            if reason:
                return self._rebuild(reason, progress)
            report = self._apply_appended(progress)
            self._maybe_merge(report)
            return report

    def _reset_catalog(self) -> None:
        """Empty the catalog for a rebuild, keeping the caches that still apply."""
        manifest = self.catalog.manifest()
        self.catalog.clear()
        if manifest.get("model") not in (None, self.embedder.model_id) or self._vector_cache_lost():
            self.catalog.db.execute("DELETE FROM vectors")
        if manifest.get("annotator") != self._expected_manifest()["annotator"]:
            self.catalog.db.execute("DELETE FROM affect")
        self.catalog.db.execute("DELETE FROM manifest")

    def _apply_appended(self, progress: Progress | None, reset: bool = False) -> UpdateReport:
        report = UpdateReport()
        checkpoints = {} if reset else self.catalog.checkpoints()
        new_memories: list[dict[str, Any]] = []
        new_events: list[dict[str, Any]] = []
        recalls: list[dict[str, Any]] = []
        tombstoned: list[str] = []
        positions: list[Checkpoint] = []
        for path in self.memdir.shelves():
            start = checkpoints[path.name].offset if path.name in checkpoints else 0
            end = start
            for item in shelf_io.read(path, start):
                kind = item.data.get("kind")
                if kind == "memory":
                    new_memories.append(item.data)
                elif kind == "event":
                    new_events.append(item.data)
                elif kind == "tombstone":
                    tombstoned.append(item.data["id"])
                elif kind == "recall":
                    recalls.append(item.data)
                end = item.end
            end = past_blank_lines(path, end)
            positions.append(Checkpoint(path.name, end, path.stat().st_ino, fingerprint(path, end)))
        with self.catalog.transaction():
            if reset:
                self._reset_catalog()
                self.memory_table.clear()
            try:
                self._ingest(new_memories, new_events, recalls, tombstoned, report, progress)
                self.fulltext.commit()
                self.sessions.commit()
            except BaseException:
                self.fulltext.rollback()
                self.sessions.rollback()
                raise
            self._scoring_table = None  # the in-process scoring table no longer matches
            for checkpoint in positions:
                self.catalog.set_checkpoint(checkpoint)
            self.catalog.set_manifest(self._expected_manifest())
        return report

    def _ingest(
        self,
        memories: list[dict[str, Any]],
        events: list[dict[str, Any]],
        recalls: list[dict[str, Any]],
        tombstoned: list[str],
        report: UpdateReport,
        progress: Progress | None,
    ) -> None:
        affected: set[str] = set(tombstoned)
        fresh: list[tuple[dict[str, Any], str]] = []
        iids: list[int] = []
        for line in memories:
            digest = content_hash(line["text"])
            iid = self.catalog.add_memory(line, _epoch(line["created"]), digest)
            if iid is not None:
                fresh.append((line, digest))
                iids.append(iid)
                affected.add(line["id"])
        rehearsed = list(recalls)  # recall lines and new confirm events: decay's rehearsals
        for line in events:
            if self.catalog.add_event(line):
                affected.add(line["target"])
                if line["op"] == "link" and str(line.get("to", "")).startswith("m-"):
                    affected.add(line["to"])
                if line["op"] == "confirm":
                    rehearsed.append(line)
        self.catalog.add_rehearsals(rehearsal_times(parseable(rehearsed)))
        report.memories = len(fresh)
        report.events = len(events)
        if not affected:
            return
        self._annotate([digest for _, digest in fresh], [line["text"] for line, _ in fresh])
        report.embedded = self._embed(
            [digest for _, digest in fresh], [line["text"] for line, _ in fresh], progress
        )
        rows = self.catalog.vector_rows(digest for _, digest in fresh)
        self.memory_table.set(
            iids,
            row=[rows.get(digest, -1) for _, digest in fresh],
            near=[[-1] * 2 * CONTEXT] * len(fresh),  # set below for those in a session
            created=[_epoch(line["created"]) for line, _ in fresh],
            session=[name_code(line["session"]) if line.get("session") else 0 for line, _ in fresh],
            speaker=[_speaker_code(line) for line, _ in fresh],
        )
        self._resettle(affected)

    def _resettle(self, affected: set[str]) -> None:
        """Re-fold the affected memories (and those sharing their supersede keys); update
        each one's status, Tantivy document and searchability."""
        current = self.catalog.memories_by_id(affected)
        keys = [memory.line["key"] for memory in current.values() if memory.line.get("key")]
        group = set(current) | set(self.catalog.ids_with_keys(keys))
        if group - set(current):
            current.update(self.catalog.memories_by_id(group - set(current)))
        # Tombstones need no line of their own here: forget always appends a forget event.
        lines = [memory.line for memory in current.values()] + self.catalog.events_for(current)
        view = fold(lines, _FAR_FUTURE)
        deletes: list[str] = []
        searchable_now: list[CatalogMemory] = []
        for memory_id, memory in current.items():
            state = view.states.get(memory_id)
            status = index_status(view, memory_id) if state else "forgotten"
            searchable = status not in NOT_SEARCHABLE
            self.catalog.set_status(memory_id, status, searchable)
            if searchable:
                searchable_now.append(memory)
            else:
                deletes.append(memory_id)
        self.fulltext.delete(deletes)
        self._refresh_documents(list(current.values()), searchable_now)

    def _refresh_documents(
        self, touched: list[CatalogMemory], searchable: list[CatalogMemory]
    ) -> None:
        """Write the Tantivy documents of `searchable` memories and of their same-session
        neighbours (whose context text includes them), and the documents of touched sessions."""
        sessions = {m.line["session"] for m in touched if m.line.get("session")}
        rows = self.catalog.session_rows(sessions)
        context: dict[int, str] = {}
        around: list[tuple[int, list[int]]] = []
        wanted = {memory.iid for memory in searchable}
        for members in rows.values():
            texts = [text for _, text in members]
            for position, (iid, _) in enumerate(members):
                window = range(
                    max(0, position - CONTEXT), min(len(members), position + CONTEXT + 1)
                )
                context[iid] = " ".join(texts[i] for i in window)
                around.append((iid, [members[i][0] for i in window if i != position]))
            changed = [
                p
                for p, (iid, _) in enumerate(members)
                if iid in wanted or iid in {m.iid for m in touched}
            ]
            for position in changed:
                for near in range(
                    max(0, position - CONTEXT), min(len(members), position + CONTEXT + 1)
                ):
                    wanted.add(members[near][0])
        if around:
            self.memory_table.set(
                [iid for iid, _ in around],
                near=[near + [-1] * (2 * CONTEXT - len(near)) for _, near in around],
            )
        memories = self.catalog.memories_by_iid(wanted)
        self.fulltext.upsert(
            [
                _document(memory, context.get(memory.iid, memory.text))
                for memory in memories.values()
                if memory.searchable
            ]
        )
        self.sessions.delete(list(sessions))
        self.sessions.upsert(
            [
                {
                    "id": name,
                    "iid": name_code(name),
                    "text": " ".join(text for _, text in members),
                    "time": 0,
                }
                for name, members in rows.items()
                if members
            ]
        )

    def _annotate(self, hashes: list[str], texts: list[str]) -> None:
        known = self.catalog.affect_for(hashes)
        missing = [(h, t) for h, t in zip(hashes, texts, strict=True) if h not in known]
        if not missing:
            return
        from .affect import annotate_many

        annotator = self.annotator
        label = f"{annotator.name}/{annotator.version}"
        values = annotate_many([text for _, text in missing], annotator)
        self.catalog.set_affect(
            (h, label, value.to_dict()) for (h, _), value in zip(missing, values, strict=True)
        )

    def _embed(self, hashes: list[str], texts: list[str], progress: Progress | None) -> int:
        """Embed texts not yet in the vector cache; returns how many were embedded."""
        known = self.catalog.vector_rows(hashes)
        pending: dict[str, str] = {}
        for digest, text in zip(hashes, texts, strict=True):
            if digest not in known and digest not in pending:
                pending[digest] = text
        if not pending:
            return 0
        items = list(pending.items())
        store = self.store
        done = 0
        for start in range(0, len(items), EMBED_BATCH):
            batch = items[start : start + EMBED_BATCH]
            vectors = self.embedder.embed([text for _, text in batch])
            first = store.append(vectors)
            self.catalog.add_vector_rows(
                (digest, first + offset) for offset, (digest, _) in enumerate(batch)
            )
            done += len(batch)
            if progress:
                progress("embedding", done, len(items))
        return done

    def _rebuild(self, reason: str, progress: Progress | None) -> UpdateReport:
        """Start over from the shelves, reusing cached embeddings and annotations."""
        log.info("rebuilding the index: %s", reason)
        for opened in (self._fulltext, self._sessions):  # (opening an old one may fail)
            if opened is not None:
                opened.rollback()
        self._fulltext = self._sessions = self._memory_table = None
        previous = self.generation
        self._generation = previous + 1
        for name in ("tantivy", "sessions"):
            FullText.wipe(self.root / f"{name}-{self._generation}")
        self.base.remove()
        report = self._apply_appended(progress, reset=True)
        current = {f"{name}-{self._generation}" for name in ("tantivy", "sessions")}
        for stale in (*self.root.glob("tantivy*"), *self.root.glob("sessions*")):
            if stale.name not in current:
                FullText.wipe(stale)
        for stale in self.root.glob("memories-*.table"):
            if stale != self.memory_table.path:
                stale.unlink(missing_ok=True)  # a reader still mapping it keeps its pages
        report.rebuilt, report.reason = True, reason
        self._compact_caches()
        self._merge_delta(full=True)
        report.merged = True
        # Old pages (a forgotten memory's text among them) stay in the WAL file until it is
        # truncated; a long-lived process would otherwise keep them on disk.
        self.catalog.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return report

    def _compact_caches(self) -> None:
        """Drop cached vectors and annotations no memory refers to any more (e.g. forgotten)."""
        import numpy as np

        referenced = {
            row[0] for row in self.catalog.db.execute("SELECT content_hash FROM memories")
        }
        rows = self.catalog.vector_rows(referenced)
        with self.catalog.transaction():
            self.catalog.db.execute(
                "DELETE FROM affect WHERE content_hash NOT IN (SELECT content_hash FROM memories)"
            )
            ordered = sorted(rows.items(), key=lambda item: item[1])
            vectors = (
                self.store.rows([row for _, row in ordered])
                if ordered
                else np.zeros((0, self.embedder.dim), np.float32)
            )
            self.catalog.db.execute("DELETE FROM vectors")
            self.catalog.add_vector_rows((digest, new) for new, (digest, _) in enumerate(ordered))
            self.store.rewrite(vectors)
            renumbered = {digest: new for new, (digest, _) in enumerate(ordered)}
            memories = list(self.catalog.db.execute("SELECT iid, content_hash FROM memories"))
            by_iid = np.full(max((iid for iid, _ in memories), default=-1) + 1, -1, np.int32)
            for iid, digest in memories:
                by_iid[iid] = renumbered.get(digest, -1)
            self.memory_table.set_rows(by_iid)

    def _maybe_merge(self, report: UpdateReport) -> None:
        counts = self.catalog.counts()
        if counts["delta"] > max(2000, counts["searchable"] // 20):
            self._merge_delta(full=False)
            report.merged = True

    def _merge_delta(self, full: bool) -> None:
        """Write a new base index holding every searchable vector (delta becomes empty)."""
        import numpy as np

        iids = np.asarray(
            [row[0] for row in self.catalog.db.execute(
                "SELECT iid FROM memories WHERE searchable = 1 ORDER BY iid"
            )],
            dtype=np.int64,
        )  # fmt: skip
        rows = self.memory_table.get(iids)["row"]
        usable = rows >= 0
        self.base.build(self.store.rows(rows[usable]), iids[usable])
        with self.catalog.transaction():
            self.catalog.db.execute("UPDATE memories SET in_base = 0")
            self.catalog.mark_in_base(iids[usable].tolist())

    # reading --------------------------------------------------------------------------------
    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Full-text search (BM25) with highlighted snippets."""
        hits = self.fulltext.search(query, k, snippets=True)
        found = self.catalog.memories_by_id(hit.id for hit in hits)
        return [
            Hit(h.id, found[h.id].text, h.score, h.snippet)
            for h in hits
            if h.id in found and found[h.id].searchable
        ]

    def vector_hits(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top-k (iid, cosine) over the base index and the delta, skipping unsearchable ones."""
        if self.catalog.manifest().get("model") != self.embedder.model_id:
            self.update()  # built with another embedding model: its vectors are not comparable
        hidden = {
            row[0]
            for row in self.catalog.db.execute(
                "SELECT iid FROM memories WHERE searchable = 0 AND in_base = 1"
            )
        }
        from_base = [
            hit for hit in self.base.search(vector, k + len(hidden)) if hit[0] not in hidden
        ]
        delta = self.catalog.delta_iids()
        matrix, found = self.vector_matrix(delta)
        from_delta = exact_search(
            vector, matrix[found], [i for i, f in zip(delta, found, strict=True) if f], k
        )
        merged = sorted(from_base[:k] + from_delta, key=lambda hit: -hit[1])
        return merged[:k]

    def similar(self, query: str, k: int = 10) -> list[Hit]:
        """Vector search only: the memories closest in meaning to the query."""
        from .blas import single_thread

        with single_thread():
            vector = self.embedder.embed([query])[0]
        hits = self.vector_hits(vector, k)
        found = self.catalog.memories_by_iid(iid for iid, _ in hits)
        return [Hit(found[iid].id, found[iid].text, score) for iid, score in hits if iid in found]

    def scoring_table(self) -> Any:
        """Every searchable memory as arrays for exact scoring (recall/relevance.py), or None
        when the archive is larger than `recall.exact_below` (then recall uses a pool)."""
        limit = self.memdir.settings.recall.exact_below
        if self._scoring_table is None:
            if self.catalog.counts()["searchable"] > limit:
                self._scoring_table = False  # too large: remembered until the next update
            else:
                from .recall.relevance import build_table

                self._scoring_table = build_table(self)
        return self._scoring_table or None

    def vector_matrix(self, iids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of these memories as rows (zeros where a memory has none), and a mask
        of those that have one."""
        import numpy as np

        rows = self.memory_table.get(np.asarray(iids, dtype=np.int64))["row"]
        found = rows >= 0
        matrix = np.zeros((len(rows), self.embedder.dim), dtype=np.float32)
        if found.any():
            matrix[found] = self.store.rows(rows[found])
        return matrix, found

    def vectors_for(self, memories: list[CatalogMemory]) -> dict[int, np.ndarray]:
        """Each memory's cached vector, by iid (memories without one are left out)."""
        iids = [memory.iid for memory in memories]
        matrix, found = self.vector_matrix(iids)
        return {iid: matrix[i] for i, iid in enumerate(iids) if found[i]}

    def affect_of(self, memory: CatalogMemory) -> dict[str, Any]:
        """A memory's affect: what the user gave wins, else the annotator's annotation."""
        return self.affects_of([memory])[memory.id]

    def affects_of(self, memories: list[CatalogMemory]) -> dict[str, dict[str, Any]]:
        """Affect for several memories at once (annotations come with the catalog rows)."""
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
                affect = self.affect_of(memory)
                rows.append(
                    {
                        "id": memory.id,
                        "text": memory.text,
                        "valence": affect.get("valence", 0.0),
                        "arousal": affect.get("arousal", 0.0),
                        "chord": affect.get("chord", {}),
                        "annotator": affect.get("annotator", "none"),
                    }
                )
        return rows

    def reannotate(self) -> int:
        """Re-derive every annotation with the configured annotator."""
        with self.lock():
            memories = list(self.catalog.all_memories())
            with self.catalog.transaction():
                self.catalog.db.execute("DELETE FROM affect")
                self._annotate([m.content_hash for m in memories], [m.text for m in memories])
                self.catalog.set_manifest({"annotator": self._expected_manifest()["annotator"]})
        return len(memories)

    def status(self) -> dict[str, Any]:
        counts = self.catalog.counts()
        manifest = self.catalog.manifest()
        return {
            "version": manifest.get("version"),
            "model": manifest.get("model"),
            "embedder": self.embedder.kind,
            "embedder_warning": self.embedder_warning,
            "annotator": manifest.get("annotator"),
            "memories": counts["memories"],
            "searchable": counts["searchable"],
            "events": counts["events"],
            "fulltext_documents": self.fulltext.count(),
            "vector_base": {"kind": self.base.kind(), "size": self.base.size()},
            "vector_delta": counts["delta"],
            "up_to_date": manifest.get("model") == self.embedder.model_id
            and not self.needs_update(),
            "bytes": sum(f.stat().st_size for f in self.root.rglob("*") if f.is_file()),
        }


class _IndexLock(WriterLock):
    """The index writer lock; its refusal names the index and $MEMDIR_INDEX_TIMEOUT."""

    def __enter__(self) -> WriterLock:
        try:
            return super().__enter__()
        except LockedError as error:
            raise LockedError(
                error.message.replace("the memdir is locked", "the index is being updated", 1),
                hint="wait for the other `memdir index` to finish, or raise "
                "$MEMDIR_INDEX_TIMEOUT (seconds)",
            ) from None


def _speaker_code(line: dict[str, Any]) -> int:
    speaker = speaker_of(str(line.get("author", "")))
    return name_code(speaker) if speaker else 0


def index_status(view: ArchiveView, memory_id: str) -> str:
    """The status the lines imply regardless of time: expiry by time is left to recall."""
    state = view.states[memory_id]
    if state.status == "expired" and not any(event.op == "expire" for event in state.events):
        return "provisional"
    return state.status


def _document(memory: CatalogMemory, context: str) -> dict[str, Any]:
    line = memory.line
    kind = line.get("type")
    label = f"{kind}:{line['subtype']}" if kind and line.get("subtype") else kind
    return {
        "id": line["id"],
        "iid": memory.iid,
        "text": line["text"],
        "context": context,
        "status": memory.status,
        "type": label,
        "source": line["source"],
        "persona": line.get("personas") or [],
        "session": line.get("session"),
        "time": _epoch(line["created"]),
    }
