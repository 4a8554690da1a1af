"""Relink by measurement, with the real embedder and affect annotator, no benchmark data.

1. `labelled`: precision and recall of sleep's relink rule (`sleep.affinity`, after the
   contradiction check) on tests/fixtures/relink-pairs.jsonl — 112 pairs written for this, each
   labelled with the link that is right (`resonates`, `elaborates` or none) — at candidate
   thresholds, one parameter swept at a time around the chosen ones.
2. `archives` (the default): links one sleep writes per 1,000 memories on two synthetic archives:
   40 near-identical neutral fillers ("filler memory about gardening N"), and N varied memories
   from templates with and without feeling.

    .venv/bin/python -m benchmarks.bench_relink [labelled | archives [N]] [--annotator NAME]

`--annotator` chooses the affect annotator (default: memdir's default, `vader`; the thresholds
were chosen with `vader+nrc`, whose chord the resonance also compares: BENCHMARKS.md, issue 28).
The result goes to benchmarks/results/relink.json (relink-labelled.json for `labelled`).
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from collections import Counter
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchmarks.common import Result
from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import init
from memdir.usecases.sleep import CONTRADICTION_COSINE, Thresholds, _opposed, affinity, sleep

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=timezone.utc)
FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "relink-pairs.jsonl"
TOPICS = ["gardening", "the dentist", "my sister", "running", "the new job", "cooking pasta",
          "the trip to Lisbon", "our cat", "the bank loan", "learning Spanish"]  # fmt: skip
FRAMES = ["I love {t}", "I hate {t}", "I'm so worried about {t}", "Some notes on {t}",
          "I am thrilled about {t}!", "I do not like {t}", "{t} went fine today",
          "Thinking about {t} again", "I'm furious about {t}", "A quiet afternoon with {t}"]  # fmt: skip
SWEEP = {
    "resonance_cosine": (0.4, 0.45, 0.5, 0.55, 0.6, 0.65),
    "min_intensity": (0.2, 0.3, 0.4, 0.5),
    "resonance_affect": (0.4, 0.5, 0.6, 0.7),
    "elaborates_cosine": (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7),
}


def run(texts: list[str], annotator: str) -> tuple[int, Counter[str]]:
    with tempfile.TemporaryDirectory() as folder:
        memdir, _ = init(Path(folder) / "memory", T0, settings={"affect": {"annotator": annotator}})
        for number, text in enumerate(texts):
            lifecycle.teach(memdir, text, T0 + timedelta(seconds=number))
        report = sleep(memdir, T0 + timedelta(days=1), dry_run=True)
        return len(report.links), Counter(link["type"] for link in report.links)


def labelled_pairs(
    name: str,
) -> list[tuple[str | None, str, str, float, dict[str, Any], dict[str, Any]]]:
    """Per pair: (the right link, newer, older, cosine, newer's affect, older's affect)."""
    import numpy as np

    from memdir.indexers.affect import load_annotator
    from memdir.indexers.embedding import MiniLMEmbedder, find_model_dir

    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    model = find_model_dir()
    if model is None:
        sys.exit("all-MiniLM-L6-v2 not found (make setup)")
    texts = [text for row in rows for text in (row["newer"], row["older"])]
    vectors = np.asarray(MiniLMEmbedder(model).embed(texts), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    annotator = load_annotator(name)
    affects = [annotator.annotate(text).to_dict() for text in texts]
    return [(row["link"], texts[2 * n], texts[2 * n + 1], float(vectors[2 * n] @ vectors[2 * n + 1]),
             affects[2 * n], affects[2 * n + 1]) for n, row in enumerate(rows)]  # fmt: skip


def scores(pairs: list[Any], limits: Thresholds) -> dict[str, tuple[float, float]]:
    """Precision and recall per link type and for any link (a link of the wrong type is
    wrong), with the contradiction check first as in sleep."""
    got = [None if _opposed(newer, older, a, b) and cosine >= CONTRADICTION_COSINE else
           affinity(newer, older, cosine, a, b, limits)
           for _, newer, older, cosine, a, b in pairs]  # fmt: skip
    table = {}
    for kind in ("resonates", "elaborates", "any"):

        def wanted(link: str | None, kind: str = kind) -> bool:
            return link is not None and (kind == "any" or link == kind)

        predicted = [
            (pair[0], found) for pair, found in zip(pairs, got, strict=True) if wanted(found)
        ]
        right = sum(truth == found for truth, found in predicted)
        relevant = sum(wanted(pair[0]) for pair in pairs)
        table[kind] = (right / len(predicted) if predicted else 1.0, right / relevant)
    return table


def labelled(annotator: str) -> dict[str, Any]:
    pairs = labelled_pairs(annotator)
    chosen = Thresholds()
    print(f"{len(pairs)} pairs: {dict(Counter(str(p[0]) for p in pairs))}")
    print("parameter           value   resonates P/R   elaborates P/R   any link P/R")
    figures: dict[str, Any] = {}
    for name, values in SWEEP.items():
        for value in values:
            table = scores(pairs, replace(chosen, **{name: value}))
            mark = "  ← chosen" if abs(getattr(chosen, name) - value) < 1e-9 else ""
            cells = "   ".join(f"{p:.2f}/{r:.2f}" for p, r in table.values())
            print(f"{name:<18} {value:>6.2f}   {cells}{mark}")
            figures[f"{name} = {value:.2f}{' (chosen)' if mark else ''}"] = {
                f"{kind} {measure}": found[i]
                for kind, found in table.items() for i, measure in enumerate(("P", "R"))
            }  # fmt: skip
    return figures


def archives(size: int, annotator: str) -> dict[str, Any]:
    fillers = [f"filler memory about gardening {n}" for n in range(40)]
    rng = random.Random(7)
    varied = [rng.choice(FRAMES).format(t=rng.choice(TOPICS)) + f" ({n})" for n in range(size)]
    figures: dict[str, Any] = {}
    for name, texts in (("40 fillers", fillers), (f"{size} varied", varied)):
        links, kinds = run(texts, annotator)
        figures[name] = {"links": links, "per 1,000": 1000 * links / len(texts), **kinds}
        print(
            f"{name:<14} {links:>6} links  {1000 * links / len(texts):>7.1f} per 1,000  {dict(kinds)}"
        )
    return figures


if __name__ == "__main__":
    from memdir.archive_format.settings import Settings

    args = sys.argv[1:]
    chosen = Settings().affect.annotator
    if "--annotator" in args:
        at = args.index("--annotator")
        chosen = args[at + 1]
        del args[at : at + 2]
    print(f"affect annotator: {chosen}")
    size = int(args[-1]) if args and args[-1].isdigit() else 1000
    name = "relink-labelled" if args[:1] == ["labelled"] else "relink"
    result = Result(name, {"annotator": chosen, **({} if args[:1] == ["labelled"] else
                                                      {"size": size})})  # fmt: skip
    result.save(labelled(chosen) if name == "relink-labelled" else archives(size, chosen))
