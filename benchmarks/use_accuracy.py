"""The healer's measure (memdir/usecases/healer.py): did a reply use a delivered memory? Its
accuracy, precision and recall on tests/fixtures/use-labelled.jsonl (48 pairs written for
this, none from a benchmark: the threshold was chosen here) and use-heldout.jsonl (20 pairs
written after the threshold was fixed), for the lexical share at several thresholds and, for
comparison, the MiniLM cosine between memory and reply.

    .venv/bin/python -m benchmarks.use_accuracy

The result goes to benchmarks/results/use_accuracy.json (--result elsewhere).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks.common import started
from memdir.usecases.healer import USED_SHARE, use_share

FIXTURES = Path(__file__).parent.parent / "tests" / "fixtures"
SETS = ("use-labelled.jsonl", "use-heldout.jsonl")


def scores(rows: list[dict], threshold: float, values: list[float]) -> dict[str, float]:
    tp = sum(1 for r, v in zip(rows, values, strict=True) if v >= threshold and r["used"])
    fp = sum(1 for r, v in zip(rows, values, strict=True) if v >= threshold and not r["used"])
    fn = sum(1 for r, v in zip(rows, values, strict=True) if v < threshold and r["used"])
    return {"accuracy": (len(rows) - fp - fn) / len(rows), "precision": tp / max(1, tp + fp),
            "recall": tp / max(1, tp + fn)}  # fmt: skip


def shown(found: dict[str, float]) -> str:
    return f"acc {found['accuracy']:.3f}  P {found['precision']:.3f}  R {found['recall']:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args, result = started(parser, "use_accuracy")
    from memdir.indexers.embedding import MiniLMEmbedder, find_model_dir

    model = find_model_dir()
    embedder = MiniLMEmbedder(model) if model else None
    figures: dict[str, Any] = {}
    for name in SETS:
        rows = [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]
        lexical = [use_share(r["memory"], r["reply"]) for r in rows]
        print(f"{name} ({len(rows)} pairs, {sum(r['used'] for r in rows)} used)")
        for threshold in (0.3, 0.4, USED_SHARE, 0.6):
            mark = " (the rule)" if threshold == USED_SHARE else ""
            found = figures[f"{name}: lexical share ≥ {threshold:.2f}{mark}"] = scores(
                rows, threshold, lexical
            )
            print(f"  lexical share ≥ {threshold:.2f}: {shown(found)}{mark}")
        if embedder is not None:
            memories = embedder.embed([r["memory"] for r in rows])
            replies = embedder.embed([r["reply"] for r in rows])
            cosine = [float(a @ b) for a, b in zip(memories, replies, strict=True)]
            for threshold in (0.3, 0.4, 0.5, 0.6):
                found = figures[f"{name}: MiniLM cosine ≥ {threshold:.2f}"] = scores(
                    rows, threshold, cosine
                )
                print(f"  MiniLM cosine ≥ {threshold:.2f}: {shown(found)}")
    result.save(figures)


if __name__ == "__main__":
    main()
