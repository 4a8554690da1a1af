"""The grounding verdict: GROUNDED, LOW_CONFIDENCE or NO_DATA."""

from __future__ import annotations

from memdir.archive_format.settings import VerdictSettings

from .result import Candidate


def verdict(results: list[Candidate], thresholds: VerdictSettings) -> str:
    """GROUNDED when a durable result is clearly about the query (by raw cosine or BM25, or a
    hard fact the query names), LOW_CONFIDENCE when only weakly, or only through what nobody
    vouches for — a provisional inference (an assistant's guess, a summary of its words) or an
    expired one (`--include-expired`) — or when durable results lie inside the time window a
    query like "what happened yesterday?" names; NO_DATA when nothing relevant survived.
    Every result counts, not only the first, so a tie at the top cannot flip it
    (docs/RECALL.md section 7)."""
    if not results:
        return "NO_DATA"
    best_cosine = max(c.raw.get("cosine", 0.0) for c in results)
    best_bm25 = max(c.raw.get("bm25", 0.0) for c in results)
    vouched = [c for c in results if c.status == "durable"]
    if any("hard-fact" in c.channels for c in vouched):
        return "GROUNDED"
    if any(grounds(c, thresholds) for c in vouched):
        return "GROUNDED"
    in_window = any(c.components.get("when", 0.0) >= 1.0 for c in vouched)
    if best_cosine >= thresholds.weak_cosine or best_bm25 > 0 or in_window:
        return "LOW_CONFIDENCE"
    return "NO_DATA"


def grounds(candidate: Candidate, thresholds: VerdictSettings) -> bool:
    """Whether one result is clearly about the query: raw cosine or BM25 at the GROUNDED
    thresholds (its status aside)."""
    return (
        candidate.raw.get("cosine", 0.0) >= thresholds.grounded_cosine
        or candidate.raw.get("bm25", 0.0) >= thresholds.grounded_bm25
    )
