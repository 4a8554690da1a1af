"""Two `memdir bench locomo --per-question` files of the same questions, compared: each R@5 /
R@10 delta with its paired bootstrap interval, per file, per chat and pooled.

For a variant that `--compare` cannot express on one index (a code change, another embedder):
run the bench once per variant with `--per-question`, then

    python -m benchmarks.compare_runs BASELINE.jsonl VARIANT.jsonl [--json]

Questions are paired by (file, sample, question number); a question only one run has is an
error, not a silent drop.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from memdir.cli.bench.stats import RESAMPLES, paired_delta

METRICS = ("recall@5", "recall@10")


def read_rows(path: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        rows[(row["file"], row["sample"], int(row["question_number"]))] = row
    return rows


def compare(
    baseline: dict[tuple[str, str, int], dict[str, Any]],
    variant: dict[tuple[str, str, int], dict[str, Any]],
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """{group: {metric: Delta dict}} for "pooled", each file and each "file/sample" (categories
    1–4, as the bench's overall figure)."""
    if set(baseline) != set(variant):
        missing = sorted(set(baseline) ^ set(variant))[:3]
        raise SystemExit(f"the runs hold different questions, e.g. {missing}")
    keys = [key for key in baseline if baseline[key]["category"] != 5]
    groups: dict[str, list[tuple[str, str, int]]] = {"pooled": keys}
    for key in keys:
        groups.setdefault(key[0], []).append(key)
        groups.setdefault(f"{key[0]}/{key[1]}", []).append(key)
    return {
        group: {
            metric: paired_delta([baseline[k][metric] for k in members],
                                 [variant[k][metric] for k in members],
                                 resamples, seed=seed).to_dict()
            for metric in METRICS
        }
        for group, members in groups.items()
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline", type=Path)
    parser.add_argument("variant", type=Path)
    parser.add_argument("--resamples", type=int, default=RESAMPLES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = compare(read_rows(args.baseline), read_rows(args.variant), args.resamples, args.seed)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    for group, deltas in result.items():
        cells = [
            f"{metric} {d['baseline']:.3f} → {d['variant']:.3f} "
            f"{d['delta']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"
            for metric, d in deltas.items()
        ]
        print(f"{group:<40} n={deltas['recall@5']['n']:<4} " + "   ".join(cells))


if __name__ == "__main__":
    main()
