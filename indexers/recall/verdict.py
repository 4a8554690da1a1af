"""The grounding verdict: GROUNDED, LOW_CONFIDENCE or NO_DATA."""

from __future__ import annotations

from memdir.archive_format.settings import VerdictSettings

from .result import Candidate


def verdict(results: list[Candidate], thresholds: VerdictSettings) -> str:
    """GROUNDED when a durable result is clearly about the query, LOW_CONFIDENCE when only
    weakly or only through what the user has not confirmed (a provisional inference: an
    assistant's guess, a summary of its words), NO_DATA when nothing relevant survived.
    Thresholds on raw cosine and BM25 (docs/RECALL.md)."""
    if not results:
        return "NO_DATA"
    best_cosine = max(c.raw.get("cosine", 0.0) for c in results)
    best_bm25 = max(c.raw.get("bm25", 0.0) for c in results)
    vouched = [c for c in results if c.status != "provisional"]
    if any("hard-fact" in c.channels for c in vouched):
        return "GROUNDED"
    grounding_cosine = max((c.raw.get("cosine", 0.0) for c in vouched), default=0.0)
    grounding_bm25 = max((c.raw.get("bm25", 0.0) for c in vouched), default=0.0)
    if grounding_cosine >= thresholds.grounded_cosine or grounding_bm25 >= thresholds.grounded_bm25:
        return "GROUNDED"
    if best_cosine >= thresholds.weak_cosine or best_bm25 > 0:
        return "LOW_CONFIDENCE"
    return "NO_DATA"
