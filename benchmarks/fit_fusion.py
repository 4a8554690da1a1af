"""Fit recall's blend weights to benchmark questions, with leave-one-conversation-out CV.

Learned fusion instead of hand-set weights (issue 27): the blend is linear in the components
`--explain` shows (score.py), so fitting it is choosing one weight per component. Input: the
`--per-question` rows of `memdir bench locomo` on the *dev* files (each row holds the best 30
scored candidates with their components and which are evidence). The fit re-ranks those 30 by
Σ weight × component and climbs mean R@5 + R@10 (each file weighs the same, so the larger file
does not decide alone) by coordinate ascent over a grid, starting from the default profile:
a weight moves only when that lifts the objective, so a component the questions say nothing
about keeps its hand-set value.

    python -m benchmarks.fit_fusion DEV.jsonl [--json]

prints, for each dev conversation held out in turn, R@5 / R@10 of the weights fitted on the
others against the default's (the CV figures), then the weights fitted on all of them, which
go into `indexers/recall/options.py` as a profile. The re-ranking is an approximation of
recall (the shortlist is the default's): the shipped profile is measured through `memdir
bench locomo --compare` on the dev and validation files, and that is the figure that counts.
The fitted profile adds nothing at query time: it is weights, the same blend.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import started

if TYPE_CHECKING:
    import numpy as np

# the components fitted: those the benchmark conversations carry (no links, so no degree;
# no meta-memory, so no meta_bm25; affect and recency were measured as losses and stay 0)
FITTED = ("semantic", "bm25", "context_semantic", "context_bm25", "speaker", "session", "when",
          "importance")  # fmt: skip
GRID = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0)
PASSES = 3


@dataclass
class Questions:
    """Questions as arrays: components (question × candidate × component), evidence flags,
    how many evidence turns each has (those outside the 30 count against it), and groups:
    file, chat, and file + category (what the guard holds)."""

    features: np.ndarray
    evidence: np.ndarray
    wanted: np.ndarray
    files: list[str]
    chats: list[str]
    categories: list[str]

    def subset(self, keep: np.ndarray) -> Questions:
        def kept(values: list[str]) -> list[str]:
            return [v for v, k in zip(values, keep, strict=True) if k]

        return Questions(self.features[keep], self.evidence[keep], self.wanted[keep],
                         kept(self.files), kept(self.chats), kept(self.categories))  # fmt: skip


def load(paths: Sequence[Path]) -> Questions:
    import numpy as np

    rows = [
        json.loads(line)
        for path in paths
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    rows = [row for row in rows if row["category"] != 5 and row["evidence"]]
    depth = max(len(row["candidates"]) for row in rows)
    features = np.zeros((len(rows), depth, len(FITTED)), dtype=np.float64)
    evidence = np.zeros((len(rows), depth), dtype=bool)
    features[:, :, :] = np.nan  # padding ranks last
    for q, row in enumerate(rows):
        for c, candidate in enumerate(row["candidates"]):
            features[q, c] = [candidate["components"].get(name, 0.0) for name in FITTED]
            evidence[q, c] = candidate["evidence"]
    wanted = np.asarray([len(set(row["evidence"])) for row in rows], dtype=np.float64)
    return Questions(features, evidence, wanted, [row["file"] for row in rows],
                     [f"{row['file']}/{row['sample']}" for row in rows],
                     [f"{row['file']}/{row['category']}" for row in rows])  # fmt: skip


def recalls(questions: Questions, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each question's R@5 and R@10 when its candidates are ranked by the weighted blend."""
    import numpy as np

    scores = np.nan_to_num(questions.features @ weights, nan=-np.inf)
    order = np.argsort(-scores, axis=1, kind="stable")
    hits = np.take_along_axis(questions.evidence, order, axis=1)
    return hits[:, :5].sum(1) / questions.wanted, hits[:, :10].sum(1) / questions.wanted


def objective(questions: Questions, weights: np.ndarray) -> float:
    """Mean of R@5 and R@10, each file's questions averaged first (files weigh the same)."""
    import numpy as np

    at5, at10 = recalls(questions, weights)
    files = np.asarray(questions.files)
    return float(np.mean([(at5[files == f].mean() + at10[files == f].mean()) / 2
                          for f in dict.fromkeys(questions.files)]))  # fmt: skip


