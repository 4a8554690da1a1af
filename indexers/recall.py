"""Recall: what should the assistant remember right now, and why.

Stages (each recorded for `--explain` and `--json`):
1. query analysis: affect, time window, acronyms and proper nouns, supersede keys it names;
2. candidate pool: the best-scored memories of the scope (every memory while the archive is
   small, else FAISS top-N ∪ Tantivy top-N on text and context ∪ a lexical channel for
   acronyms and proper nouns), ∪ a bounded guaranteed channel (pinned / milestones) ∪ hard
   facts; relevance components in indexers/scoring.py;
3. filters: status at *now* (re-folded from the lines), persona, visibility, per-type age
   cut-offs, the query's time window;
4. score: a weighted blend of normalised components times the provenance weight;
5. counterweights: for strongly negative queries, a bounded share of the results goes to
   relevant memories that are not negative;
6. diversity: near-duplicates collapse (MMR optional, off by default);
7. budget and verdict.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memdir.archive_format.clock import format_time, local_zone, parse_duration, parse_time
from memdir.archive_format.documents import estimate_tokens
from memdir.archive_format.fold import fold
from memdir.archive_format.visibility import Withheld, withheld

from .blas import single_thread
from .catalog import CatalogMemory
from .query import QueryAnalysis, analyse
from .timewindow import TimeWindow

if TYPE_CHECKING:
    import numpy as np

    from .affect import Affect
    from .index import MemoryIndex
    from .scoring import Scored

RELEVANCE = ("semantic", "bm25", "context_semantic", "context_bm25", "speaker", "session")
PRIORS = ("affect", "degree", "recency", "importance", "keyword")
COMPONENTS = RELEVANCE + PRIORS

PROFILES: dict[str, dict[str, float]] = {
    # Tuned on the LoCoMo dev file (docs/RECALL.md): the six relevance components, light
    # importance and link-degree priors. Affect resonance and recency measured as a small loss
    # there (R@10 0.804 → 0.798), so they are 0 here; time is decay's job (rehearsal-aware).
    "default": {
        "semantic": 1.0, "bm25": 1.0, "context_semantic": 1.0, "context_bm25": 1.0,
        "speaker": 1.0, "session": 0.5, "affect": 0.0, "degree": 0.1, "recency": 0.0,
        "importance": 0.1, "keyword": 0.0, "half_life_days": 30.0,
    },
    # CAMA's blend: 0.45 semantic, 0.25 affect, 0.15 relational degree, 0.15 recency (30 days).
    "cama": {
        "semantic": 0.45, "affect": 0.25, "degree": 0.15, "recency": 0.15, "half_life_days": 30.0,
    },
    # ANIMA's blend: 0.60 similarity, 0.25 importance, 0.15 recency, keyword boost up to 0.15.
    "anima": {
        "semantic": 0.60, "importance": 0.25, "recency": 0.15, "keyword": 0.15,
        "half_life_days": 30.0,
    },
}  # fmt: skip

DEFAULT_CUTOFFS = {"emotion": "48h", "date": "168h", "financial": "168h"}
DEFAULT_HALF_LIVES = {"fact": 3650.0, "rule": 3650.0, "howto": 3650.0, "emotion": 2.0}
PROVENANCE = {"durable": 1.0, "provisional": 0.4, "expired": 0.2}
EXCLUDED = {"rejected": "rejected", "superseded": "superseded", "forgotten": "forgotten"}
COUNTERWEIGHT_SHARE = 0.3
ON_TOPIC = 0.5  # a counterweight must be at least half as similar to the query as the best
DUPLICATE_COSINE = 0.97


@dataclass(frozen=True)
class RecallOptions:
    """How to recall; the defaults are what `memdir recall QUERY` does."""

    k: int = 10
    profile: str | None = None
    include_expired: bool = False
    include_private: bool = False
    persona: str | None = None
    budget: int | None = None
    counterweights: bool = True
    mmr: bool = False
    pool: int = 30  # the best-scored memories that go on to the filters and priors (≥ 3·k)
    guaranteed_slots: int = 2
    perfect: bool = False  # ignore decay (`memdir recall --perfect`)


@dataclass
class Candidate:
    memory: CatalogMemory
    channels: set[str] = field(default_factory=set)
    raw: dict[str, float] = field(default_factory=dict)
    components: dict[str, float] = field(default_factory=dict)
    status: str = ""
    weight: float = 1.0
    relevance: float = 0.0
    score: float = 0.0
    affect: dict[str, Any] = field(default_factory=dict)
    dropped: str | None = None
    note: str = ""

    @property
    def id(self) -> str:
        return self.memory.id

    def to_dict(self) -> dict[str, Any]:
        line = self.memory.line
        return {
            "id": self.memory.id,
            "text": self.memory.text,
            "score": round(self.score, 4),
            "relevance": round(self.relevance, 4),
            "components": {name: round(value, 4) for name, value in self.components.items()},
            "raw": {name: round(value, 4) for name, value in self.raw.items()},
            "status": self.status,
            "weight": self.weight,
            "source": line["source"],
            "created": line["created"],
            "type": line.get("type"),
            "session": line.get("session"),
            "channels": sorted(self.channels),
            "note": self.note,
        }


@dataclass
class Stage:
    name: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class RecallResult:
    analysis: QueryAnalysis
    now: datetime
    profile: str
    verdict: str
    results: list[Candidate]
    stages: list[Stage]
    milliseconds: float = 0.0

    def to_dict(self, explain: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "query": self.analysis.query,
            "now": format_time(self.now),
            "profile": self.profile,
            "verdict": self.verdict,
            "results": [candidate.to_dict() for candidate in self.results],
            "analysis": self.analysis.to_dict(),
            "milliseconds": round(self.milliseconds, 2),
        }
        if explain:
            data["stages"] = [
                {"name": s.name, "rows": s.rows, "notes": s.notes} for s in self.stages
            ]
        return data


def profile_weights(settings: dict[str, Any], name: str | None) -> tuple[str, dict[str, float]]:
    """The named weight profile, with overrides from memdir.yaml (recall.profiles.NAME)."""
    recall_settings = settings.get("recall") or {}
    chosen = name or str(recall_settings.get("profile", "default"))
    custom = (recall_settings.get("profiles") or {}).get(chosen) or {}
    if chosen not in PROFILES and not custom:
        raise ValueError(f"unknown recall profile {chosen!r}; known: {', '.join(PROFILES)}")
    weights = {
        **PROFILES.get(chosen, PROFILES["default"]),
        **{k: float(v) for k, v in custom.items()},
    }
    return chosen, weights


def recall(
    index: MemoryIndex, query: str, now: datetime, options: RecallOptions | None = None
) -> RecallResult:
    """Run the whole pipeline; the index should be up to date (see MemoryIndex.update).

    One query is many small matrix products: one BLAS thread does them fastest.
    """
    index.follow_rebuilds()
    with single_thread():
        return _recall(index, query, now, options)


def _recall(
    index: MemoryIndex, query: str, now: datetime, options: RecallOptions | None
) -> RecallResult:

    options = options or RecallOptions()
    began = time.perf_counter()
    settings = index.memdir.settings
    profile, weights = profile_weights(settings, options.profile)
    analysis = analyse(
        query,
        now,
        index.annotator,
        index.catalog.speakers(),
        index.catalog.keys(),
        local_zone(settings),
    )
    stages = [Stage("query analysis", [analysis.to_dict()])]

    # 2. candidate pool: the whole archive while it is small, else the top of each index --------
    vector = index.embedder.embed([analysis.dense_query])[0]
    pool: dict[int, Candidate] = {}
    scored = _relevance(index, analysis, vector, now, options, weights, pool)
    for memory in index.catalog.guaranteed(options.guaranteed_slots * 5):
        _add(pool, memory, "guaranteed")
    if analysis.keys:
        keyed = index.catalog.memories_by_id(index.catalog.ids_with_keys(analysis.keys))
        for memory in keyed.values():
            _add(pool, memory, "hard-fact")
    _attach(pool, scored, weights)
    pool_stage = Stage(
        "candidate pool",
        [
            {"id": c.id, "channels": sorted(c.channels), "text": c.memory.text}
            for c in pool.values()
        ],
    )
    pool_stage.notes.append(
        f"scope: every memory ({len(scored.iids)}), normalised over all of them"
        if scored.exact
        else f"scope: a pool of {len(scored.iids)} from FAISS and both Tantivy fields"
    )
    stages.append(pool_stage)

    # 3. filters -----------------------------------------------------------------------------
    statuses = _fold_statuses(index, list(pool.values()), now)
    cutoffs = {
        name: parse_duration(str(value))
        for name, value in {
            **DEFAULT_CUTOFFS,
            **(settings.get("recall", {}).get("cutoffs") or {}),
        }.items()
    }
    for candidate in pool.values():
        candidate.status = statuses.get(candidate.id, "forgotten")
        candidate.dropped = _filter_reason(candidate, now, analysis.window, options, cutoffs)
    survivors = [c for c in pool.values() if not c.dropped]
    filters = Stage(
        "filters", [{"id": c.id, "status": c.status, "dropped": c.dropped} for c in pool.values()]
    )
    filters.notes.append(f"{len(survivors)} of {len(pool)} candidates kept")
    stages.append(filters)

    # hard facts keep only the current memory per key
    for candidate in survivors:
        if "hard-fact" in candidate.channels:
            candidate.channels.discard("hard-fact")
            if candidate.status == "durable":
                candidate.channels.add("hard-fact")

    # 4. score -------------------------------------------------------------------------------
    _priors(index, survivors, analysis, now, weights, settings)
    # decay: fidelity from rehearsal timestamps lowers the score (indexers/decay.py)
    from .decay import apply_to_recall

    times = index.catalog.rehearsal_times(c.id for c in survivors)
    decay_notes = apply_to_recall(index.memdir, survivors, now, options.perfect, times)
    stages.append(Stage("decay", notes=decay_notes))
    for candidate in survivors:
        candidate.weight = PROVENANCE.get(candidate.status, 1.0)
        candidate.score *= candidate.weight
        if "hard-fact" in candidate.channels:
            candidate.score += 1.0
            candidate.note = "hard fact: the current memory for a key the query names"
    ranked = sorted(survivors, key=lambda c: (-c.score, c.memory.iid))
    stages.append(Stage("score", [_score_row(c) for c in ranked]))

    # 5. counterweights ----------------------------------------------------------------------
    chosen = _reserve_guaranteed(ranked, options)
    counter = Stage("counterweights")
    if options.counterweights and analysis.negative:
        chosen = _counterweigh(ranked, chosen, options.k, counter)
    elif analysis.negative:
        counter.notes.append("strongly negative query, counterweights switched off")
    else:
        counter.notes.append("query not strongly negative: nothing to balance")
    stages.append(counter)

    # 6. diversity ---------------------------------------------------------------------------
    diversity = Stage("diversity")
    chosen = _collapse_duplicates(index, chosen, ranked, options, diversity)
    stages.append(diversity)

    # 7. budget and verdict -------------------------------------------------------------------
    budget = Stage("budget")
    results = _fit_budget(chosen, options.budget, budget)
    stages.append(budget)
    verdict = _verdict(results, settings)
    return RecallResult(
        analysis, now, profile, verdict, results, stages, (time.perf_counter() - began) * 1000
    )


def _fold_statuses(
    index: MemoryIndex, candidates: list[Candidate], now: datetime
) -> dict[str, str]:
    """Each candidate's status at `now`, folded from its lines and those sharing its key."""
    memories = {c.id: c.memory for c in candidates}
    keys = [m.line["key"] for m in memories.values() if m.line.get("key")]
    peers = set(index.catalog.ids_with_keys(keys)) - set(memories)
    if peers:
        memories.update(index.catalog.memories_by_id(peers))
    lines = [m.line for m in memories.values()] + index.catalog.events_for(memories)
    view = fold(lines, now)
    return {memory_id: state.status for memory_id, state in view.states.items()}


