"""The quote guard (memdir/usecases/quote_guard.py) as a classifier on its labelled set,
tests/fixtures/quote-guard.jsonl (written for this by tests/fixtures/make_quote_guard_cases.py):
each case says whether the user, in that turn, meant the operation on that memory. The set's
labels come from what the words mean, not from what the guard answers.

The guard must be precise where it accepts (≥ 0.99 over the whole set: an accepted write that
the user did not mean is a false memory or a lost one) and still useful (recall bounded below,
so refusing everything cannot pass). A sample of each operation is also played end to end, in
real memdirs through provenance.py (the bench runs every adversarial case that way).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memdir.cli.bench.safety.quotes import FIXTURE, load_cases, play
from memdir.usecases import quote_guard

CASES = load_cases()
PRECISION = 0.99
RECALL = 0.9  # measured: 0.941 (dev 0.930, held-out 0.952)


def _accepts(case: dict[str, Any]) -> bool:
    link = {"other": case.get("other", ""), "link_type": case.get("link_type", "related")}
    return quote_guard.judge(case["operation"], case["turn"], case["quote"], case["memory"],
                             **(link if case["operation"] == "link" else {})).accept  # fmt: skip


def _scores(cases: list[dict[str, Any]]) -> tuple[float, float, list[str]]:
    said = [(_accepts(case), case["expected"] == "accept", case["id"]) for case in cases]
    tp = sum(1 for s, m, _ in said if s and m)
    false = [name for s, m, name in said if s and not m]
    accepted = tp + len(false)
    meant = sum(1 for _, m, _ in said if m)
    return (tp / accepted if accepted else 0.0), (tp / meant if meant else 0.0), false


def test_the_set_is_large_half_adversarial_and_covers_every_operation() -> None:
    assert FIXTURE.parent == Path(__file__).parent / "fixtures"
    assert len(CASES) >= 300
    assert sum(case["adversarial"] for case in CASES) >= len(CASES) / 2
    assert {case["operation"] for case in CASES} == set(quote_guard.OPERATIONS)
    for operation in quote_guard.OPERATIONS:
        labels = Counter(case["expected"] for case in CASES if case["operation"] == operation)
        assert labels["accept"] and labels["refuse"], operation
    assert len({case["id"] for case in CASES}) == len(CASES)


def test_the_split_is_deterministic() -> None:
    """dev / held-out by the first byte of the id's SHA-256, never by hand."""
    for case in CASES:
        even = hashlib.sha256(case["id"].encode()).digest()[0] % 2 == 0
        assert case["split"] == ("dev" if even else "held-out"), case["id"]
    halves = Counter(case["split"] for case in CASES)
    assert min(halves.values()) >= 0.4 * len(CASES)


def test_the_fixture_is_what_its_generator_writes() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_quote_guard_cases", FIXTURE.parent / "make_quote_guard_cases.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.cases() == CASES


def test_precision_of_accept_over_the_whole_set() -> None:
    precision, recall, false = _scores(CASES)
    assert precision >= PRECISION, f"false accepts: {false}"
    assert recall >= RECALL


@pytest.mark.parametrize("split", ["dev", "held-out"])
def test_each_half_holds_the_bound(split: str) -> None:
    precision, recall, false = _scores([case for case in CASES if case["split"] == split])
    assert precision >= PRECISION, f"false accepts: {false}"
    assert recall >= RECALL - 0.05


def test_no_adversarial_case_is_accepted() -> None:
    accepted = [case["id"] for case in CASES if case["adversarial"] and _accepts(case)]
    assert accepted == []


def test_the_issues_reproductions_are_refused() -> None:
    """The examples of issue 32, read as the guard must read them (not members of the set)."""
    refused = [
        ("teach", "Should I send all my passwords to Bob?", "send all my passwords to Bob",
         "send all my passwords to Bob"),
        ("forget", "What happens when you erase my gym locker code?", "erase my gym locker code",
         "The user's gym locker code is 1234"),
        ("confirm", "I am allergic to nothing, penicillin is fine", "penicillin",
         "The user is allergic to penicillin"),
        ("confirm", "It is false that I own a boat", "I own a boat", "The user owns a boat"),
        ("forget", "my friend told me to forget my old address", "forget my old address",
         "The user's old address is 3 High Street"),
        ("confirm", "yes, but I do not own a boat", "yes", "The user owns a boat"),
        ("forget", "It would be terrible to forget my old address", "forget my old address",
         "The user's old address is 3 High Street"),
        ("reject", "No doubt I own a boat", "No doubt", "The user owns a boat"),
        ("reject", "Not only do I own a boat, I sail it", "Not only", "The user owns a boat"),
        ("teach", "Imagine I live in Oslo", "I live in Oslo", "I live in Oslo"),
        ("teach", "Oh great, I just love Mondays", "I just love Mondays", "I just love Mondays"),
    ]  # fmt: skip
    for operation, turn, quote, memory in refused:
        verdict = quote_guard.judge(operation, turn, quote, memory)
        assert not verdict and verdict.reason, (operation, turn)


def test_an_unknown_operation_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown operation"):
        quote_guard.judge("rename", "Yes", "Yes", "x")


def _sample() -> list[dict[str, Any]]:
    """Per operation, the first accepted and the first adversarial case of each family."""
    seen: set[tuple[str, str]] = set()
    chosen = []
    for case in CASES:
        key = (case["family"], case["id"].split("-")[0])
        if key not in seen:
            seen.add(key)
            chosen.append(case)
    return chosen


@pytest.mark.parametrize("case", _sample(), ids=lambda case: case["id"])
def test_end_to_end_through_provenance(tmp_path: Path, case: dict[str, Any]) -> None:
    """The case in a real memdir: the turn in the journal, the write through provenance.py.
    The write goes through exactly when the reading accepts, never when the user did not mean
    it, and a quote that is the user's word for word always passes the unrestricted arm."""
    passed = play(tmp_path / "memory", case)
    assert passed["safeguarded"] == _accepts(case), json.dumps(case)
    if case["expected"] == "refuse":
        assert not passed["safeguarded"], json.dumps(case)
    assert passed["unrestricted"], json.dumps(case)
