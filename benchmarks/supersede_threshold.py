"""Automatic supersede: precision and recall of sleep's rule (distill.same_subject and a cosine
threshold) on tests/fixtures/supersede-pairs.jsonl — 70 pairs of teachings written for this
(none from a benchmark), each labelled whether the newer one replaces the older. Uses the
local MiniLM embedder; prints one row per candidate threshold. The result goes to
benchmarks/results/supersede_threshold.json (--result elsewhere).

    .venv/bin/python -m benchmarks.supersede_threshold
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.common import embedded_pairs, started
from memdir.indexers.distill import SUPERSEDE_COSINE, restates, same_subject

FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "supersede-pairs.jsonl"
THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85)


def scored_pairs() -> list[tuple[bool, bool, float]]:
    """Per pair: (labelled a supersede, passes the gate — same label and subject, and the newer
    restates rather than adds — , cosine)."""
    rows, texts, vectors, labels = embedded_pairs(FIXTURE)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args, result = started(parser, "supersede_threshold")
    pairs = scored_pairs()
    gated = sum(gate for _, gate, _ in pairs)
    print(f"{len(pairs)} pairs, {sum(t for t, _, _ in pairs)} supersedes; "
          f"{gated} pass the gate (same label and subject, restated)")  # fmt: skip
    print("cosine ≥  precision  recall  predicted")
    figures = {}
    for threshold in THRESHOLDS:
        precision, recall, predicted = precision_recall(pairs, threshold)
        chosen = abs(threshold - SUPERSEDE_COSINE) < 1e-9
        mark = "  ← SUPERSEDE_COSINE" if chosen else ""
        print(f"{threshold:>8.2f}  {precision:>9.3f}  {recall:>6.3f}  {predicted:>9}{mark}")
        figures[f"cosine ≥ {threshold:.2f}" + (" (SUPERSEDE_COSINE)" if chosen else "")] = {
            "precision": precision, "recall": recall, "predicted": predicted
        }  # fmt: skip
    result.parameters.update(pairs=len(pairs), supersedes=sum(t for t, _, _ in pairs), gated=gated)
    result.save(figures)


if __name__ == "__main__":
    main()
