"""Automatic supersede, "restates" against "adds": precision and recall of sleep's whole rule
(`distill.replaces`: type and subject alike, the newer restating the older, close enough in
meaning) on tests/fixtures/restates-pairs.jsonl — 40 pairs of teachings written for this (none
from a benchmark): 17 real changes ("moved to Madrid" → "moved to Berlin", a new rent), 17 pairs
that both hold ("lives in Krakow" / "works in Krakow as a nurse"), additions, other people and
other things. `--before` measures the rule as it was (no relation-verb exception, one cosine).

    .venv/bin/python benchmarks/supersede_restates.py [--before] [FIXTURE]

(FIXTURE: another labelled set of the same shape, e.g. tests/fixtures/supersede-pairs.jsonl.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from memdir.indexers import distill, text
from memdir.indexers.embedding import MiniLMEmbedder, find_model_dir

FIXTURE = Path(__file__).parent.parent / "tests" / "fixtures" / "restates-pairs.jsonl"


def before(older: str, older_label: str | None, newer: str, newer_label: str | None,
           cosine: float) -> bool:  # fmt: skip
    """The rule before issue 26: any dropped content word restates; one cosine threshold."""
    if distill._ADDITION.search(newer):
        return False
    negation = bool(text.RESTATEMENT_NEGATION.search(older)) != bool(
        text.RESTATEMENT_NEGATION.search(newer)
    )
    restated = negation or bool(distill._content(older) - distill._content(newer))
    return (cosine >= distill.SUPERSEDE_COSINE and restated
            and distill.same_subject(newer, newer_label, older, older_label))  # fmt: skip


def main(old_rule: bool, fixture: Path = FIXTURE) -> None:
    import numpy as np

    rows = [json.loads(line) for line in fixture.read_text(encoding="utf-8").splitlines()]
    model = find_model_dir()
    if model is None:
        sys.exit("all-MiniLM-L6-v2 not found (make setup)")
    embedder = MiniLMEmbedder(model)
    texts = [text for row in rows for text in (row["old"], row["new"])]
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    labels = [found.label for found in distill.Distiller(embedder).distill(texts, vectors)]
    rule = before if old_rule else distill.replaces
    kinds: dict[str, list[int]] = {}
    hits = predicted = positives = 0
    for number, row in enumerate(rows):
        old, new = 2 * number, 2 * number + 1
        cosine = float(vectors[old] @ vectors[new])
        said = rule(texts[old], labels[old], texts[new], labels[new], cosine)
        truth = bool(row["supersedes"])
        positives += truth
        predicted += said
        hits += said and truth
        kind = row.get("kind", "change" if truth else "other")
        kinds.setdefault(kind, [0, 0])[0] += said
        kinds[kind][1] += 1
        if said != truth:
            print(f"  {'wrong' if said else 'missed'}: {row['old']!r} → {row['new']!r} "
                  f"(cosine {cosine:.2f}, {labels[old]} / {labels[new]})")  # fmt: skip
    precision = hits / predicted if predicted else 1.0
    print(
        f"{'before' if old_rule else 'after'}: precision {precision:.3f}, recall "
        f"{hits / positives:.3f} ({predicted} supersedes, {hits} right, {positives} changes)"
    )
    for kind, (said, total) in sorted(kinds.items()):
        print(f"  {kind}: {said} of {total} superseded")


if __name__ == "__main__":
    paths = [Path(arg) for arg in sys.argv[1:] if not arg.startswith("--")]
    main("--before" in sys.argv[1:], *paths[:1])
