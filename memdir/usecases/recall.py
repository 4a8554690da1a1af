"""The recall use case: bring the index up to date, recall, record what surfaced."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memdir.archive_format import visibility
from memdir.archive_format.errors import LockedError
from memdir.archive_format.lifecycle import record_recall
from memdir.archive_format.memdir import Memdir

if TYPE_CHECKING:
    from memdir.indexers.index import MemoryIndex, Progress
    from memdir.indexers.recall import RecallOptions, RecallResult
    from memdir.indexers.recall.query import QueryAnalysis

log = logging.getLogger("memdir")


def fresh_index(memdir: Memdir, progress: Progress | None = None) -> MemoryIndex:
    """The memdir's index, updated from the shelf checkpoints when they moved (in `memdir
    serve`, the one it keeps open)."""
    from memdir.indexers.index import MemoryIndex
    from memdir.indexers.storage import resident_index

    index = resident_index(memdir, MemoryIndex) or MemoryIndex(memdir)
    if index.needs_update():
        index.update(progress)
    return index


def check_profile(memdir: Memdir, profile: str | None) -> None:
    """A weight profile that does not exist is the caller's mistake (BadInputError)."""
    from memdir.indexers.recall.options import profile_weights

    profile_weights(memdir.settings.recall, profile)


def recall(
    memdir: Memdir,
    query: str,
    now: datetime,
    options: RecallOptions,
    record: bool = True,
    actor: str = "user",
    progress: Progress | None = None,
    index: MemoryIndex | None = None,
) -> RecallResult:
    """Recall for `query` at `now`; unless `record` is off, the surfaced ids are appended to the
    recall shelf (rehearsal statistics) and the console ring. A busy lock skips the record.

    Recall scoped to `options.island` draws from that island's live members (an unknown
    island is NotFoundError). A long-lived caller (the MCP server) passes a fresh `index` built
    with its already-loaded embedder; it is brought up to date and closed here like the default
    one."""
    from memdir.indexers.recall import recall as run_recall

    from .islands import live_members

    try:
        check_profile(memdir, options.profile)  # (before any index work)
        if options.island is not None and options.members is None:
            options = replace(options, members=live_members(memdir, options.island, now))
        if index is None:
            index = fresh_index(memdir, progress)
        elif index.needs_update():
            index.update(progress)
        result = index.answer(lambda: run_recall(index, query, now, options))
    finally:
        if index is not None:
            index.close()
    if record and result.results:
        if not writable(memdir):
            log.warning("the memdir is read-only; this recall was not recorded")
            return result
        try:
            record_recall(memdir, [c.id for c in result.results], now, actor, f"recall: {query}")
        except LockedError:
            log.warning("the memdir is busy; this recall was not recorded")
    return result


def writable(memdir: Memdir) -> bool:
    """Whether a recall can be recorded: the shelves and the lock's directory are writable
    (False on a read-only mount, a backup; as root only a read-only mount says so)."""
    return all(os.access(path, os.W_OK) for path in (memdir.memory_shelf.parent, memdir.cache_dir))


def search(
    memdir: Memdir,
    query: str,
    now: datetime,
    k: int = 10,
    surface: str = "search",
    asked: Iterable[str] = (),
    index: MemoryIndex | None = None,
    field: str = "text",
) -> list[dict[str, Any]]:
    """`search` (full text on `field`, with snippets) or `similar` (vectors) as the policy lets
    them show: each hit with its status and visibility at `now`, what the reader did not ask for
    left out. `asked` holds "private" and "expired" when the reader asked for those."""
    from memdir.archive_format.lifecycle import view_of

    index = index or fresh_index(memdir)
    if index.needs_update():
        index.update()
    try:
        if surface == "search":
            hits = index.search(query, k * 3, field)
        else:
            hits = index.similar(query, k * 3)
    finally:
        index.close()
    states = view_of(memdir, [hit.id for hit in hits], now).states
    rows: list[dict[str, Any]] = []
    for hit in hits:
        state = states.get(hit.id)
        memory = state.memory if state else None
        if state is None or memory is None:
            continue
        text = visibility.present(surface, hit.text, state.status, memory.visibility, asked=asked)
        if text is None:
            continue
        row = {"id": hit.id, "text": text, "score": round(hit.score, 4), "status": state.status,
               "visibility": memory.visibility, "source": memory.source,
               "marker": visibility.marker(state.status, memory.visibility)}  # fmt: skip
        rows.append({**row, "snippet": hit.snippet} if surface == "search" else row)
    return rows[:k]


JOURNAL_GROUP = "from the journal — verbatim turns, not memories"
# What the assistant gets of a journal hit (MCP): no visibility or summaries to reason from,
# since it only ever gets normal turns, and a summary of a group of turns may be private.
ASSISTANT_TURN = ("id", "at", "session", "topic", "role", "channel", "trusted", "text", "matched")


def journal_words(analysis: QueryAnalysis) -> str:
    """The words a journal search for a recalled query looks for: recall's BM25 words (stop
    words off) without the words of its time window — "last week" would match every turn that
    says "week"."""
    from memdir.indexers.recall.query import bm25_terms

    query = analysis.query
    if analysis.window:
        query = re.sub(re.escape(analysis.window.phrase), " ", query, flags=re.IGNORECASE)
    return bm25_terms(query)


def journal_group(
    memdir: Memdir, recalled: RecallResult, k: int, include_private: bool = False,
    assistant: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """Recall's journal group (`--include-journal`, MCP `include_journal`): the journal's turns
    — imported and journalled conversations — that hold the query's words (recall's BM25 words:
    stop words and the words of a time window off), found by `journal search` as the policy's
    row for the reader lets it show (the assistant's: normal turns only). It stands apart from
    the memories: it neither ranks them nor counts for the verdict."""
    from .journal import search_terms, search_turns

    surface = "recall include_journal (MCP)" if assistant else "recall --include-journal"
    words = journal_words(recalled.analysis)
    rows = search_turns(memdir, words, recalled.now, k, include_private, surface)
    if assistant:
        rows = [{name: row[name] for name in ASSISTANT_TURN if name in row} for row in rows]
    return {"label": JOURNAL_GROUP, "terms": sorted(search_terms(words)), "turns": rows}
