"""The candidate pool: the best-scored memories of the scope (the shortlist), the bounded
guaranteed channel (pinned / milestones) and hard facts (the memories of the keys the query
names), each with its relevance components.

The scope is every memory while the archive is small (an in-process table), else a pool: FAISS
top-N ∪ Tantivy top-N on text and context ∪ a lexical channel for acronyms and proper nouns.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from memdir.archive_format.visibility import exposure, present

from ..catalog import CatalogMemory
from .options import RecallOptions
from .relevance import PAIRED, RELEVANCE, Scored, demote_questions, score_pool, score_table
from .result import Candidate, Stage, Trace
from .score import blend, relevance_weight

if TYPE_CHECKING:
    import numpy as np

    from .interface import RecallIndex
    from .query import QueryAnalysis


def gather(
    index: RecallIndex, analysis: QueryAnalysis, vector: np.ndarray, now: datetime,
    options: RecallOptions, weights: dict[str, float],
) -> tuple[list[Candidate], Trace]:  # fmt: skip
    """The pool, each candidate with its relevance components, and its trace."""
    pool: dict[int, Candidate] = {}
    scored = _score_scope(index, analysis, vector, now, options, weights, pool)
    for memory in index.catalog.guaranteed(options.guaranteed_slots * 5):
        _add(pool, memory, "guaranteed")
    if options.members:  # an island's members are candidates whatever they score (filters apply)
        for memory in index.catalog.memories_by_id(options.members).values():
            _add(pool, memory, "island")
    if analysis.keys:
        keyed = index.catalog.memories_by_id(index.catalog.ids_with_keys(analysis.keys))
        for memory in keyed.values():
            _add(pool, memory, "hard-fact")
    _attach(pool, scored, weights)
    trace = Trace(
        Stage.POOL,
        [
            {"id": c.id, "channels": sorted(c.channels), "text": _shown_text(c, options)}
            for c in pool.values()
        ],
    )
    trace.notes.append(
        f"scope: every memory ({len(scored.iids)}), normalised over all of them"
        if scored.exact
        else f"scope: a pool of {len(scored.iids)} from FAISS and both Tantivy fields"
    )
    strength = weights.get("questions", 0.0)
    if strength > 0:  # said whatever the scope holds: a count would tell of hidden memories
        trace.notes.append(
            f"questions: memories that are mostly questions keep × {1 - strength:.2f}"
            f" of their four text components (weight questions {strength:g})"
        )
    return list(pool.values()), trace


def _shown_text(candidate: Candidate, options: RecallOptions) -> str:
    """A pool member's text for --explain, or why it is withheld: the pool comes before the
    filters, and --explain (also through MCP) must not show what the filters would drop
    (the filters mask by status too: policy.masked_pool)."""
    line = candidate.memory.line
    exposed = exposure(line.get("visibility", "normal"))
    text = present("recall", candidate.memory.text, None, line.get("visibility", "normal"),
                   asked=options.asked)  # fmt: skip
    return f"[{exposed}]" if text is None else text


def _add(pool: dict[int, Candidate], memory: CatalogMemory, channel: str) -> Candidate:
    candidate = pool.get(memory.iid)
    if candidate is None:
        candidate = pool[memory.iid] = Candidate(memory)
    candidate.channels.add(channel)
    return candidate


def _score_scope(index: RecallIndex, analysis: QueryAnalysis, vector: np.ndarray, now: datetime,
                 options: RecallOptions, weights: dict[str, float],
                 pool: dict[int, Candidate]) -> Scored:  # fmt: skip
    """Score the scope and put its shortlist into the pool."""
    table = index.scoring_table()
    channels: dict[int, str] = {}  # how each came in: by the pool's indexes, or "scored"
    pairs = any(weights.get(name, 0.0) for name in PAIRED)  # else left 0: they cost a product
    if table is not None:
        mask = table.created <= int(now.timestamp())
        scored = score_table(index, table, analysis, vector, mask, pairs)
    else:
        scored, channels = _score_pool(index, analysis, vector, now, options, pairs)
    demote_questions(scored, weights.get("questions", 0.0))
    shortlist = _shortlist(scored, weights, options)
    memories = index.catalog.memories_by_iid(shortlist)
    for iid in shortlist:
        if iid in memories:  # (another process may have rebuilt the catalog meanwhile)
            _add(pool, memories[iid], channels.get(iid, "scored"))
    return scored


def _score_pool(index: RecallIndex, analysis: QueryAnalysis, vector: np.ndarray, now: datetime,
                options: RecallOptions, pairs: bool) -> tuple[Scored, dict[int, str]]:  # fmt: skip
    """A large archive's scope: the top of each index, and the channel each memory came by."""
    size = 2 * shortlist_size(options)
    # as in the exact scope, memories from after `now` are not scored (Tantivy searches only
    # before it; FAISS cannot, so its hits are filtered); a time window adds the best BM25
    # matches inside it, so memories it ranks up can be in the pool at all
    start, end = -(1 << 62), int(now.timestamp()) + 1
    before = (start, end)
    bm25 = {
        name: index.fulltext.scores(analysis.bm25_query, size, name, between=before)
        for name in ("text", "context", "meta")
    }
    lexical: list[int] = []
    if analysis.names:
        names = " ".join(f'"{name}"' for name in analysis.names)
        lexical = list(index.fulltext.scores(names, size, "text", between=before))
    windowed: dict[int, float] = {}
    if analysis.window is not None:
        inside = (int(analysis.window.start.timestamp()),
                  min(end, int(analysis.window.end.timestamp())))  # fmt: skip
        windowed = index.fulltext.scores(analysis.bm25_query, size, "text", between=inside)
        bm25["text"] = {**windowed, **bm25["text"]}  # the same BM25 scores, more of them
    found: dict[int, str] = {iid: "vector" for iid, _ in index.vector_hits(vector, size)}
    for name, hits in bm25.items():
        for iid in hits:
            found.setdefault(iid, {"text": "fulltext"}.get(name, name))
    for iid in lexical:
        found.setdefault(iid, "lexical")
    for iid in windowed:
        found.setdefault(iid, "time window")
    scored = score_pool(index, list(found), analysis, vector, bm25, (start, end), pairs)
    return scored, found


