"""Keeping the index in step with the shelves: staleness, ingest, rebuild, compaction, merge.

`IndexUpdater.update()` reads only what was appended since the last checkpoint of each shelf,
adds new memories to the catalog, the full text and the vector delta, applies lifecycle
events, records rehearsals, and commits. A shelf that was rewritten (forget's compaction, a
git checkout or merge), a new manifest version or a different embedding model triggers a full
rebuild, which re-embeds nothing it has embedded before (vectors are cached by content hash).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memdir.archive_format import attachments, idcache
from memdir.archive_format import shelf as shelf_io
from memdir.archive_format.clock import parse_time
from memdir.archive_format.decay import rehearsal_times
from memdir.archive_format.errors import BadInputError, LockedError
from memdir.archive_format.fold import SUPERSEDED_BY, ArchiveView, fold
from memdir.archive_format.lock import WriterLock
from memdir.archive_format.memdir import Memdir

from .backends import (
    META_FIELDS,
    CatalogMemory,
    CatalogReader,
    Checkpoint,
    Document,
    speaker_of,
)
from .memorytable import CONTEXT, name_code
from .questions import question_share
from .storage import IndexStorage

INDEX_VERSION = "12"  # 12: float16 embedding cache, 8-bit vector base (vectors.py)
FINGERPRINT_WINDOW = 1 << 16
NOT_SEARCHABLE = frozenset({"rejected", "superseded", "forgotten"})
EMBED_BATCH = 512
# The full text is written again (compacted) after an update that left replaced documents in
# its BM25 statistics when the archive is small enough for that to cost little (≈ 0.04 s per
# 1,000 memories), and above that once replaced documents reach a tenth of the live ones;
# `memdir sync` and `memdir index --compact` always compact. See docs/FORMAT.md "Sync".
COMPACT_ALWAYS_BELOW = 2000
COMPACT_RATIO = 0.1


def withheld_from_programs(line: dict[str, Any]) -> bool:
    """Whether a memory line's text must not reach a program the user configured
    (`distill.command`): dream's rule for its summariser (visibility.leaves)."""
    from memdir.archive_format import visibility

    return not visibility.leaves(str(line.get("visibility", "normal")))


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
    compacted: bool = False  # the full text written again (compact_fulltext)
    warnings: list[str] = field(default_factory=list)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


RETRIES = 5  # updates started over because a shelf was replaced while it was read


class ShelfReplaced(Exception):
    """A shelf was replaced (forget's compaction, a sync) while the update read it."""


def past_blank_lines(path: Path, end: int) -> int:
    """`end`, moved over trailing blank lines (which the reader skips): otherwise the checkpoint
    never reaches the end of the shelf and every command would run an update."""
    with open(path, "rb") as handle:
        handle.seek(end)
        tail = handle.read(1 << 16)
    return end + len(tail) if tail.endswith(b"\n") and not tail.strip() else end


def _prime_id_cache(memdir: Memdir) -> None:
    """After a rebuild, which read every shelf, bring the id cache up to date as well: on a fresh
    clone it is built here, as part of the first `memdir index` (19 s of CPU at a million
    memories, within a build of minutes), not by the first write. Kept in step incrementally
    otherwise; one that cannot be kept on disk is left to the writers (idcache.open_cache)."""
    idcache.kept_cache(memdir)


def fingerprint(path: Path, length: int) -> str:
    """A cheap fingerprint of a shelf's first `length` bytes (shelf.prefix_fingerprint).

    Rewrites that change the bytes near either end of the indexed prefix (or its length) are
    detected without reading the whole shelf; a shelf written anew with the prefix intact (git
    writes a pulled or merged shelf as a new file) is appended to, not rebuilt.
    """
    with open(path, "rb") as handle:
        return shelf_io.prefix_fingerprint(handle, length, FINGERPRINT_WINDOW)