def _filter_reason(candidate: Candidate, now: datetime, window: TimeWindow | None, options: RecallOptions,
                   cutoffs: dict[str, timedelta]) -> str | None:  # fmt: skip
    line = candidate.memory.line
    if candidate.status in EXCLUDED:
        return EXCLUDED[candidate.status]
    if candidate.status == "expired" and not options.include_expired:
        return "expired (use --include-expired)"
    if candidate.status not in PROVENANCE:
        return f"status {candidate.status}"
    hidden = withheld(line.get("visibility", "normal"), include_private=options.include_private)
    if hidden is Withheld.PRIVATE:
        return "private (use --include-private)"
    if hidden is not None:
        return hidden.value
    personas = line.get("personas") or []
    if options.persona and personas and options.persona not in personas:
        return f"persona scope {', '.join(personas)}"
    created = parse_time(line["created"])
    for label in (line.get("type"), line.get("subtype")):
        cutoff = cutoffs.get(str(label).lower()) if label else None
        if cutoff is not None and now - created > cutoff:
            return f"older than the {label} cut-off"
    if window is not None and not window.contains(created):
        return "outside time window"
    return None


def _add(pool: dict[int, Candidate], memory: CatalogMemory, channel: str) -> Candidate:
    candidate = pool.get(memory.iid)
    if candidate is None:
        candidate = pool[memory.iid] = Candidate(memory)
    candidate.channels.add(channel)
    return candidate