def by_category(questions: Questions, weights: np.ndarray) -> np.ndarray:
    """Mean R@5 and R@10 of each file's category, side by side."""
    import numpy as np

    at5, at10 = recalls(questions, weights)
    groups = np.asarray(questions.categories)
    names = list(dict.fromkeys(questions.categories))
    return np.asarray([[at5[groups == g].mean(), at10[groups == g].mean()] for g in names])


def fit(questions: Questions, start: np.ndarray, guard: float | None = None) -> np.ndarray:
    """Coordinate ascent over GRID from `start`; a weight moves only on a strict gain, and with
    `guard` only where no file's category falls more than `guard` below `start` at R@5 or
    R@10 (a gain on most questions must not be a loss on one kind)."""
    weights = start.copy()
    best = objective(questions, weights)
    floor = by_category(questions, start) - guard if guard is not None else None
    for _ in range(PASSES):
        moved = False
        for i in range(len(FITTED)):
            for value in GRID:
                trial = weights.copy()
                trial[i] = value
                score = objective(questions, trial)
                if score <= best + 1e-9:
                    continue
                if floor is not None and (by_category(questions, trial) < floor).any():
                    continue
                best, weights, moved = score, trial, True
        if not moved:
            break
    return weights


def default_weights() -> np.ndarray:
    import numpy as np

    from memdir.indexers.recall.options import PROFILES

    return np.asarray([PROFILES["default"].get(name, 0.0) for name in FITTED])


def cross_validate(questions: Questions, guard: float | None = None) -> list[dict[str, Any]]:
    """Leave one conversation out: fit on the others, measure on it, against the default."""
    import numpy as np

    chats = np.asarray(questions.chats)
    start = default_weights()
    folds = []
    for chat in dict.fromkeys(questions.chats):
        held = chats == chat
        fitted = fit(questions.subset(~held), start, guard)
        test = questions.subset(held)
        base5, base10 = recalls(test, start)
        new5, new10 = recalls(test, fitted)
        folds.append({
            "held_out": chat, "n": int(held.sum()),
            "default": [round(float(base5.mean()), 4), round(float(base10.mean()), 4)],
            "fitted": [round(float(new5.mean()), 4), round(float(new10.mean()), 4)],
            "weights": dict(zip(FITTED, map(float, fitted), strict=True)),
        })  # fmt: skip
    return folds


def main() -> None:
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", type=Path, nargs="+", help="--per-question files of dev runs")
    parser.add_argument(
        "--guard",
        type=float,
        default=None,
        help="no file's category may fall more than this below the default",
    )
    parser.add_argument("--json", action="store_true")
    args, record = started(parser, "fit_fusion")
    questions = load(args.rows)
    folds = cross_validate(questions, args.guard)
    fitted = fit(questions, default_weights(), args.guard)
    n = sum(fold["n"] for fold in folds)
    pooled = {
        arm: [round(sum(fold[arm][i] * fold["n"] for fold in folds) / n, 4) for i in (0, 1)]
        for arm in ("default", "fitted")
    }
    result = {
        "folds": folds,
        "cv_pooled": pooled,
        "weights": dict(zip(FITTED, map(float, fitted), strict=True)),
        "in_sample": {"default": objective(questions, default_weights()),
                      "fitted": objective(questions, fitted)},
    }  # fmt: skip
    arms = {
        f"{arm} R@{k}": index for index, k in enumerate((5, 10)) for arm in ("default", "fitted")
    }
    figures = {f"held out: {fold['held_out']}": {"n": fold["n"], **{column: fold[column.split()[0]][i]
               for column, i in arms.items()}} for fold in folds}  # fmt: skip
    figures[f"cross-validated, pooled over {n} questions"] = {
        "n": n,
        **{column: pooled[column.split()[0]][i] for column, i in arms.items()},
    }
    record.save(figures, result)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    for fold in folds:
        print(f"{fold['held_out']:<40} n={fold['n']:<4} default R@5/R@10 {fold['default']}"
              f"  fitted {fold['fitted']}")  # fmt: skip
    print(f"CV pooled over {n} questions: default {pooled['default']}, fitted {pooled['fitted']}")
    print("fitted on all:", ", ".join(f"{k}={v:g}" for k, v in result["weights"].items()))
    del np


if __name__ == "__main__":
    main()
