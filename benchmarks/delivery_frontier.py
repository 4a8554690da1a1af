"""How little noise a block can carry while it answers: the bounds behind issue 26's noise
target, from a `memdir bench delivery --per-question` file (its `results`: the block recall's
12 results with their scores and components, the evidence of each question).

For each file (categories 1–4), at answered-of-available ≥ --target:
- **prefix oracle**: a rule that shows recall's best m results in order, m chosen per question
  knowing the labels (and silent where nothing would be answered, within --silent); the least
  noise any rule that shows a prefix of this ranking can reach;
- **fitted rule**: a logistic model of "this result is evidence" over every signal the block
  sees (rank, relevance and its share of the best, cosine, BM25, gaps, same session as the
  best, the relevance components), fitted on the other files (cross-file) and on the file
  itself (in-sample, an optimistic bound); the block shows the results it rates at least t,
  best first, at most n; the least noise over t and n;
- **conversation windows**: each shown result with its w turns before and after as one entry
  (w = 1, 2), the windows of one session merged: entry noise, turn noise and tokens at the
  fewest entries that reach the target.
Usage: python -m benchmarks.delivery_frontier PER_QUESTION.jsonl [--target 0.8]
       [--data ../shared/bench]
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.bench_cold import DATA
from memdir.cli.bench.locomo import load_samples

COMPONENTS = ("semantic", "bm25", "context_semantic", "context_bm25", "speaker", "session", "when",
              "decay", "recency")  # fmt: skip
FILES = {"locomo-dev.json": "locomo/locomo-dev.json", "realtalk-dev.json": "realtalk/realtalk-dev.json",
         "realtalk-val.json": "realtalk/realtalk-val.json"}  # fmt: skip
Entries = list[list[str]]  # each entry the dia ids it shows


def position(dia: str) -> tuple[int, int]:
    """The numbers in a dia id (its first is not always the session: REALTALK's run on)."""
    session, turn = dia[1:].split(":")
    return int(session), int(turn)


def scored(rows: list[dict[str, Any]], pick: Callable[[dict[str, Any]], Entries],
           tokens: dict[tuple[str, str], int] | None = None) -> dict[str, float]:  # fmt: skip
    """answered of available, silent with the answer, entry noise, turn noise, entries and
    (with `tokens`: (sample, dia) → tokens of its text) the text's tokens per block."""
    available = [r for r in rows if r["available"]]
    spoken = answered = silent = entries = noisy = turns = noisy_turns = text = 0
    for row in rows:
        evidence = set(row["evidence"])
        shown = pick(row)
        if not shown:
            silent += row["available"]
            continue
        flat = [dia for entry in shown for dia in entry]
        spoken += 1
        entries += len(shown)
        noisy += sum(1 for entry in shown if not evidence & set(entry))
        turns += len(flat)
        noisy_turns += sum(1 for dia in flat if dia not in evidence)
        answered += row["available"] and bool(evidence & set(flat))
        if tokens is not None:
            text += sum(tokens.get((row["sample"], dia), 0) for dia in flat)
    found = {"answered": answered / max(len(available), 1), "silent": silent / max(len(rows), 1),
             "noise": noisy / max(entries, 1), "turn_noise": noisy_turns / max(turns, 1),
             "entries": entries / max(spoken, 1)}  # fmt: skip
    if tokens is not None:
        found["text_tokens"] = text / max(spoken, 1)
    return found


def grounded(row: dict[str, Any]) -> bool:
    """The block speaks only when a result above the floor grounds the prompt (its rule)."""
    return any((r["cosine"] >= 0.45 or r["bm25"] >= 4) for r in row["results"]
               if r["cosine"] >= 0.3 or r["bm25"] >= 3)  # fmt: skip


def prefix_oracle(rows: list[dict[str, Any]], target: float, silent_share: float) -> float:
    """The least noise of any rule showing recall's best m results, m chosen per question with
    the labels (Dinkelbach on the ratio noise / entries)."""
    available = [r for r in rows if r["available"]]
    need = math.ceil(target * len(available))
    may_silence = int(silent_share * len(rows))
    hits = [
        (r["available"], [x["dia_id"] in set(r["evidence"]) for x in r["results"]]) for r in rows
    ]

    def cost(ratio: float) -> float | None:
        total, deltas = 0.0, []
        for is_available, marks in hits:
            unanswered = (1 - ratio) if is_available else 0.0  # one noisy entry, or silence
            total += unanswered
            if not is_available:
                continue
            best, noise = None, 0
            for m, mark in enumerate(marks, start=1):
                noise += not mark
                if any(marks[:m]):
                    value = noise - ratio * m
                    best = value if best is None else min(best, value)
            deltas.append(None if best is None else best - unanswered)
        possible = sorted(d for d in deltas if d is not None)
        if len(possible) < need:
            return None
        chosen = possible[:need] + [d for d in possible[need:] if d < 0]
        total += sum(chosen)
        return total - min(len(deltas) - len(chosen), may_silence) * (1 - ratio)

    low, high = 0.0, 1.0
    for _ in range(40):
        middle = (low + high) / 2
        value = cost(middle)
        if value is None:
            return float("nan")
        low, high = (low, middle) if value <= 0 else (middle, high)
    return high


def features(row: dict[str, Any]) -> list[list[float]]:
    results = row["results"]
    best = results[0]["relevance"] or 1.0
    top_session = position(results[0]["dia_id"])[0]  # (the dia id's first number)
    margin = (results[0]["relevance"] - results[1]["relevance"]) / best if len(results) > 1 else 0
    found = []
    for rank, result in enumerate(results):
        previous = results[rank - 1]["relevance"] if rank else result["relevance"]
        session, _ = position(result["dia_id"])
        found.append([1.0, rank, result["relevance"] / best, result["relevance"],
                      result["cosine"], min(result["bm25"], 20) / 20, margin,
                      (previous - result["relevance"]) / best, float(session == top_session),
                      results[0]["cosine"], min(results[0]["bm25"], 20) / 20,
                      *(result.get("components", {}).get(name, 0.0) for name in COMPONENTS)])  # fmt: skip
    return found


def fitted(train: list[dict[str, Any]]) -> Callable[[list[list[float]]], list[float]]:
    """A logistic model of 'this result is evidence' (numpy, L2 0.01, gradient descent)."""
    import numpy as np

    matrix = np.array([x for row in train if row["results"] for x in features(row)])
    labels = np.array([float(r["dia_id"] in set(row["evidence"]))
                       for row in train for r in row["results"]])  # fmt: skip
    mean, spread = matrix.mean(0), matrix.std(0)
    spread[spread == 0] = 1.0
    mean[0], spread[0] = 0.0, 1.0
    scaled = (matrix - mean) / spread
    weights = np.zeros(matrix.shape[1])
    for _ in range(3000):
        guess = 1 / (1 + np.exp(-scaled @ weights))
        weights -= 0.5 * (scaled.T @ (guess - labels) / len(labels) + 0.01 * weights)
    return lambda x: list(1 / (1 + np.exp(-((np.array(x) - mean) / spread) @ weights)))


def fitted_frontier(rows: list[dict[str, Any]], model: Callable[[list[list[float]]], list[float]],
                    target: float) -> dict[str, float] | None:  # fmt: skip
    best = None
    for step in range(2, 30):
        threshold = step / 40
        for most in (1, 2, 3, 5):

            def pick(row: dict[str, Any], t: float = threshold, n: int = most) -> Entries:
                if not row["results"] or not grounded(row):
                    return []
                rated = model(features(row))
                order = sorted(range(len(rated)), key=lambda i: -rated[i])
                chosen = [[row["results"][i]["dia_id"]] for i in order if rated[i] >= t][:n]
                return chosen or [[row["results"][order[0]]["dia_id"]]]

            found = scored(rows, pick)
            if found["answered"] >= target and (best is None or found["noise"] < best["noise"]):
                best = {**found, "threshold": threshold, "at_most": most}
    return best


def windows(rows: list[dict[str, Any]], orders: dict[str, dict[int, list[str]]],
            sessions: dict[tuple[str, str], int], width: int, target: float,
            tokens: dict[tuple[str, str], int]) -> dict[str, float] | None:  # fmt: skip
    """Each of the block's results with `width` turns on each side, a session's windows merged,
    the fewest entries (best first) that reach the target."""
    for most in (1, 2, 3, 4, 5):

        def pick(row: dict[str, Any], n: int = most) -> Entries:
            if not grounded(row):
                return []
            best = row["results"][0]["relevance"]
            chosen = [r for r in row["results"] if r["relevance"] >= 0.8 * best
                      and (r["cosine"] >= 0.3 or r["bm25"] >= 3)]  # fmt: skip
            spans: list[tuple[int, int, int]] = []  # session, first, last index
            for result in chosen:
                session = sessions[(row["sample"], result["dia_id"])]
                order = orders[row["sample"]][session]
                at = order.index(result["dia_id"])
                low, high = max(0, at - width), min(len(order) - 1, at + width)
                for number, (s, a, b) in enumerate(spans):
                    if s == session and low <= b + 1 and high >= a - 1:
                        spans[number] = (s, min(a, low), max(b, high))
                        break
                else:
                    spans.append((session, low, high))
            return [orders[row["sample"]][s][a : b + 1] for s, a, b in spans[:n]]

        found = scored(rows, pick, tokens)
        if found["answered"] >= target:
            return {**found, "at_most": most}
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("per_question", type=Path)
    parser.add_argument("--target", type=float, default=0.8)
    parser.add_argument("--silent", type=float, default=0.05)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.per_question.read_text().splitlines()]
    rows = [r for r in rows if r["category"] != 5 and r["results"]]
    by_file: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_file.setdefault(row["file"], []).append(row)
    for name, mine in by_file.items():
        orders: dict[str, dict[int, list[str]]] = {}
        sessions: dict[tuple[str, str], int] = {}
        tokens: dict[tuple[str, str], int] = {}
        for sample in load_samples(args.data / FILES[name]):
            order: dict[int, list[str]] = {}
            for turn in sample.turns:
                order.setdefault(turn.session, []).append(turn.dia_id)
                sessions[(sample.sample_id, turn.dia_id)] = turn.session
                tokens[(sample.sample_id, turn.dia_id)] = min(len(turn.text) // 4, 75)
            orders[sample.sample_id] = order
        others = [row for other, part in by_file.items() if other != name for row in part]
        print(f"## {name} ({len(mine)} questions, target answered ≥ {args.target})")
        today = scored(
            mine,
            lambda row: [
                [dia]
                for unit in row["block"]
                for dia in ([unit] if isinstance(unit, str) else unit)
            ],
        )
        print("the block (turn entries):", _shown(today))
        single = scored(mine, lambda row: [[row["results"][0]["dia_id"]]] if grounded(row) else [])
        print("the best result alone:", _shown(single))
        print(f"prefix oracle, least noise: {prefix_oracle(mine, args.target, args.silent):.3f}")
        if others:
            print(
                "fitted rule, cross-file:",
                _shown(fitted_frontier(mine, fitted(others), args.target)),
            )
        print("fitted rule, in-sample:", _shown(fitted_frontier(mine, fitted(mine), args.target)))
        for width in (1, 2):
            found = windows(mine, orders, sessions, width, args.target, tokens)
            print(f"windows of ±{width}:", _shown(found))
        print()


def _shown(found: dict[str, float] | None) -> str:
    if found is None:
        return "does not reach the target"
    return ", ".join(f"{key} {value:.3f}" if isinstance(value, float) else f"{key} {value}"
                     for key, value in found.items())  # fmt: skip


if __name__ == "__main__":
    main()