def _relevance(index: MemoryIndex, analysis: QueryAnalysis, vector: np.ndarray, now: datetime,
               options: RecallOptions, weights: dict[str, float],
               pool: dict[int, Candidate]) -> Scored:  # fmt: skip
    """Score the scope and put its best memories (see _shortlist) into the pool."""
    import numpy as np

    from .scoring import score_pool, score_table

    table = index.scoring_table()
    if table is not None:
        mask = table.created <= int(now.timestamp())
        if analysis.window is not None:
            mask &= (table.created >= int(analysis.window.start.timestamp())) & (
                table.created < int(analysis.window.end.timestamp())
            )
        scored = score_table(index, table, analysis, vector, mask)
        total = _blend(scored, weights)
        best = np.argsort(-total, kind="stable")[: _shortlist(options)]
        memories = index.catalog.memories_by_iid(scored.iids[i] for i in best)
        for i in best:
            if scored.iids[i] in memories:  # (another process may be rebuilding the catalog)
                _add(pool, memories[scored.iids[i]], "scored")
        return scored
    size = 2 * _shortlist(options)
    # as in the exact scope, memories from after `now` or outside the time window are not scored
    # (Tantivy searches only within the window; FAISS cannot, so its hits are filtered)
    start, end = -(1 << 62), int(now.timestamp()) + 1
    window = None
    if analysis.window is not None:
        start = int(analysis.window.start.timestamp())
        end = min(end, int(analysis.window.end.timestamp()))
        window = (start, end)
    bm25 = {
        name: index.fulltext.scores(analysis.bm25_query, size, name, between=window)
        for name in ("text", "context")
    }
    lexical: list[int] = []
    if analysis.names:
        names = " ".join(f'"{name}"' for name in analysis.names)
        lexical = list(index.fulltext.scores(names, size, "text", between=window))
    found: dict[int, str] = {iid: "vector" for iid, _ in index.vector_hits(vector, size)}
    for name, hits in bm25.items():
        for iid in hits:
            found.setdefault(iid, "fulltext" if name == "text" else "context")
    for iid in lexical:
        found.setdefault(iid, "lexical")
    scored = score_pool(
        index, list(found), analysis, vector, bm25["text"], bm25["context"], (start, end)
    )
    # as with the exact scope: only the best go on to the filters and priors
    shortlist = [
        scored.iids[i]
        for i in np.argsort(-_blend(scored, weights), kind="stable")[: _shortlist(options)]
    ]
    memories = index.catalog.memories_by_iid(shortlist)
    for iid in shortlist:
        if iid in memories:  # (another process may have rebuilt the catalog meanwhile)
            _add(pool, memories[iid], found[iid])
    return scored


