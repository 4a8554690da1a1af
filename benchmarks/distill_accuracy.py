"""Distillation accuracy on the labelled fixture (tests/fixtures/distill-labelled.jsonl, 209
sentences written for this, none from a benchmark): per class, the share typed correctly, the
share left untyped, and the temporal class's accuracy. Uses the local MiniLM embedder.

    .venv/bin/python -m benchmarks.distill_accuracy

The result goes to benchmarks/results/distill_accuracy.json (--result elsewhere).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from benchmarks.common import started
from memdir.indexers.distill import Distiller
from memdir.indexers.embedding import MiniLMEmbedder, find_model_dir

FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "distill-labelled.jsonl"


def measure() -> dict[str, dict[str, float]]:
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    model = find_model_dir()
    if model is None:
        sys.exit("all-MiniLM-L6-v2 not found (make setup)")
    embedder = MiniLMEmbedder(model)
    texts = [row["text"] for row in rows]
    found = Distiller(embedder).distill(texts, embedder.embed(texts))
    total, right, untyped, temporal = Counter(), Counter(), Counter(), Counter()
    for row, got in zip(rows, found, strict=True):
        total[row["type"]] += 1
        right[row["type"]] += got.label == row["type"]
        untyped[row["type"]] += got.label is None
        temporal[row["type"]] += got.temporal == row["temporal"]
    table = {label: {"n": total[label], "accuracy": right[label] / total[label],
                     "untyped": untyped[label] / total[label],
                     "temporal": temporal[label] / total[label]} for label in total}  # fmt: skip
    n = sum(total.values())
    table["overall"] = {"n": n, "accuracy": sum(right.values()) / n,
                        "untyped": sum(untyped.values()) / n,
                        "temporal": sum(temporal.values()) / n}  # fmt: skip
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args, result = started(parser, "distill_accuracy")
    found = measure()
    print(f"{'class':<18} {'n':>4} {'type acc':>9} {'untyped':>8} {'temporal':>9}")
    for label, row in found.items():
        print(f"{label:<18} {row['n']:>4} {row['accuracy']:>9.3f} {row['untyped']:>8.3f} "
              f"{row['temporal']:>9.3f}")  # fmt: skip
    result.save(found)


if __name__ == "__main__":
    main()