def _shortlist(scored: Scored, weights: dict[str, float], options: RecallOptions) -> list[int]:
    """The iids of the scope's best memories by the blend of their relevance components."""
    import numpy as np

    order = np.argsort(-blend(scored.normalised, weights, RELEVANCE), kind="stable")
    return [scored.iids[i] for i in order[: shortlist_size(options)]]


def shortlist_size(options: RecallOptions) -> int:
    """How many of the best-scored memories go on to the filters and priors (in a pool scope,
    each index contributes twice as many). 20, 30, 60 or 100 for k = 10 score the same on the
    LoCoMo dev file; the margin is for provenance weights and filters that reorder or drop."""
    return max(options.pool, options.k * 3)


def _attach(pool: dict[int, Candidate], scored: Scored, weights: dict[str, float]) -> None:
    """Give each pooled candidate its relevance components (0 for those outside the scope)."""
    position = scored.positions({c.memory.iid for c in pool.values()})
    scale = relevance_weight(weights)
    for candidate in pool.values():
        i = position.get(candidate.memory.iid)
        for name in RELEVANCE:
            candidate.components[name] = float(scored.normalised[name][i]) if i is not None else 0.0
        candidate.raw["cosine"] = float(scored.raw["semantic"][i]) if i is not None else 0.0
        candidate.raw["bm25"] = float(scored.raw["bm25"][i]) if i is not None else 0.0
        candidate.raw["asks"] = float(scored.asks[i]) if i is not None else 0.0
        candidate.relevance = blend(candidate.components, weights, RELEVANCE) / scale
