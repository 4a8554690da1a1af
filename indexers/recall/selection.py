"""From the ranking to the results: guaranteed slots, counterweights for strongly negative
queries, near-duplicate collapse (MMR optional, off by default) and the token budget."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from memdir.archive_format.documents import estimate_tokens
from memdir.archive_format.settings import VerdictSettings

from .options import RecallOptions
from .result import Candidate, Stage, Trace

if TYPE_CHECKING:
    from .interface import RecallIndex

COUNTERWEIGHT_SHARE = 0.6  # of the results, at most 40 % negative (k=5: 2) when balance exists
ON_TOPIC = 0.5  # a counterweight must be at least half as similar to the query as the best
SUBJECT_FLOOR = 0.25  # …or on the same subject, and then still a quarter as similar
# Words too common to name a subject (the subject words are shared by the query and its best
# result, which already drops most function words; these are what is left).
COMMON = frozenset(
    """about after again also been before being could does every feel feeling felt from have
    just like more much never only really same some than that them then there they thing this
    very were what when which while will with would your""".split()
)
_TERM = re.compile(r"[a-z]{4,}")
DUPLICATE_COSINE = 0.97


def reserve_guaranteed(ranked: list[Candidate], options: RecallOptions,
                       thresholds: VerdictSettings) -> tuple[list[Candidate], Trace]:  # fmt: skip
    """Top k, with up to `guaranteed_slots` pinned / milestone memories in the room weak hits
    leave: a guaranteed memory never evicts the best hit, a hard fact, another guaranteed
    memory or a hit clearly about the query (raw cosine or BM25 at the GROUNDED threshold), so
    at a small k the channel yields instead of the answer (docs/RECALL.md)."""
    trace = Trace(Stage.GUARANTEED)
    chosen = ranked[: options.k]
    # the channel keeps a pinned or milestone memory in sight of a query it bears on, at least
    # weakly (the verdict's LOW_CONFIDENCE thresholds), never in slots the query has no use for
    pinned = [c for c in ranked if "guaranteed" in c.channels and c not in chosen
              and _bears_on(c, thresholds)]  # fmt: skip
    unrelated = sum(1 for c in ranked if "guaranteed" in c.channels and c not in chosen) - len(
        pinned
    )
    if unrelated:
        trace.notes.append(f"{unrelated} guaranteed memories left out: not about the query")
    already = sum(1 for c in chosen if "guaranteed" in c.channels)
    for candidate in pinned[: max(0, options.guaranteed_slots - already)]:
        if len(chosen) < options.k:
            out = None
        else:
            weak = [c for c in chosen[1:] if not _protected(c, thresholds)]
            if not weak:
                trace.notes.append(f"{candidate.id} yields: every result is a better hit")
                break
            out = weak[-1]
            chosen.remove(out)
            trace.rows.append({"in": candidate.id, "out": out.id})
        candidate.note = candidate.note or "guaranteed slot (pinned or milestone)"
        chosen.append(candidate)
    if not trace.rows and not trace.notes:
        trace.notes.append("no guaranteed memory outside the results")
    return chosen, trace


def _bears_on(candidate: Candidate, thresholds: VerdictSettings) -> bool:
    """Whether a guaranteed memory is about the query at all: raw cosine at the verdict's
    weak threshold, or any BM25 match."""
    return (
        candidate.raw.get("cosine", 0.0) >= thresholds.weak_cosine
        or candidate.raw.get("bm25", 0.0) > 0
    )


def _protected(candidate: Candidate, thresholds: VerdictSettings) -> bool:
    """A result a guaranteed memory may not take the place of."""
    return (
        "hard-fact" in candidate.channels
        or "guaranteed" in candidate.channels
        or candidate.raw.get("cosine", 0.0) >= thresholds.grounded_cosine
        or candidate.raw.get("bm25", 0.0) >= thresholds.grounded_bm25
    )


def counterweigh(query: str, ranked: list[Candidate], chosen: list[Candidate],
                options: RecallOptions, negative: bool) -> tuple[list[Candidate], Trace]:  # fmt: skip
    """For a strongly negative query, a bounded share of the results goes to relevant memories
    that are not negative (unless switched off)."""
    trace = Trace(Stage.COUNTERWEIGHTS)
    if options.counterweights and negative:
        chosen = _counterweigh(query, ranked, chosen, options.k, trace)
    elif negative:
        trace.notes.append("strongly negative query, counterweights switched off")
    else:
        trace.notes.append("query not strongly negative: nothing to balance")
    return chosen, trace


def subject_terms(text: str) -> set[str]:
    """The words that can name a subject: four letters or more, not COMMON, plural 's' off."""
    found = set()
    for word in _TERM.findall(text.lower()):
        word = word[:-1] if word.endswith("s") and not word.endswith("ss") else word
        if word not in COMMON:
            found.add(word)
    return found


def _counterweigh(
    query: str, ranked: list[Candidate], chosen: list[Candidate], k: int, trace: Trace
) -> list[Candidate]:
    """Keep relevance, but give a bounded share of the results to relevant non-negative
    memories — on the query, or on the same subject as the best result."""
    share = max(1, int(round(k * COUNTERWEIGHT_SHARE)))
    have = sum(1 for c in chosen if float(c.affect.get("valence", 0.0)) >= 0)
    if have >= share or not chosen:
        trace.notes.append(f"already {have} non-negative memories among the results")
        return chosen
    # "Relevant" is judged on absolute similarity, not on pool-normalised scores (min-max
    # would call the weakest candidate irrelevant however close it is): a counterweight is at
    # least half as close to the query as the best candidate, or at least as close as the
    # result it replaces (by cosine or BM25), so no slot trades relevance for mood.
    best_cosine = max(c.raw.get("cosine", 0.0) for c in ranked)
    best_bm25 = max(c.raw.get("bm25", 0.0) for c in ranked)

    def cosine(c: Candidate) -> float:
        return c.raw.get("cosine", 0.0)

    def bm25(c: Candidate) -> float:
        return c.raw.get("bm25", 0.0)

    balancing = [c for c in ranked if c not in chosen and float(c.affect.get("valence", 0.0)) >= 0]
    # The subject: the words the query shares with its best result. A strongly negative
    # query's wording is mostly its mood, so by cosine "the user was praised at work" is far
    # from "work is unbearable, I feel worthless"; it shares the subject, "work", with it and
    # with "my manager humiliated me at work". A memory sharing no subject word never enters.
    subject = subject_terms(query) & subject_terms(chosen[0].memory.text)

    def same_subject(c: Candidate) -> bool:
        if cosine(c) < SUBJECT_FLOOR * best_cosine:
            return False
        return bool(subject & subject_terms(c.memory.text))

    def may_replace(c: Candidate, out: Candidate) -> bool:
        if cosine(c) >= ON_TOPIC * best_cosine or cosine(c) >= cosine(out) or same_subject(c):
            return True
        return bm25(c) > 0 and (bm25(c) >= ON_TOPIC * best_bm25 or bm25(c) >= bm25(out))

    result = list(chosen)
    for _ in range(share - have):
        negatives = [
            c
            for c in result
            if float(c.affect.get("valence", 0.0)) < 0 and "hard-fact" not in c.channels
        ]
        if not negatives:
            break
        out = negatives[-1]
        candidate = next((c for c in balancing if may_replace(c, out)), None)
        if candidate is None:
            break
        balancing.remove(candidate)
        result.remove(out)
        result.append(candidate)
        candidate.note = "counterweight: relevant and not negative"
        if not (cosine(candidate) >= ON_TOPIC * best_cosine or cosine(candidate) >= cosine(out)):
            candidate.note = "counterweight: same subject as the best result, not negative"
        trace.rows.append({"in": candidate.id, "out": out.id, "relevance": round(candidate.relevance, 4),
                           "valence": candidate.affect.get("valence")})  # fmt: skip
    trace.notes.append(
        f"strongly negative query: reserved up to {share} of {k} results for non-negative memories"
        f" (subject: {', '.join(sorted(subject)) or 'none'})"
    )
    return result


def diversify(index: RecallIndex, chosen: list[Candidate], ranked: list[Candidate],
              options: RecallOptions) -> tuple[list[Candidate], Trace]:  # fmt: skip
    """Near-duplicates (the same text, or cosine ≥ DUPLICATE_COSINE) collapse to the better
    ranked one, MMR re-ranks when asked, and the ranking refills the room duplicates left."""
    trace = Trace(Stage.DIVERSITY)
    vectors = index.vectors_for(
        [c.memory for c in ranked[: options.k * 3]] + [c.memory for c in chosen]
    )
    kept: list[Candidate] = []
    for candidate in chosen:
        own = vectors.get(candidate.memory.iid)
        duplicate_of = None
        for other in kept:
            theirs = vectors.get(other.memory.iid)
            same_text = " ".join(candidate.memory.text.lower().split()) == " ".join(
                other.memory.text.lower().split()
            )
            if same_text or (
                own is not None and theirs is not None and float(own @ theirs) >= DUPLICATE_COSINE
            ):
                duplicate_of = other
                break
        if duplicate_of is not None:
            trace.rows.append({"dropped": candidate.id, "duplicate_of": duplicate_of.id})
            continue
        kept.append(candidate)
    if options.mmr:
        trace.notes.append("MMR re-ranking on (λ = 0.7)")
        kept = _mmr(kept, vectors, 0.7)
    # refill from the ranking when duplicates left room
    for candidate in ranked:
        if len(kept) >= options.k:
            break
        if candidate not in kept and candidate not in chosen:
            own = vectors.get(candidate.memory.iid)
            if own is not None and any(
                (v := vectors.get(o.memory.iid)) is not None and float(own @ v) >= DUPLICATE_COSINE
                for o in kept
            ):
                continue
            kept.append(candidate)
    return kept, trace


def _mmr(candidates: list[Candidate], vectors: dict[int, Any], balance: float) -> list[Candidate]:
    remaining = list(candidates)
    picked: list[Candidate] = []
    while remaining:

        def value(c: Candidate) -> float:
            own = vectors.get(c.memory.iid)
            overlap = max((float(own @ vectors[p.memory.iid]) for p in picked
                           if own is not None and p.memory.iid in vectors), default=0.0)  # fmt: skip
            return balance * c.score - (1 - balance) * overlap

        best = max(remaining, key=value)
        picked.append(best)
        remaining.remove(best)
    return picked


def fit_budget(chosen: list[Candidate], budget: int | None) -> tuple[list[Candidate], Trace]:
    """The results, in order, while their estimated tokens fit the budget."""
    trace = Trace(Stage.BUDGET)
    if budget is None:
        trace.notes.append("no token budget")
        return chosen, trace
    used = 0
    kept: list[Candidate] = []
    for candidate in chosen:
        cost = estimate_tokens(candidate.memory.text)
        if used + cost > budget:
            trace.rows.append({"dropped": candidate.id, "tokens": cost})
            continue
        used += cost
        kept.append(candidate)
    trace.notes.append(f"{used} of {budget} tokens used")
    return kept, trace
