"""Spreading activation: from the best-scored memories (the seeds), activation flows along typed
links (either direction) to memories the ranking left out, so what is linked to the answer can
come along with it (docs/RECALL.md).

    activation(n) = activation(m) × FACTORS[link type],  activation(seed) = the seed's score

up to DEPTH links from a seed, while it stays at or above THRESHOLD × the best seed's score.
Contradictions do not spread (factor 0): `memdir review` surfaces them. An activated memory
goes through the same filters, priors and decay as any candidate; its score is its activation
× its decay factor × its provenance weight, and `--explain` shows its path
(`via m-… resonates`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.archive_format.decay import DecaySettings, multiplier

from ..backends import neighbours
from .relevance import RELEVANCE
from .result import Candidate, Stage, Trace

if TYPE_CHECKING:
    from .interface import RecallIndex

FACTORS = {
    "elaborates": 0.6, "resonates": 0.5, "supports": 0.5, "summarises": 0.4, "derived-from": 0.4,
    "related": 0.3, "contradicts": 0.0, "contradiction-candidate": 0.0, "compatible": 0.3,
    "superseded-by": 0.0,  # the old side is not recalled; the new one needs no help from it
}  # fmt: skip
OTHER_FACTOR = 0.3  # a link type not named above
SEEDS = 3
DEPTH = 2
THRESHOLD = 0.25


def spread(index: RecallIndex, ranked: list[Candidate]) -> dict[str, tuple[float, list[str]]]:
    """Memory id → (activation, path) for the memories reached from the seeds that are not
    ranked already; the path reads "m-seed type", "m-next type", …"""
    seeds = [c for c in ranked[:SEEDS] if c.score > 0]
    if not seeds:
        return {}
    linked = neighbours(index.catalog.links())
    floor = THRESHOLD * seeds[0].score
    ranked_ids = {c.id for c in ranked}
    seed_ids = {c.id for c in seeds}
    best: dict[str, tuple[float, list[str]]] = {}
    frontier: list[tuple[str, float, list[str]]] = [(c.id, c.score, []) for c in seeds]
    for _ in range(DEPTH):
        following = []
        for memory_id, value, path in frontier:
            for other, kind in linked.get(memory_id, ()):
                reached = value * FACTORS.get(kind, OTHER_FACTOR)
                if reached < floor or other in seed_ids:
                    continue
                step = [*path, f"{memory_id} {kind}"]
                if other not in best or best[other][0] < reached:
                    best[other] = (reached, step)
                    following.append((other, reached, step))
        frontier = following
    return {memory_id: found for memory_id, found in best.items() if memory_id not in ranked_ids}


def join(index: RecallIndex, reached: dict[str, tuple[float, list[str]]]) -> list[Candidate]:
    """The reached memories as candidates (channel `activation`, relevance components 0)."""
    found = []
    for memory in index.catalog.memories_by_id(reached).values():
        if not memory.searchable:
            continue
        candidate = Candidate(memory, channels={"activation"})
        candidate.components = {name: 0.0 for name in RELEVANCE}
        found.append(candidate)
    return found


def score(candidates: list[Candidate], reached: dict[str, tuple[float, list[str]]],
          settings: DecaySettings) -> Trace:  # fmt: skip
    """Each activated candidate's score and path note; the trace of the stage."""
    trace = Trace(Stage.ACTIVATION)
    for candidate in candidates:
        value, path = reached[candidate.id]
        candidate.score = value * multiplier(candidate.components["decay"], settings)
        candidate.score *= candidate.weight
        candidate.note = "via " + ", ".join(path)
        trace.rows.append({"id": candidate.id, "activation": round(value, 4),
                           "score": candidate.score, "via": path})  # fmt: skip
    trace.notes.append(
        f"from the top {SEEDS} along typed links, depth ≤ {DEPTH}, "
        f"activation ≥ {THRESHOLD:g} × the best score: {len(candidates)} joined"
    )
    return trace
