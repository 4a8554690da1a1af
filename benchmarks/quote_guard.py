"""The quote guard as a classifier on its labelled set (tests/fixtures/quote-guard.jsonl, written
for this; each case says whether the user meant the operation on the memory): precision and
recall of "accept", per split (dev, held-out), per operation, and over the whole set.

By default every case is played end to end — a memdir of its own, the user's turn recorded by
the trusted path, the assistant's write through memdir/usecases/provenance.py
(cli/bench/safety/quotes.py, `play`). `--reading-only` asks quote_guard.judge alone (fast).
`--provenance FILE` plays the cases through another provenance module (e.g. main's, to
measure before → after); operations that module does not guard (link, people, self, show)
count as accepted, as they were written unguarded.

Run: .venv/bin/python -m benchmarks.quote_guard [--reading-only] [--provenance FILE]

The result goes to benchmarks/results/quote_guard.json (quote_guard-reading-only.json with
--reading-only; --result elsewhere, which a run with --provenance needs).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, Result
from memdir.cli.bench.safety.quotes import load_cases, play
from memdir.usecases import quote_guard


def _module(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("provenance_under_test", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def decide(case: dict[str, Any], root: Path | None, other: Any) -> bool:
    """Whether the guard accepts the case."""
    if root is None:
        link = {"other": case.get("other", ""), "link_type": case.get("link_type", "related")}
        return quote_guard.judge(case["operation"], case["turn"], case["quote"], case["memory"],
                                 **(link if case["operation"] == "link" else {})).accept  # fmt: skip
    if other is not None:
        if case["operation"] not in ("teach", "confirm", "reject", "forget"):
            return True  # written without a guard
        from memdir.usecases import provenance

        saved = sys.modules["memdir.usecases.provenance"]
        sys.modules["memdir.usecases.provenance"] = other
        sys.modules["memdir.usecases"].provenance = other
        try:
            return play(root, case)["safeguarded"]
        finally:
            sys.modules["memdir.usecases.provenance"] = saved
            sys.modules["memdir.usecases"].provenance = provenance
    return play(root, case)["safeguarded"]


def score(rows: list[tuple[bool, bool]]) -> dict[str, Any]:
    """n, precision and recall of "accept" (None where undefined), false accepts."""
    tp = sum(1 for said, meant in rows if said and meant)
    fp = sum(1 for said, meant in rows if said and not meant)
    fn = sum(1 for said, meant in rows if not said and meant)
    return {"n": len(rows), "precision": tp / (tp + fp) if tp + fp else None,
            "recall": tp / (tp + fn) if tp + fn else None, "false accepts": fp}  # fmt: skip


def shown(found: dict[str, Any]) -> str:
    def share(value: float | None) -> str:
        return "—" if value is None else f"{value:.3f}"

    return (f"n={found['n']:4d}  precision {share(found['precision'])}  recall "
            f"{share(found['recall'])}  (false accepts {found['false accepts']})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reading-only", action="store_true")
    parser.add_argument("--provenance", help="play through this provenance.py instead")
    parser.add_argument("--result", type=Path, help="write the result here")
    args = parser.parse_args()
    if args.provenance and not args.result:
        parser.error("--provenance measures another module: give --result for it")
    name = "quote_guard" + ("-reading-only" if args.reading_only else "")
    result = Result(name, vars(args), args.result or RESULTS / f"{name}.json")
    other = _module(args.provenance) if args.provenance else None
    cases = load_cases()
    scratch = Path(tempfile.mkdtemp(prefix="memdir-quotes-"))
    groups: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    wrong: list[str] = []
    try:
        for number, case in enumerate(cases):
            root = None if args.reading_only else scratch / f"case-{number}"
            said = decide(case, root, other)
            meant = case["expected"] == "accept"
            for group in ("all", f"split {case['split']}", f"operation {case['operation']}"):
                groups[group].append((said, meant))
            if said and not meant:
                wrong.append(
                    f"  false accept {case['id']}: {case['turn']!r} quoting {case['quote']!r}"
                )
            if root is not None:
                shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    figures = {group: score(groups[group])
               for group in sorted(groups, key=lambda name: (name != "all", name))}  # fmt: skip
    for group, found in figures.items():
        print(f"{group:20s} {shown(found)}")
    print("\n".join(wrong[:40]))
    result.save(figures, {"false accepts": wrong})


if __name__ == "__main__":
    main()