def _shortlist(options: RecallOptions) -> int:
    """How many of the best-scored memories go on to the filters and priors (in a pool scope,
    each index contributes twice as many). 20, 30, 60 or 100 for k = 10 score the same on the
    LoCoMo dev file; the margin is for provenance weights and filters that reorder or drop."""
    return max(options.pool, options.k * 3)


def _blend(scored: Scored, weights: dict[str, float]) -> np.ndarray:
    import numpy as np

    total = np.zeros(len(scored.iids), dtype=np.float32)
    for name in RELEVANCE:
        total += weights.get(name, 0.0) * scored.normalised[name]
    return total


def _attach(pool: dict[int, Candidate], scored: Scored, weights: dict[str, float]) -> None:
    """Give each pooled candidate its relevance components (0 for those outside the scope)."""
    position = scored.positions({c.memory.iid for c in pool.values()})
    relevance_weight = sum(weights.get(name, 0.0) for name in RELEVANCE) or 1.0
    for candidate in pool.values():
        i = position.get(candidate.memory.iid)
        for name in RELEVANCE:
            candidate.components[name] = float(scored.normalised[name][i]) if i is not None else 0.0
        candidate.raw["cosine"] = float(scored.raw["semantic"][i]) if i is not None else 0.0
        candidate.raw["bm25"] = float(scored.raw["bm25"][i]) if i is not None else 0.0
        candidate.relevance = (
            sum(weights.get(n, 0.0) * candidate.components[n] for n in RELEVANCE) / relevance_weight
        )


