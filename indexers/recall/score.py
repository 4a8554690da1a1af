"""The score: one blend of weighted components, then the factors that multiply it.

    score = blend(components) ÷ Σ relevance weights × decay factor × provenance weight (+ 1 for
    a hard fact), blend = Σ weight × component

The weighted components are the six relevance ones (relevance.py, normalised over the scope)
and the priors here (affect resonance, relational degree, recency, importance, keyword). Decay
is a component too, the fidelity F from rehearsal timestamps; its role is a factor,
1 − strength × (1 − F), so a faded memory ranks lower but is never dropped. The shortlist ranks
the scope by the same blend over the relevance components (candidates.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memdir.archive_format.clock import parse_time
from memdir.archive_format.decay import DecaySettings, multiplier

from ..decay import memory_fidelity, reactivations_of
from ..distill import effective
from .relevance import RELEVANCE
from .result import Candidate, Stage, Trace

if TYPE_CHECKING:
    from ..affect import Affect
    from .interface import RecallIndex
    from .query import QueryAnalysis

PRIORS = ("affect", "degree", "recency", "importance", "keyword", "use")
WEIGHTED = RELEVANCE + PRIORS
# profile entries that are no blended component: the recency prior's default half-life, how
# much a memory that is mostly questions loses of its text components (relevance.py), and
# `minmax` (1: each weighted component min-max normalised over the candidates, as CAMA does)
PARAMETERS = ("half_life_days", "questions", "minmax")
HARD_FACT = 1.0  # added to a hard fact's score: the current memory for a key the query names


def blend(values: Mapping[str, Any], weights: Mapping[str, float], names: Sequence[str]) -> Any:
    """Σ weight × component over `names`: of one candidate's components (floats), or of a whole
    scope's (arrays, one value per memory)."""
    total: Any = 0.0
    for name in names:
        total = total + weights.get(name, 0.0) * values[name]
    return total


def relevance_weight(weights: Mapping[str, float]) -> float:
    """What a blend is divided by, so that profiles whose weights add up differently give
    comparable relevance and scores."""
    return sum(weights.get(name, 0.0) for name in RELEVANCE) or 1.0


def priors(index: RecallIndex, candidates: list[Candidate], analysis: QueryAnalysis, now: datetime,
           weights: dict[str, float], half_lives: dict[str, Any],
           distilled_types: bool = False) -> None:  # fmt: skip
    """Add the affect resonance, relational degree, recency, importance, keyword and use components
    (and each candidate's affect, which decay and the counterweights read). The half-life is
    the user's type's, or with `distilled_types` (settings.recall.distilled_cutoffs) the
    distilled type's when the user gave none."""
    from ..affect import resonance
    from ..uses import component as use_component
    from ..uses import read as read_uses

    if not candidates:
        return
    degrees = index.catalog.link_degrees()
    top_degree = max([degrees.get(c.id, 0) for c in candidates] + [1])
    query_affect = _as_affect(analysis.affect)
    neutral_query = abs(query_affect.valence) < 0.05 and not any(query_affect.chord.values())
    affects = index.affects_of([c.memory for c in candidates])
    uses = read_uses(index.memdir) if weights.get("use") else {}  # the healer's counts
    for candidate in candidates:
        line = candidate.memory.line
        candidate.affect = affects[candidate.id]
        age_days = max(0.0, (now - parse_time(line["created"])).total_seconds() / 86400)
        kind = effective(line, candidate.distilled)["type"] if distilled_types else line.get("type")
        half_life = float(
            half_lives.get(str(kind or "").lower(), weights.get("half_life_days", 30.0))
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
                "importance": (int(effective(line, candidate.distilled)["importance"]) - 1) / 9,
                "keyword": bm25 if candidate.raw.get("bm25", 0.0) > 0 else 0.0,
                "use": use_component(uses, candidate.id) if uses else 0.0,
            }
        )


def _as_affect(data: dict[str, Any]) -> Affect:
    from ..affect import PLUTCHIK, Affect

    chord = {name: float((data.get("chord") or {}).get(name, 0.0)) for name in PLUTCHIK}
    return Affect(
        valence=float(data.get("valence", 0.0)),
        arousal=float(data.get("arousal", 0.0)),
        chord=chord,
        annotator=str(data.get("annotator", "none")),
    )


def decay(index: RecallIndex, candidates: list[Candidate], now: datetime, perfect: bool,
          settings: DecaySettings) -> Trace:  # fmt: skip
    """Add the decay component: F from the candidate's rehearsals (the index keeps them), or 1
    for perfect recall (`--perfect`), which leaves every score as it is."""
    trace = Trace(Stage.DECAY)
    if perfect:
        for candidate in candidates:
            candidate.components["decay"] = 1.0
        trace.notes.append("perfect recall: decay ignored")
        return trace
    times = index.catalog.rehearsal_times(c.id for c in candidates)
    partial = reactivations_of(index.catalog, (c.id for c in candidates), settings.reactivation)
    for candidate in candidates:
        result = memory_fidelity(candidate.memory.line, candidate.affect, times, now, settings,
                                 partial.get(candidate.id, ()))  # fmt: skip
        candidate.components["decay"] = result.value
        candidate.raw["stability_days"] = result.stability_days
        candidate.raw["rehearsals"] = result.rehearsals
        if result.reactivated:
            candidate.raw["reactivated"] = result.reactivated
    trace.notes.append(
        f"score × (1 - {settings.strength:g} × (1 - F)), F = (1 + t/S)^-{settings.exponent:g}"
        " from rehearsal timestamps (`memdir decay ID` shows one memory)"
    )
    return trace


def rank(candidates: list[Candidate], weights: dict[str, float],
         settings: DecaySettings) -> tuple[list[Candidate], Trace]:  # fmt: skip
    """Score every candidate (its provenance weight already set) and sort them, best first."""
    scale = relevance_weight(weights)
    if weights.get("minmax"):
        normalise(candidates, [name for name in WEIGHTED if weights.get(name)])
    for candidate in candidates:
        score = blend(candidate.components, weights, WEIGHTED) / scale
        score *= multiplier(candidate.components["decay"], settings)
        score *= candidate.weight
        if "hard-fact" in candidate.channels:
            score += HARD_FACT
            candidate.note = "hard fact: the current memory for a key the query names"
        candidate.score = score
    ranked = sorted(candidates, key=lambda c: (-c.score, c.memory.iid))
    return ranked, Trace(Stage.SCORE, [_score_row(c) for c in ranked])


def normalise(candidates: list[Candidate], names: list[str]) -> None:
    """CAMA's min-max normalisation: each of the components `names` rescaled to 0..1 over the
    candidates (the lowest 0, the highest 1), the value before kept in `raw` as NAME_raw; a
    component every candidate has alike is left as it is."""
    for name in names:
        values = [candidate.components.get(name, 0.0) for candidate in candidates]
        low, high = min(values, default=0.0), max(values, default=0.0)
        if high <= low:
            continue
        for candidate, value in zip(candidates, values, strict=True):
            candidate.raw[f"{name}_raw"] = value
            candidate.components[name] = (value - low) / (high - low)


def _score_row(candidate: Candidate) -> dict[str, Any]:
    return {"id": candidate.id, "score": candidate.score, "weight": candidate.weight,
            "status": candidate.status, **candidate.components}  # fmt: skip