def parseable(lines: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    """The lines whose time can be read (a malformed one is `verify`'s business, not recall's)."""
    for line in lines:
        try:
            parse_time(str(line.get("at", "")))
        except BadInputError:
            continue
        yield line


def _epoch(text: str) -> int:
    return int(parse_time(text).timestamp())


_FAR_FUTURE = datetime(9999, 1, 1, tzinfo=timezone.utc)


class IndexUpdater:
    """Writes one memdir's index parts from its shelves; the only writer of the index."""

    def __init__(self, storage: IndexStorage) -> None:
        self.storage = storage
        self._distiller: Any = None

    def lock(self) -> WriterLock:
        """Only one process updates the index at a time; others wait (then fail clearly).
        The lock file covers this host; the parts add a lock of their own where they are
        shared beyond it (the postgres backend's advisory lock)."""
        timeout = float(os.environ.get("MEMDIR_INDEX_TIMEOUT", 120))
        return _IndexLock(
            self.storage.memdir.cache_dir / "index.lock",
            timeout=timeout,
            shared=self.storage.parts.writer_lock(timeout),
        )

    # staleness ------------------------------------------------------------------------------
    def _expected_manifest(self) -> dict[str, str]:
        embedder = self.storage.embedder
        return {
            "version": INDEX_VERSION,
            "generation": str(self.storage.generation),
            "model": embedder.model_id,
            "dim": str(embedder.dim),
            "annotator": self.storage.annotator_label(),
            "milestones": str(self.storage.memdir.settings.distill.milestones),
        }

    def _stale_reason(self) -> str | None:
        """Why a full rebuild is needed, or None when appending is enough."""
        memdir = self.storage.memdir
        manifest = self.storage.bookkeeping.manifest()
        if not manifest:
            return "no index yet"
        if manifest.get("version") != INDEX_VERSION:
            return f"index version {manifest.get('version')} → {INDEX_VERSION}"
        checkpoints = self.storage.bookkeeping.checkpoints()
        present = {path.name for path in memdir.shelves()}
        for name, checkpoint in checkpoints.items():
            path = memdir.shelves_dir / name
            if name not in present:
                return f"shelf {name} disappeared"
            # a new inode with the indexed prefix intact is a shelf git wrote anew (a pull or a
            # merge appends to what was there): appending is enough
            if path.stat().st_size < checkpoint.offset:
                return f"shelf {name} was rewritten"
            if fingerprint(path, checkpoint.offset) != checkpoint.fingerprint:
                return f"shelf {name} was rewritten"
        model = self.storage.embedder.model_id
        if manifest.get("model") != model:
            return f"embedding model changed ({manifest.get('model')} → {model})"
        if manifest.get("annotator") != self.storage.annotator_label():
            return "affect annotator changed"
        if manifest.get("milestones") != self._expected_manifest()["milestones"]:
            return "settings.distill.milestones changed"
        if self._vector_cache_lost():
            return "vector cache missing"
        missing = self._files_missing()
        if missing:
            return missing
        if self.storage.fulltext.count() != self.storage.bookkeeping.counts()["searchable"]:
            return "full-text index out of step with the catalog"
        return None

    def _files_missing(self) -> str | None:
        """Cheap check (no model load) for index files deleted from under the catalog."""
        missing = self.storage.files_missing()
        if missing:
            return missing
        last = self.storage.bookkeeping.max_iid()
        if last is not None and len(self.storage.memory_table) <= last:
            return "memory table shorter than the catalog"
        return None

    def _vector_cache_lost(self) -> bool:
        """True when the catalog points at vector rows the model's store no longer holds."""
        last = self.storage.catalog_caches.max_vector_row()
        return last is not None and last >= self.storage.store.count()

    def needs_update(self) -> bool:
        """Cheap check: has any shelf changed since the last update?

        Also notices a rebuild made by another process (a new generation) and reopens.
        """
        self.storage.follow_rebuilds()
        checkpoints = self.storage.bookkeeping.checkpoints()
        if self.storage.bookkeeping.manifest().get("version") != INDEX_VERSION:
            return True  # no index yet, or one written by another memdir version
        shelves = self.storage.memdir.shelves()
        if {path.name for path in shelves} != set(checkpoints):
            return any(path.stat().st_size for path in shelves) or bool(checkpoints)
        for path in shelves:
            stat = path.stat()
            checkpoint = checkpoints[path.name]
            if stat.st_ino != checkpoint.inode or stat.st_size != checkpoint.offset:
                return True
            if fingerprint(path, checkpoint.offset) != checkpoint.fingerprint:
                return True
        return self._files_missing() is not None or self.storage.base_outdated()

    # updating -------------------------------------------------------------------------------
    def update(self, progress: Progress | None = None, rebuild: bool = False) -> UpdateReport:
        """Bring the indexes up to date with the shelves (incrementally when possible)."""
        with self.lock():
            for attempt in range(RETRIES):
                try:
                    reason = "asked to rebuild" if rebuild else self._stale_reason()
                    if reason:
                        report = self._rebuild(reason, progress)
                        _prime_id_cache(self.storage.memdir)
                    else:
                        report = self._apply_appended(progress)
                        self._maybe_merge(report)
                    report.compacted = self.compact_fulltext()
                    return report
                except ShelfReplaced as replaced:
                    if attempt == RETRIES - 1:
                        raise LockedError(
                            f"shelves/{replaced} kept being rewritten while it was indexed",
                            hint="run `memdir index` again when forget or sync is done",
                        ) from None
                    log.debug("shelves/%s was replaced while it was read: starting over", replaced)
            raise AssertionError("unreachable")

    def reannotate(self) -> int:
        """Re-derive every annotation with the configured annotator."""
        with self.lock():
            memories = list(self.storage.catalog.all_memories())
            with self.storage.catalog_writer.transaction():
                self.storage.catalog_caches.clear_affect()
                self._annotate([m.content_hash for m in memories], [m.text for m in memories])
                self.storage.catalog_writer.set_manifest(
                    {"annotator": self.storage.annotator_label()}
                )
        return len(memories)

    def _reset_catalog(self) -> None:
        """Empty the catalog for a rebuild, keeping the caches that still apply."""
        manifest = self.storage.bookkeeping.manifest()
        self.storage.catalog_writer.clear()
        if (
            manifest.get("model") not in (None, self.storage.embedder.model_id)
            or self._vector_cache_lost()
        ):
            self.storage.catalog_caches.clear_vector_rows()
        if manifest.get("annotator") != self.storage.annotator_label():
            self.storage.catalog_caches.clear_affect()
        self.storage.catalog_writer.clear_manifest()

    def _apply_appended(self, progress: Progress | None, reset: bool = False) -> UpdateReport:
        storage = self.storage
        report = UpdateReport()
        checkpoints = {} if reset else self.storage.bookkeeping.checkpoints()
        new_memories: list[dict[str, Any]] = []
        new_events: list[dict[str, Any]] = []
        recalls: list[dict[str, Any]] = []
        tombstoned: list[str] = []
        positions: list[Checkpoint] = []
        for path in storage.memdir.shelves():
            start = checkpoints[path.name].offset if path.name in checkpoints else 0
            end = start
            # `forget` may replace the shelf while it is read (by path): the same inode before
            # and after, and the checkpoint's — or, for a shelf written anew (a git pull or
            # merge writes the whole file), its indexed prefix still there — or the update
            # starts over (then it sees a rewrite)
            inode = path.stat().st_ino
            known = checkpoints.get(path.name)
            if (
                known is not None
                and inode != known.inode
                and (fingerprint(path, known.offset) != known.fingerprint)
            ):
                raise ShelfReplaced(path.name)
            for item in shelf_io.read_all(path, start):
                kind = item.data.get("kind") if item.data is not None else None
                if item.problem is not None:  # warned about once by the reader; `verify` lists it
                    report.warnings.append(f"{item.problem.message}; not indexed")
                elif item.data is None:
                    pass  # a later minor version's line type
                elif kind == "memory":
                    new_memories.append(item.data)
                elif kind == "event":
                    new_events.append(item.data)
                elif kind == "tombstone":
                    tombstoned.append(item.data["id"])
                elif kind == "recall":
                    recalls.append(item.data)
                end = item.end
            end = past_blank_lines(path, end)
            positions.append(Checkpoint(path.name, end, inode, fingerprint(path, end)))
            if path.stat().st_ino != inode:
                raise ShelfReplaced(path.name)
        with self.storage.catalog_writer.transaction():
            if reset:
                self._reset_catalog()
                storage.memory_table.clear()
            # recall lines alone touch only the catalog's rehearsals: no Tantivy commit (8–90
            # ms each) and the in-process scoring table (no rehearsals in it) still matches
            touched = bool(reset or new_memories or new_events or tombstoned)
            try:
                self._ingest(new_memories, new_events, recalls, tombstoned, report, progress)
                if touched:
                    storage.fulltext.commit()
                    storage.sessions.commit()
            except BaseException:
                if touched:
                    storage.fulltext.rollback()
                    storage.sessions.rollback()
                raise
            if touched:
                storage.cached_scoring_table = None  # it no longer matches
            for checkpoint in positions:
                self.storage.catalog_writer.set_checkpoint(checkpoint)
            self.storage.catalog_writer.set_manifest(self._expected_manifest())
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
        digests = [content_hash(line["text"]) for line in memories]
        added = self.storage.catalog_writer.add_memories(
            [
                (line, _epoch(line["created"]), digest)
                for line, digest in zip(memories, digests, strict=True)
            ]
        )
        for line, digest, iid in zip(memories, digests, added, strict=True):
            if iid is not None:
                fresh.append((line, digest))
                iids.append(iid)
                affected.add(line["id"])
        rehearsed = list(recalls)  # recall lines and new confirm events: decay's rehearsals
        for line in events:
            if self.storage.catalog_writer.add_event(line):
                affected.add(line["target"])
                if line["op"] == "link" and str(line.get("to", "")).startswith("m-"):
                    affected.add(line["to"])
                if line["op"] == "confirm":
                    rehearsed.append(line)
        self.storage.catalog_writer.add_rehearsals(rehearsal_times(parseable(rehearsed)))
        report.memories = len(fresh)
        report.events = len(events)
        if not affected:
            return
        self._annotate([digest for _, digest in fresh], [line["text"] for line, _ in fresh])
        report.embedded = self._embed(
            [digest for _, digest in fresh], [line["text"] for line, _ in fresh], progress
        )
        self._distill([digest for _, digest in fresh], [line["text"] for line, _ in fresh],
                      [withheld_from_programs(line) for line, _ in fresh])  # fmt: skip
        self._settle_guaranteed(iids, [line for line, _ in fresh], [d for _, d in fresh])
        rows = self.storage.catalog_caches.vector_rows(digest for _, digest in fresh)
        self.storage.memory_table.set(
            iids,
            row=[rows.get(digest, -1) for _, digest in fresh],
            near=[[-1] * 2 * CONTEXT] * len(fresh),  # set below for those in a session
            created=[_epoch(line["created"]) for line, _ in fresh],
            session=[name_code(line["session"]) if line.get("session") else 0 for line, _ in fresh],
            speaker=[_speaker_code(line) for line, _ in fresh],
            asks=[question_share(line["text"]) for line, _ in fresh],
        )
        self._resettle(affected)

    def _resettle(self, affected: set[str]) -> None:
        """Re-fold the affected memories (and those sharing their supersede keys); update
        each one's status, Tantivy document and searchability."""
        current = self.storage.catalog.memories_by_id(affected)
        keys = [memory.line["key"] for memory in current.values() if memory.line.get("key")]
        group = set(current) | set(self.storage.catalog.ids_with_keys(keys))
        group |= self._supersede_partners(set(current))
        if group - set(current):
            current.update(self.storage.catalog.memories_by_id(group - set(current)))
        # Tombstones need no line of their own here: forget always appends a forget event.
        lines = [memory.line for memory in current.values()] + self.storage.catalog.events_for(
            current
        )
        view = fold(lines, _FAR_FUTURE)
        deletes: list[str] = []
        searchable_now: list[CatalogMemory] = []
        changed: list[tuple[str, str, bool]] = []
        for memory_id, memory in current.items():
            state = view.states.get(memory_id)
            status = index_status(view, memory_id) if state else "forgotten"
            searchable = status not in NOT_SEARCHABLE
            if (status, searchable) != (memory.status, memory.searchable):
                changed.append((memory_id, status, searchable))
            if searchable:
                searchable_now.append(memory)
            else:
                deletes.append(memory_id)
        self.storage.catalog_writer.set_statuses(changed)
        self.storage.fulltext.delete(deletes)
        self._refresh_documents(list(current.values()), searchable_now)

    def _supersede_partners(self, ids: set[str]) -> set[str]:
        """The other ends of the `superseded-by` links touching `ids`: an old memory's status
        follows its successor's (the links pointing at one are looked up only when a decision
        about it may have changed that)."""
        events = self.storage.catalog.events_for(ids)
        found = {
            str(e["to"]) for e in events if e.get("link_type") == SUPERSEDED_BY and e.get("to")
        }
        if any(event["op"] in ("confirm", "reject", "forget") for event in events):
            found |= {one for one, other, kind in self.storage.catalog.links()
                      if kind == SUPERSEDED_BY and other in ids}  # fmt: skip
        return found

    def _refresh_documents(
        self, touched: list[CatalogMemory], searchable: list[CatalogMemory]
    ) -> None:
        """Write the Tantivy documents of `searchable` memories and of their same-session
        neighbours (whose context text includes them), and the documents of touched sessions."""
        sessions = {m.line["session"] for m in touched if m.line.get("session")}
        rows = self.storage.catalog.session_rows(sessions)
        context, around = _contexts(rows)
        wanted = {memory.iid for memory in searchable}
        for members in rows.values():
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
            self.storage.memory_table.set(
                [iid for iid, _ in around],
                near=[near + [-1] * (2 * CONTEXT - len(near)) for _, near in around],
            )
        memories = self.storage.catalog.memories_by_iid(wanted)
        shown = [memory for memory in memories.values() if memory.searchable]
        attached = attached_texts(self.storage.memdir, self.storage.catalog, shown)
        self.storage.fulltext.upsert(
            [
                _document(memory, context.get(memory.iid, [memory.text]), attached.get(memory.iid))
                for memory in shown
            ]
        )
        self.storage.sessions.delete(list(sessions))
        self.storage.sessions.upsert(_session_documents(rows))

    def compact_fulltext(self, force: bool = False) -> bool:
        """Write both full-text indexes again from the catalog when replaced documents linger
        in their BM25 statistics (see COMPACT_ALWAYS_BELOW; `force`: whenever any do), so
        that the scores depend on the memories alone, not on the order they were indexed in.
        Whether it compacted."""
        storage = self.storage
        with self.lock():
            replaced = storage.fulltext.replaced() + storage.sessions.replaced()
            live = storage.fulltext.count()
            if not replaced or not (
                force or live < COMPACT_ALWAYS_BELOW or replaced > COMPACT_RATIO * live
            ):
                return False
            texts, sessions = fulltext_documents(self.storage.catalog, storage.memdir)
            try:
                storage.fulltext.replace_all(texts)
                storage.sessions.replace_all(sessions)
                storage.fulltext.commit()
                storage.sessions.commit()
            except BaseException:
                storage.fulltext.rollback()
                storage.sessions.rollback()
                raise
            log.debug("compacted the full text: %d replaced documents dropped", replaced)
            return True

    def _annotate(self, hashes: list[str], texts: list[str]) -> None:
        known = self.storage.catalog_caches.affect_for(hashes)
        missing = [(h, t) for h, t in zip(hashes, texts, strict=True) if h not in known]
        if not missing:
            return
        from .affect import annotate_many

        label = self.storage.annotator_label()
        values = annotate_many([text for _, text in missing], self.storage.annotator)
        self.storage.catalog_caches.set_affect(
            (h, label, value.to_dict()) for (h, _), value in zip(missing, values, strict=True)
        )

    def _distill(self, hashes: list[str], texts: list[str], withheld: list[bool]) -> int:
        """Distil the memories not yet distilled (indexers/distill.py), from their cached
        vectors; returns how many. A `withheld` text (private or sealed) never goes to the
        user's distill.command."""
        known = self.storage.catalog_caches.distilled_for(hashes)
        pending = dict((h, t) for h, t in zip(hashes, texts, strict=True) if h not in known)
        if not pending:
            return 0
        kept_in = {h for h, hidden in zip(hashes, withheld, strict=True) if hidden}
        rows = self.storage.catalog_caches.vector_rows(pending)
        ready = [digest for digest in pending if digest in rows]
        if not ready:
            return 0
        vectors = self.storage.store.rows([rows[digest] for digest in ready])
        found = self._distilled([pending[d] for d in ready], vectors,
                                [digest in kept_in for digest in ready])  # fmt: skip
        self.storage.catalog_caches.set_distilled(
            (digest, value.to_dict()) for digest, value in zip(ready, found, strict=True)
        )
        return len(ready)

    def _distilled(self, texts: list[str], vectors: Any, withheld: list[bool]) -> list[Any]:
        """The configured distiller command's answers (`distill.command`) for the texts it may
        read, else — for withheld texts, and when it fails, with a warning — the built-in
        distiller's."""
        from .distill import CommandDistiller, Distiller

        settings = self.storage.memdir.settings.distill
        found: list[Any] = [None] * len(texts)
        outside = [number for number, hidden in enumerate(withheld) if not hidden]
        if settings.command and outside:
            try:
                command = CommandDistiller(settings.command, settings.timeout.total_seconds())
                for number, value in zip(outside, command.distill([texts[n] for n in outside]),
                                         strict=True):  # fmt: skip
                    found[number] = value
            except ValueError as error:
                log.warning("warning: %s; the built-in distiller is used instead", error)
                found = [None] * len(texts)
        rest = [number for number, value in enumerate(found) if value is None]
        if rest:
            if self._distiller is None:  # its prototypes are embedded once per updater
                self._distiller = Distiller(self.storage.embedder)
            for number, value in zip(rest, self._distiller.distill([texts[n] for n in rest],
                                                                   vectors[rest]), strict=True):  # fmt: skip
                found[number] = value
        return found

    def redistill(self) -> int:
        """Distil every memory again (`memdir distill --recompute`)."""
        with self.lock():
            memories = list(self.storage.catalog.all_memories())
            hashes = [m.content_hash for m in memories]
            with self.storage.catalog_writer.transaction():
                self.storage.catalog_caches.clear_distilled()
                done = self._distill(hashes, [m.text for m in memories],
                                     [withheld_from_programs(m.line) for m in memories])  # fmt: skip
                self._settle_guaranteed(
                    [m.iid for m in memories], [m.line for m in memories], hashes
                )
            self.storage.cached_scoring_table = None
            return done

    def _settle_guaranteed(
        self, iids: list[int], lines: list[dict[str, Any]], hashes: list[str]
    ) -> None:
        """Recall's guaranteed channel holds pinned memories and milestones: the user's
        `--temporal milestone`, and with settings.distill.milestones a distilled one too
        (distill.effective: what the user gave wins), ordered by the effective importance.
        Off, the catalog keeps what add_memory wrote from the line."""
        if not self.storage.memdir.settings.distill.milestones:
            return  # add_memory set the line's own (switching the setting rebuilds)
        from .distill import effective

        distilled = self.storage.catalog_caches.distilled_for(hashes)
        self.storage.catalog_writer.set_guaranteed(
            (
                iid,
                bool(line.get("pinned")) or derived["temporal"] == "milestone",
                int(derived["importance"]),
            )
            for iid, line, digest in zip(iids, lines, hashes, strict=True)
            for derived in (effective(line, distilled.get(digest)),)
        )

    def _embed(self, hashes: list[str], texts: list[str], progress: Progress | None) -> int:
        """Embed texts not yet in the vector cache; returns how many were embedded."""
        known = self.storage.catalog_caches.vector_rows(hashes)
        pending: dict[str, str] = {}
        for digest, text in zip(hashes, texts, strict=True):
            if digest not in known and digest not in pending:
                pending[digest] = text
        if not pending:
            return 0
        items = list(pending.items())
        store, embedder = self.storage.store, self.storage.embedder
        done = 0
        for start in range(0, len(items), EMBED_BATCH):
            batch = items[start : start + EMBED_BATCH]
            vectors = embedder.embed([text for _, text in batch])
            first = store.append(vectors)
            self.storage.catalog_caches.add_vector_rows(
                (digest, first + offset) for offset, (digest, _) in enumerate(batch)
            )
            done += len(batch)
            if progress:
                progress("embedding", done, len(items))
        return done

    # rebuilding, compaction, merging --------------------------------------------------------
    def _rebuild(self, reason: str, progress: Progress | None) -> UpdateReport:
        """Start over from the shelves, reusing cached embeddings and annotations."""
        log.info("rebuilding the index: %s", reason)
        self.storage.start_generation()
        report = self._apply_appended(progress, reset=True)
        self.storage.remove_stale()
        report.rebuilt, report.reason = True, reason
        self._compact_caches()
        self.merge_delta()
        report.merged = True
        self.storage.catalog_writer.release_space()
        return report

    def _compact_caches(self) -> None:
        """Drop cached vectors and annotations no memory refers to any more (e.g. forgotten)."""
        import numpy as np

        hashes = self.storage.bookkeeping.content_hashes()
        rows = self.storage.catalog_caches.vector_rows(hashes.values())
        store = self.storage.store
        with self.storage.catalog_writer.transaction():
            self.storage.catalog_caches.clear_affect(unreferenced_only=True)
            if len(set(rows.values())) == store.count() and store.current():
                return  # every cached vector is a memory's: renumbering would move none
            ordered = sorted(rows.items(), key=lambda item: item[1])
            vectors = (
                store.rows([row for _, row in ordered])
                if ordered
                else np.zeros((0, self.storage.embedder.dim), np.float32)
            )
            self.storage.catalog_caches.clear_vector_rows()
            self.storage.catalog_caches.add_vector_rows(
                (digest, new) for new, (digest, _) in enumerate(ordered)
            )
            store.rewrite(vectors)
            renumbered = {digest: new for new, (digest, _) in enumerate(ordered)}
            by_iid = np.full(max(hashes, default=-1) + 1, -1, np.int32)
            for iid, digest in hashes.items():
                by_iid[iid] = renumbered.get(digest, -1)
            self.storage.memory_table.set_rows(by_iid)

    def _maybe_merge(self, report: UpdateReport) -> None:
        """Fold the delta into the base when it has grown, or when an older memdir wrote the
        base (vectors.py: it is written again from the cache)."""
        counts = self.storage.bookkeeping.counts()
        if counts["delta"] > max(2000, counts["searchable"] // 20) or self.storage.base_outdated():
            self.merge_delta()
            report.merged = True

    def merge_delta(self) -> None:
        """Write a new vector base holding every searchable vector (the delta becomes empty)."""
        import numpy as np

        iids = np.asarray(self.storage.catalog.searchable_iids(), dtype=np.int64)
        rows = self.storage.memory_table.get(iids)["row"]
        usable = rows >= 0
        self.storage.base.build(iids[usable], rows[usable])
        with self.storage.catalog_writer.transaction():
            self.storage.catalog_writer.set_base(iids[usable].tolist())


class _IndexLock(WriterLock):
    """The index writer lock file, then the parts' `shared` lock; its refusal names the index
    and $MEMDIR_INDEX_TIMEOUT."""

    def __init__(self, path: Path, timeout: float, shared: AbstractContextManager[object]) -> None:
        super().__init__(path, timeout)
        self.shared = shared

    def __enter__(self) -> WriterLock:
        try:
            super().__enter__()
        except LockedError as error:
            raise LockedError(
                error.message.replace("the memdir is locked", "the index is being updated", 1),
                hint="wait for the other `memdir index` to finish, or raise "
                "$MEMDIR_INDEX_TIMEOUT (seconds)",
            ) from None
        try:
            self.shared.__enter__()
        except BaseException:
            super().__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self.shared.__exit__(*exc_info)
        finally:
            super().__exit__(*exc_info)


def _speaker_code(line: dict[str, Any]) -> int:
    speaker = speaker_of(str(line.get("author", "")))
    return name_code(speaker) if speaker else 0


def index_status(view: ArchiveView, memory_id: str) -> str:
    """The status the lines imply regardless of time: expiry by time is left to recall."""
    state = view.states[memory_id]
    if state.status == "expired" and not any(event.op == "expire" for event in state.events):
        return "provisional"
    return state.status


def _contexts(
    rows: dict[str, list[tuple[int, str]]],
) -> tuple[dict[int, list[str]], list[tuple[int, list[int]]]]:
    """Each session member's context: the texts of itself with its CONTEXT neighbours on
    each side (joined by spaces, backends.Document's `context`) and its neighbours' iids,
    from catalog.session_rows."""
    context: dict[int, list[str]] = {}
    around: list[tuple[int, list[int]]] = []
    for members in rows.values():
        texts = [text for _, text in members]
        for position, (iid, _) in enumerate(members):
            window = range(max(0, position - CONTEXT), min(len(members), position + CONTEXT + 1))
            context[iid] = [texts[i] for i in window]
            around.append((iid, [members[i][0] for i in window if i != position]))
    return context, around


def _session_documents(rows: dict[str, list[tuple[int, str]]]) -> list[Document]:
    """The sessions index's documents: one per session, its memories' text in time order."""
    return [
        {
            "id": name,
            "iid": name_code(name),
            "text": " ".join(text for _, text in members),
            "time": 0,
        }
        for name, members in rows.items()
        if members
    ]


def fulltext_documents(
    catalog: CatalogReader, memdir: Memdir | None = None
) -> tuple[list[Document], list[Document]]:
    """Every document of the two full-text indexes, from the catalog: the memories', and one
    per session (compaction writes them again; a read-only memdir loads them into memory).
    With `memdir`, each memory's document holds its attachments' text too."""
    memories = [memory for memory in catalog.all_memories() if memory.searchable]
    rows = catalog.session_rows(
        sorted({m.line["session"] for m in memories if m.line.get("session")})
    )
    context, _ = _contexts(rows)
    attached = attached_texts(memdir, catalog, memories) if memdir is not None else {}
    texts = [_document(m, context.get(m.iid, [m.text]), attached.get(m.iid)) for m in memories]
    return texts, _session_documents(rows)


def attached_texts(
    memdir: Memdir, catalog: CatalogReader, memories: list[CatalogMemory]
) -> dict[int, str]:
    """Each memory's attachments' indexed text (their names, metadata and extracted text, from
    the sidecars), by iid: the links in its line and its `attachment` link events."""
    if not memories or not any(place.is_dir() for place in attachments.folders(memdir)):
        return {}
    added: dict[str, list[dict[str, Any]]] = {}
    for event in catalog.events_for(memory.id for memory in memories):
        if event.get("op") == "link" and event.get("link_type") == attachments.LINK_TYPE:
            added.setdefault(event["target"], []).append({"type": attachments.LINK_TYPE,
                                                          "to": event.get("to")})  # fmt: skip
    found: dict[int, str] = {}
    for memory in memories:
        ids = attachments.linked([*memory.line.get("links", ()), *added.get(memory.id, ())])
        if ids:
            sealed = memory.line.get("visibility") == "sealed"
            text = attachments.texts(memdir, ids, sealed=sealed)
            if text:
                found[memory.iid] = text
    return found


def _document(memory: CatalogMemory, context: list[str], attached: str | None = None) -> Document:
    """A memory's full-text document, its context the texts in `context` (_contexts); its
    attachments' text (`attached`) is searched with its own, in the text and the context
    fields."""
    line = memory.line
    joined = " ".join(context)
    kind = line.get("type")
    label = f"{kind}:{line['subtype']}" if kind and line.get("subtype") else kind
    document: Document = {
        "id": line["id"],
        "iid": memory.iid,
        "text": f"{line['text']}\n{attached}" if attached else line["text"],
        "context": f"{joined}\n{attached}" if attached else joined,
        "context_parts": context,
        "status": memory.status,
        "type": label,
        "source": line["source"],
        "persona": line.get("personas") or [],
        "session": line.get("session"),
        "time": _epoch(line["created"]),
    }
    meta = line.get("meta") or {}
    for name in META_FIELDS:
        if meta.get(name):
            document[name] = str(meta[name])  # type: ignore[literal-required]
    return document