def _priors(index: MemoryIndex, candidates: list[Candidate], analysis: QueryAnalysis, now: datetime,
            weights: dict[str, float], settings: dict[str, Any]) -> None:  # fmt: skip
    """Add affect resonance, relational degree, recency, importance and keyword components, and
    compute each score: Σ weight × component over all components, ÷ the relevance weights."""
    from .affect import resonance

    if not candidates:
        return
    degrees = index.catalog.link_degrees()
    top_degree = max([degrees.get(c.id, 0) for c in candidates] + [1])
    query_affect = _as_affect(analysis.affect)
    neutral_query = abs(query_affect.valence) < 0.05 and not any(query_affect.chord.values())
    half_lives = {**DEFAULT_HALF_LIVES, **(settings.get("recall", {}).get("half_lives_days") or {})}
    affects = index.affects_of([c.memory for c in candidates])
    relevance_weight = sum(weights.get(name, 0.0) for name in RELEVANCE) or 1.0
    for candidate in candidates:
        line = candidate.memory.line
        candidate.affect = affects[candidate.id]
        age_days = max(0.0, (now - parse_time(line["created"])).total_seconds() / 86400)
        half_life = float(
            half_lives.get(str(line.get("type") or "").lower(), weights.get("half_life_days", 30.0))
        )
        candidate.raw.update({"age_days": age_days, "degree": degrees.get(candidate.id, 0)})
        bm25 = candidate.components.get("bm25", 0.0)
        candidate.components.update(
            {
                "affect": 0.0
                if neutral_query
                else resonance(query_affect, _as_affect(candidate.affect)),
                "degree": math.log1p(degrees.get(candidate.id, 0)) / math.log1p(top_degree),
                "recency": 0.5 ** (age_days / half_life),
                "importance": (int(line.get("importance", 5)) - 1) / 9,
                "keyword": bm25 if candidate.raw.get("bm25", 0.0) > 0 else 0.0,
            }
        )
        candidate.score = (
            sum(weights.get(name, 0.0) * candidate.components[name] for name in COMPONENTS)
            / relevance_weight
        )


def _as_affect(data: dict[str, Any]) -> Affect:
    from .affect import PLUTCHIK, Affect

    chord = {name: float((data.get("chord") or {}).get(name, 0.0)) for name in PLUTCHIK}
    return Affect(
        valence=float(data.get("valence", 0.0)),
        arousal=float(data.get("arousal", 0.0)),
        chord=chord,
        annotator=str(data.get("annotator", "none")),
    )


def _score_row(candidate: Candidate) -> dict[str, Any]:
    return {"id": candidate.id, "score": candidate.score, "weight": candidate.weight,
            "status": candidate.status, **candidate.components}  # fmt: skip


