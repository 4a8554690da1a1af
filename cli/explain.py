"""The score table of `memdir recall --explain`: every weighted component at every width, and
a line that adds up to the score, so the blend can be checked by hand.

    score = (Σ weight × component) ÷ Σ relevance weights × decay factor × provenance weight
            (+ 1 for a hard fact), decay factor = 1 − strength × (1 − decay)

as indexers/recall/score.py computes it. Components whose weight is 0 take no part in the score:
they are shown only when there is room, and give way first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .layout import Column, fit, flat, wrap

if TYPE_CHECKING:
    from memdir.archive_format.memdir import Memdir

# explain-table column → component, in the order they are shown
COMPONENTS = {
    "sem": "semantic", "bm25": "bm25", "ctx·sem": "context_semantic", "ctx·bm25": "context_bm25",
    "spk": "speaker", "sess": "session", "when": "when", "meta": "meta_bm25", "aff": "affect",
    "deg": "degree", "rec": "recency", "imp": "importance", "kw": "keyword", "use": "use",
    "pair·sem": "pair_semantic", "pair·bm25": "pair_bm25",
}  # fmt: skip


@dataclass(frozen=True)
class ScoreWeights:
    """What one recall's score was made with: the profile's weights, the relevance weights the
    blend is divided by, and decay's strength."""

    weights: Mapping[str, float]
    scale: float
    strength: float

    @classmethod
    def of(cls, memdir: Memdir, profile: str) -> ScoreWeights:
        from memdir.indexers.recall.options import profile_weights
        from memdir.indexers.recall.score import WEIGHTED, relevance_weight

        _, weights = profile_weights(memdir.settings.recall, profile)
        blended = {name: weights.get(name, 0.0) for name in WEIGHTED}
        return cls(blended, relevance_weight(weights), memdir.settings.decay.strength)

    def weighted(self) -> list[str]:
        return [header for header, name in COMPONENTS.items() if self.weights.get(name)]


def _number(value: float) -> str:
    return f"{value:.2f}"


def check_line(row: Mapping[str, Any], weights: ScoreWeights, rank: int) -> str:
    """The sum for one row, with the values the table shows (terms that are 0 left out)."""
    terms = [
        f"{weights.weights[name]:g}×{_number(row.get(name, 0.0))}"
        for header, name in COMPONENTS.items()
        if weights.weights.get(name) and round(row.get(name, 0.0), 2)
    ]
    factor = 1.0 - weights.strength * (1.0 - row.get("decay", 1.0))
    blend = sum(weights.weights[name] * row.get(name, 0.0) for name in weights.weights)
    # a hard fact (the current memory for a key the query names) gets 1 added to its score
    hard = abs(row["score"] - blend / weights.scale * factor * row["weight"] - 1.0) < 1e-6
    plus = " + 1 (hard fact)" if hard else ""
    return (
        f"check #{rank}: ({' + '.join(terms) or '0'}) ÷ {weights.scale:g} × {factor:.3f} "
        f"(decay {_number(row.get('decay', 1.0))}) × {row['weight']:g} (×w){plus} "
        f"= {row['score']:.3f}"
    )


def score_table(
    rows: Sequence[Mapping[str, Any]],
    texts: Mapping[str, str | None],
    weights: ScoreWeights,
    room: int | None,
    short: Callable[[], Mapping[str, str]],
) -> list[str]:
    """The lines of the score stage: the formula, the weights, the table, the check."""
    weighted = weights.weighted()
    unweighted = [
        header
        for header, name in COMPONENTS.items()
        if header not in weighted and any(round(row.get(name, 0.0), 2) for row in rows)
    ]
    lines = wrap(
        f"score = (Σ weight × component) ÷ {weights.scale:g} × decay factor × provenance "
        f"weight (×w), + 1 for a hard fact; decay factor = 1 − {weights.strength:g} × (1 − decay)",
        room,
    )
    lines += wrap(
        "weights: " + ", ".join(f"{h} {weights.weights[COMPONENTS[h]]:g}" for h in weighted),
        room,
    )
    if not rows:
        return lines
    shown = [*weighted, "decay", *unweighted]
    columns = (
        Column("id", ident=True), Column("score", right=True), Column("×w", right=True),
        *(Column(h, right=True) for h in [*weighted, "decay"]),
        # weight 0: no part of the score, so these go first (the last one first)
        *(Column(h, drop=rank + 1, right=True) for rank, h in enumerate(unweighted)),
        Column("text", text=True),
    )  # fmt: skip

    def value(row: Mapping[str, Any], header: str) -> str:
        return _number(row.get(COMPONENTS.get(header, header), 0.0))

    table = [
        (row["id"], f"{row['score']:.3f}", f"{row['weight']:g}",
         *(value(row, h) for h in shown), flat(texts.get(row["id"])))
        for row in rows
    ]  # fmt: skip
    laid = fit(columns, table, room, short)
    if room is None or all(len(line) <= room for line in laid.lines):
        lines += laid.lines
        dropped = laid.dropped
    else:  # too narrow for a column per weighted component: one block per memory
        prefixes = short()
        dropped = unweighted
        for row in rows:
            memory_id = prefixes.get(row["id"], row["id"])
            lines += wrap(f"{memory_id}  {row['score']:.3f}  {flat(texts.get(row['id']))}", room)
            # name=value, so a wrapped line never parts a name from its value
            parts = [f"{h}={value(row, h)}" for h in [*weighted, "decay"]]
            lines += wrap(" ".join([*parts, f"×w={row['weight']:g}"]), room, "    ")
    zero = [h for h in COMPONENTS if h not in weighted and h not in unweighted]
    if unweighted or zero:
        lines += wrap(f"weight 0, no part of the score: {', '.join([*unweighted, *zero])}", room)
    if dropped:
        lines += wrap(f"not shown at this width: {', '.join(dropped)} (weight 0; --json)", room)
    lines += wrap(check_line(rows[0], weights, 1), room)
    return lines
