"""Recall as one pipeline: what should the assistant remember right now, and why.

Stages (each leaves a Trace for `--explain` and `--json --explain`; docs/RECALL.md):
1. query analysis: affect, time window, acronyms and proper nouns, supersede keys it names
   (query.py);
2. candidate pool: the scope's shortlist ∪ guaranteed channel ∪ hard facts ∪ the members of
   the island recall is scoped to (candidates.py);
3. filters: the island (`--island`: only its members), status at *now*, persona, visibility,
   per-type age cut-offs (policy.py; the query's time window ranks, it does not filter: relevance.py's `when`);
4. decay and score: priors and the decay component join the relevance components, then one
   blend × decay factor × provenance weight (score.py); then spreading activation along
   typed links from the top three (activation.py); interference among alike memories when
   asked (human recall only, seeded; interference.py);
5. guaranteed slots: pinned / milestone memories take the places of weak results only
   (selection.py, as are 6 to 8);
6. counterweights: for strongly negative queries, a bounded share of the results goes to
   relevant memories that are not negative;
7. diversity: near-duplicates collapse (MMR optional, off by default);
8. budget, then the verdict (verdict.py).
"""

from __future__ import annotations

import time
from datetime import datetime

from memdir.archive_format.people import names_by_person

from ..blas import single_thread
from ..embedding import embed_queries
from . import activation, candidates, interference, neighbours, policy, score, selection
from .interface import RecallIndex
from .options import RecallConfig, RecallOptions, read_settings
from .query import QueryAnalysis, analyse, note_aliases
from .result import Candidate, RecallResult, Stage, Trace
from .verdict import verdict


def recall(
    index: RecallIndex, query: str, now: datetime, options: RecallOptions | None = None
) -> RecallResult:
    """Run the whole pipeline; the index should be up to date (see MemoryIndex.update).

    One query is many small matrix products: one BLAS thread does them fastest.
    """
    index.follow_rebuilds()
    with single_thread():
        return _recall(index, query, now, options or RecallOptions())


def _recall(index: RecallIndex, query: str, now: datetime, options: RecallOptions) -> RecallResult:
    began = time.perf_counter()
    settings = read_settings(index.memdir.settings, options.profile)
    catalog = index.catalog
    speakers = catalog.speakers()
    # the people notes' names win over the aliases found in conversations
    aliases = {**catalog.aliases(), **note_aliases(names_by_person(index.memdir), speakers)}
    analysis = analyse(
        query, now, index.annotator, speakers, catalog.keys(), settings.zone, aliases
    )
    traces = [Trace(Stage.QUERY, [analysis.to_dict()])]

    vector = embed_queries(index.embedder, [analysis.dense_query])[0]
    pool, pooled = candidates.gather(index, analysis, vector, now, options, settings.weights)
    survivors, screened, decayed = _admit(index, pool, analysis, now, options, settings)
    traces += [policy.masked_pool(pooled, pool, options), screened, decayed]
    ranked, trace = score.rank(survivors, settings.weights, settings.decay)
    traces.append(trace)
    ranked, trace = _activate(index, ranked, analysis, now, options, settings)
    traces.append(trace)
    strength = settings.interference if options.interference is None else options.interference
    ranked, trace = interference.interfere(index, ranked, analysis.query, options.k, strength,
                                           options.seed, options.perfect)  # fmt: skip
    traces.append(trace)

    chosen, trace = selection.reserve_guaranteed(ranked, options, settings.verdict)
    traces.append(trace)
    chosen, trace = selection.counterweigh(
        analysis.query, ranked, chosen, options, analysis.negative
    )
    traces.append(trace)
    chosen, trace = selection.diversify(index, chosen, ranked, options)
    traces.append(trace)
    results, trace = selection.fit_budget(chosen, options.budget)
    traces.append(trace)
    neighbours.mark_beside(index, results)

    # the verdict is about what memory holds: a budget too small to show it is said apart
    return RecallResult(
        analysis, now, settings.profile, verdict(chosen, settings.verdict), results, traces,
        (time.perf_counter() - began) * 1000, over_budget=len(chosen) - len(results),
    )  # fmt: skip


def _admit(index: RecallIndex, pool: list[Candidate], analysis: QueryAnalysis, now: datetime,
           options: RecallOptions,
           settings: RecallConfig) -> tuple[list[Candidate], Trace, Trace]:  # fmt: skip
    """Stages 3 and 4 up to the blend, the one way a candidate is admitted — from the pool or
    reached by spreading activation: the filters, then priors, decay and provisional weight.
    Returns the survivors and the filter and decay stages' traces."""
    survivors, screened = policy.screen(
        index, pool, now, options, settings.cutoffs, settings.distilled_cutoffs
    )
    score.priors(index, survivors, analysis, now, settings.weights, settings.half_lives,
                 settings.distilled_cutoffs)  # fmt: skip
    decayed = score.decay(index, survivors, now, options.perfect, settings.decay)
    policy.weigh(survivors, settings.provisional_weight)
    return survivors, screened, decayed


def _activate(index: RecallIndex, ranked: list[Candidate], analysis: QueryAnalysis,
              now: datetime, options: RecallOptions,
              settings: RecallConfig) -> tuple[list[Candidate], Trace]:  # fmt: skip
    """Spreading activation: linked memories the ranking left out join it (activation.py),
    after the same filters, priors and decay as every candidate."""
    reached = activation.spread(index, ranked) if settings.activation else {}
    joined = activation.join(index, reached) if reached else []
    if joined:
        joined, _, _ = _admit(index, joined, analysis, now, options, settings)
    trace = activation.score(joined, reached, settings.decay)
    if not settings.activation:
        trace.notes = ["off (recall.activation: false)"]
    merged = sorted(ranked + joined, key=lambda c: (-c.score, c.memory.iid))
    return merged, trace
