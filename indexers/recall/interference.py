"""Interference in human recall (Cerememory's noise): memories alike each other compete, so
which of them comes first is not certain — as in people, who mix up two similar evenings.

Off by default (`recall.interference: 0`); `memdir recall --interference X` or the setting turns
it on, and `--perfect` recall never has it. Each of the best `WINDOW·k` candidates that has a
rival among them (cosine ≥ SIMILAR) gets its score × (1 + X · cosine · u), u a draw in [−1, 1]
seeded by the seed, the query and the memory's id: the same recall gives the same order, a
memory with no rival is never moved, and `--explain` shows each draw (docs/RECALL.md,
"Interference")."""

from __future__ import annotations

import hashlib
import random

from .interface import RecallIndex
from .result import Candidate, Stage, Trace

SIMILAR = 0.6  # cosine at which two memories are alike enough to interfere
WINDOW = 3  # candidates looked at: the best WINDOW·k


def draw(seed: int, query: str, memory_id: str) -> float:
    """The memory's noise in [−1, 1], the same for the same seed, query and memory."""
    digest = hashlib.sha256(f"{seed}\x00{query}\x00{memory_id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big")).uniform(-1.0, 1.0)


def interfere(index: RecallIndex, ranked: list[Candidate], query: str, k: int, strength: float,
              seed: int, perfect: bool) -> tuple[list[Candidate], Trace]:  # fmt: skip
    """The ranking with interference among alike candidates (a no-op at strength 0 or for
    perfect recall), and its trace: a row per candidate moved."""
    trace = Trace(Stage.INTERFERENCE)
    if perfect or strength <= 0:
        trace.notes.append("perfect recall: no interference" if perfect and strength > 0
                           else "off (recall.interference: 0)")  # fmt: skip
        return ranked, trace
    trace.notes.append(f"strength {strength:g}, seed {seed}, rivals at cosine ≥ {SIMILAR:g}")
    window = ranked[: WINDOW * k]
    vectors = index.vectors_for([c.memory for c in window])
    for candidate in window:
        own = vectors.get(candidate.memory.iid)
        if own is None:
            continue
        rivals = [(float(own @ theirs), other) for other in window if other is not candidate
                  and (theirs := vectors.get(other.memory.iid)) is not None]  # fmt: skip
        similarity, rival = max(rivals, key=lambda pair: pair[0], default=(0.0, None))
        if rival is None or similarity < SIMILAR:
            continue
        noise = draw(seed, query, candidate.id)
        factor = 1.0 + strength * similarity * noise
        trace.rows.append({"id": candidate.id, "rival": rival.id,
                           "similarity": round(similarity, 4), "draw": round(noise, 4),
                           "before": round(candidate.score, 4),
                           "after": round(candidate.score * factor, 4)})  # fmt: skip
        candidate.score *= factor
    moved = sorted(ranked, key=lambda c: (-c.score, c.memory.iid))
    return moved, trace
