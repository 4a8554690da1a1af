"""Automatic supersede: precision and recall of sleep's rule (distill.same_subject and a cosine
threshold) on tests/fixtures/supersede-pairs.jsonl — 70 pairs of teachings written for this
(none from a benchmark), each labelled whether the newer one replaces the older. Uses the
local MiniLM embedder; prints one row per candidate threshold.

    .venv/bin/python benchmarks/supersede_threshold.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from memdir.indexers.distill import SUPERSEDE_COSINE, Distiller, restates, same_subject
from memdir.indexers.embedding import MiniLMEmbedder, find_model_dir

FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "supersede-pairs.jsonl"
THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85)


def scored_pairs() -> list[tuple[bool, bool, float]]:
    """Per pair: (labelled a supersede, passes the gate — same label and subject, and the newer
    restates rather than adds — , cosine)."""
    import numpy as np

    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    model = find_model_dir()
    if model is None:
        sys.exit("all-MiniLM-L6-v2 not found (make setup)")
    embedder = MiniLMEmbedder(model)
    texts = [text for row in rows for text in (row["old"], row["new"])]
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    labels = [found.label for found in Distiller(embedder).distill(texts, vectors)]
    found = []
    for number, row in enumerate(rows):
        old, new = 2 * number, 2 * number + 1
        gate = same_subject(texts[old], labels[old], texts[new], labels[new]) and restates(
            texts[old], texts[new]
        )
        found.append((bool(row["supersedes"]), gate, float(vectors[old] @ vectors[new])))
    return found


def precision_recall(
    pairs: list[tuple[bool, bool, float]], threshold: float
) -> tuple[float, float, int]:
    predicted = [truth for truth, gate, cosine in pairs if gate and cosine >= threshold]
    positives = sum(truth for truth, _, _ in pairs)
    hits = sum(predicted)
    return (hits / len(predicted) if predicted else 1.0), hits / positives, len(predicted)


if __name__ == "__main__":
    pairs = scored_pairs()
    gated = sum(gate for _, gate, _ in pairs)
    print(f"{len(pairs)} pairs, {sum(t for t, _, _ in pairs)} supersedes; "
          f"{gated} pass the gate (same label and subject, restated)")  # fmt: skip
    print("cosine ≥  precision  recall  predicted")
    for threshold in THRESHOLDS:
        precision, recall, predicted = precision_recall(pairs, threshold)
        mark = "  ← SUPERSEDE_COSINE" if abs(threshold - SUPERSEDE_COSINE) < 1e-9 else ""
        print(f"{threshold:>8.2f}  {precision:>9.3f}  {recall:>6.3f}  {predicted:>9}{mark}")