def _reserve_guaranteed(ranked: list[Candidate], options: RecallOptions) -> list[Candidate]:
    """Top k, with up to `guaranteed_slots` of them kept for pinned / milestone memories."""
    chosen = ranked[: options.k]
    pinned = [c for c in ranked if "guaranteed" in c.channels and c not in chosen]
    for candidate in pinned[: options.guaranteed_slots]:
        already = sum(1 for c in chosen if "guaranteed" in c.channels)
        if already >= options.guaranteed_slots:
            break
        candidate.note = candidate.note or "guaranteed slot (pinned or milestone)"
        if len(chosen) >= options.k:
            chosen = chosen[:-1]
        chosen.append(candidate)
    return chosen


def _counterweigh(
    ranked: list[Candidate], chosen: list[Candidate], k: int, stage: Stage
) -> list[Candidate]:
    """Keep relevance, but give a bounded share of the results to relevant non-negative memories."""
    share = max(1, int(round(k * COUNTERWEIGHT_SHARE)))
    have = sum(1 for c in chosen if float(c.affect.get("valence", 0.0)) >= 0)
    if have >= share or not chosen:
        stage.notes.append(f"already {have} non-negative memories among the results")
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

    def may_replace(c: Candidate, out: Candidate) -> bool:
        if cosine(c) >= ON_TOPIC * best_cosine or cosine(c) >= cosine(out):
            return True
        return bm25(c) > 0 and (bm25(c) >= ON_TOPIC * best_bm25 or bm25(c) >= bm25(out))

    balancing = [c for c in ranked if c not in chosen and float(c.affect.get("valence", 0.0)) >= 0]
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
        stage.rows.append({"in": candidate.id, "out": out.id, "relevance": round(candidate.relevance, 4),
                           "valence": candidate.affect.get("valence")})  # fmt: skip
    stage.notes.append(
        f"strongly negative query: reserved up to {share} of {k} results for non-negative memories"
    )
    return result


def _collapse_duplicates(index: MemoryIndex, chosen: list[Candidate], ranked: list[Candidate],
                         options: RecallOptions, stage: Stage) -> list[Candidate]:  # fmt: skip
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
            stage.rows.append({"dropped": candidate.id, "duplicate_of": duplicate_of.id})
            continue
        kept.append(candidate)
    if options.mmr:
        stage.notes.append("MMR re-ranking on (λ = 0.7)")
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
    return kept


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


def _fit_budget(chosen: list[Candidate], budget: int | None, stage: Stage) -> list[Candidate]:
    if budget is None:
        stage.notes.append("no token budget")
        return chosen
    used = 0
    kept: list[Candidate] = []
    for candidate in chosen:
        cost = estimate_tokens(candidate.memory.text)
        if used + cost > budget:
            stage.rows.append({"dropped": candidate.id, "tokens": cost})
            continue
        used += cost
        kept.append(candidate)
    stage.notes.append(f"{used} of {budget} tokens used")
    return kept


def _verdict(results: list[Candidate], settings: dict[str, Any]) -> str:
    """GROUNDED when the best result is clearly about the query, LOW_CONFIDENCE when only weakly,
    NO_DATA when nothing relevant survived. Thresholds on raw cosine and BM25 (docs/RECALL.md)."""
    thresholds = {"grounded_cosine": 0.45, "weak_cosine": 0.25, "grounded_bm25": 4.0}
    thresholds.update((settings.get("recall") or {}).get("verdict") or {})
    if not results:
        return "NO_DATA"
    best_cosine = max(c.raw.get("cosine", 0.0) for c in results)
    best_bm25 = max(c.raw.get("bm25", 0.0) for c in results)
    if any("hard-fact" in c.channels for c in results):
        return "GROUNDED"
    if best_cosine >= thresholds["grounded_cosine"] or best_bm25 >= thresholds["grounded_bm25"]:
        return "GROUNDED"
    if best_cosine >= thresholds["weak_cosine"] or best_bm25 > 0:
        return "LOW_CONFIDENCE"
    return "NO_DATA"
