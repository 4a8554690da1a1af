"""The healer's measure (memdir/usecases/healer.py): did a reply use a delivered memory? Its
accuracy, precision and recall on tests/fixtures/use-labelled.jsonl (48 pairs written for
this, none from a benchmark: the threshold was chosen here) and use-heldout.jsonl (20 pairs
written after the threshold was fixed), for the lexical share at several thresholds and, for
comparison, the MiniLM cosine between memory and reply.

    .venv/bin/python benchmarks/use_accuracy.py
"""

from __future__ import annotations

import json
from pathlib import Path

from memdir.usecases.healer import USED_SHARE, use_share

FIXTURES = Path(__file__).parent.parent / "tests" / "fixtures"
SETS = ("use-labelled.jsonl", "use-heldout.jsonl")


def scores(rows: list[dict], threshold: float, values: list[float]) -> str:
    tp = sum(1 for r, v in zip(rows, values, strict=True) if v >= threshold and r["used"])
    fp = sum(1 for r, v in zip(rows, values, strict=True) if v >= threshold and not r["used"])
    fn = sum(1 for r, v in zip(rows, values, strict=True) if v < threshold and r["used"])
    accuracy = (len(rows) - fp - fn) / len(rows)
    return f"acc {accuracy:.3f}  P {tp / max(1, tp + fp):.3f}  R {tp / max(1, tp + fn):.3f}"


def main() -> None:
    from memdir.indexers.embedding import MiniLMEmbedder, find_model_dir

    model = find_model_dir()
    embedder = MiniLMEmbedder(model) if model else None
    for name in SETS:
        rows = [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]
        lexical = [use_share(r["memory"], r["reply"]) for r in rows]
        print(f"{name} ({len(rows)} pairs, {sum(r['used'] for r in rows)} used)")
        for threshold in (0.3, 0.4, USED_SHARE, 0.6):
            mark = "  (the rule)" if threshold == USED_SHARE else ""
            print(f"  lexical share ≥ {threshold:.2f}: {scores(rows, threshold, lexical)}{mark}")
        if embedder is not None:
            memories = embedder.embed([r["memory"] for r in rows])
            replies = embedder.embed([r["reply"] for r in rows])
            cosine = [float(a @ b) for a, b in zip(memories, replies, strict=True)]
            for threshold in (0.3, 0.4, 0.5, 0.6):
                print(f"  MiniLM cosine ≥ {threshold:.2f}: {scores(rows, threshold, cosine)}")


if __name__ == "__main__":
    main()
