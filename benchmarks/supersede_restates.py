"""Automatic supersede, "restates" against "adds": precision and recall of sleep's whole rule
(`distill.replaces`: type and subject alike, the newer restating the older, close enough in
meaning) on tests/fixtures/restates-pairs.jsonl — 40 pairs of teachings written for this (none
from a benchmark): 17 real changes ("moved to Madrid" → "moved to Berlin", a new rent), 17 pairs
that both hold ("lives in Krakow" / "works in Krakow as a nurse"), additions, other people and
other things. `--before` measures the rule as it was (no relation-verb exception, one cosine).

    .venv/bin/python -m benchmarks.supersede_restates [--before] [FIXTURE]

(FIXTURE: another labelled set of the same shape, e.g. tests/fixtures/supersede-pairs.jsonl.)
The result goes to benchmarks/results/supersede_restates.json (with --before,
supersede_restates-before.json; --result elsewhere).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, Result, embedded_pairs
from memdir.indexers import distill, text

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


def main(old_rule: bool, fixture: Path = FIXTURE) -> dict[str, Any]:
    """Print the rule's precision and recall and each pair it gets wrong; return the figures."""
    rows, texts, vectors, labels = embedded_pairs(fixture)
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
    figures: dict[str, Any] = {
        "the whole rule": {"precision": precision, "recall": hits / positives,
                           "supersedes": predicted, "right": hits, "changes": positives}
    }  # fmt: skip
    figures.update({f"pairs of kind {kind}": {"superseded": said, "pairs": total}
                    for kind, (said, total) in sorted(kinds.items())})  # fmt: skip
    return figures


def command_line() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fixture", type=Path, nargs="?", default=FIXTURE)
    parser.add_argument("--before", action="store_true", help="the rule before issue 26")
    parser.add_argument("--result", type=Path, help="write the result here")
    args = parser.parse_args()
    name = "supersede_restates" + ("-before" if args.before else "")
    result = Result(name, vars(args), args.result or RESULTS / f"{name}.json")
    result.save(main(args.before, args.fixture))


if __name__ == "__main__":
    command_line()
