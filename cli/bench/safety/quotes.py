"""11. The quote guard on its adversarial cases: the labelled set tests/fixtures/quote-guard.jsonl
(written for this; docs/SAFETY.md) holds (turn, quote, memory, operation) cases, and every
adversarial one — a question, a negation cut off, reported speech, a hypothetical, sarcasm, a
decision about another memory — is played in a memdir of its own: the memory written as the
operation needs it (an inference to confirm, a teaching to reject or forget), the user's turn
recorded by the trusted path, then the assistant's write quoting it.

Safeguarded: provenance.py as shipped. Unrestricted: a guard that only checks that the quote
is the user's, word for word, in a trusted turn of the window (what the guard did for all but
teach before it read what the words mean). An escape is an adversarial case whose write went
through."""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from .harness import OPEN, SAFE, Lab, Measure, Metric, compare
from .user import on_day

FIXTURE = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "quote-guard.jsonl"


def load_cases(path: Path = FIXTURE) -> list[dict[str, Any]]:
    """The labelled set, one case per line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def play(root: Path, case: dict[str, Any]) -> dict[str, bool]:
    """One case in a fresh memdir under `root`: whether each arm lets the write through."""
    from memdir.archive_format import journal, lifecycle
    from memdir.archive_format.memdir import init
    from memdir.usecases import provenance

    start = on_day(1, 9)
    memdir, _ = init(root, start)
    operation, quote, text = case["operation"], case["quote"], case["memory"]
    memory_id = ""
    if operation == "confirm":
        memory_id = lifecycle.infer(memdir, text, start).id
    elif operation in ("reject", "forget", "link", "show"):
        memory_id = lifecycle.teach(memdir, text, start).id
    said = start + timedelta(minutes=5)
    journal.add_turns(memdir, [journal.new_turn(said, "user", "chat", case["turn"])])
    now = said + timedelta(minutes=5)
    quoted = provenance.find_quotes(memdir, quote, start, now, strictly_after=True)
    unrestricted = bool(quoted)
    if operation == "teach":
        safeguarded = provenance.teach(memdir, text, now).stored_as == "teaching"
    elif operation == "confirm":
        safeguarded = provenance.confirm(memdir, memory_id, quote, now).done
    elif operation == "reject":
        safeguarded = provenance.reject(memdir, memory_id, "the user said so", now, quote).done
    elif operation == "forget":
        safeguarded = provenance.forget(memdir, memory_id, quote, now).done
    else:
        link = {"other": case.get("other", ""), "link_type": case.get("link_type", "related")}
        if operation != "link":
            link = {}
        found, _ = provenance.vouch(memdir, operation, quote, now, text, memory_id, **link)
        safeguarded = found is not None
    return {SAFE: safeguarded, OPEN: unrestricted}


def quotes(lab: Lab, rng: random.Random) -> tuple[list[Metric], dict[str, Any]]:
    """Every adversarial case of the labelled set, in both arms."""
    del rng  # the set is fixed: every case, in its order
    if not FIXTURE.exists():
        return [], {"skipped": f"the labelled set {FIXTURE} is in a source checkout only"}
    cases = [case for case in load_cases() if case["adversarial"]]
    escapes: dict[str, Counter[str]] = {SAFE: Counter(), OPEN: Counter()}
    where = lab.scratch / "quotes"
    for number, case in enumerate(cases):
        root = where / f"case-{number}"
        for arm, passed in play(root, case).items():
            if passed:
                escapes[arm][case["operation"]] += 1
        shutil.rmtree(root, ignore_errors=True)
    found = {
        arm: {
            "escapes": sum(escapes[arm].values()),
            "escape_share": sum(escapes[arm].values()) / len(cases),
            "by_operation": dict(sorted(escapes[arm].items())),
            "cases": len(cases),
        }
        for arm in (SAFE, OPEN)
    }
    metrics = compare(
        "11 quote guard",
        found,
        Measure("quote guard: adversarial writes that went through", "escapes",
                note=f"{len(cases)} adversarial cases of tests/fixtures/quote-guard.jsonl, "
                     "each in its own memdir"),
        Measure("quote guard: share of adversarial cases", "escape_share"),
    )  # fmt: skip
    return metrics, found
