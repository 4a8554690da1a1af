"""Use feedback, the healer (docs/CONTINUITY.md, "Use feedback"): which memories the per-prompt
block delivered did the assistant's reply use — measured like a classifier on labelled pairs,
recorded as rehearsals, counted for recall's `use` component."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import configure, memdir_main

from memdir.archive_format import shelf
from memdir.archive_format.memdir import Memdir
from memdir.indexers import uses
from memdir.usecases.healer import USED_SHARE, use_share

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(("name", "floor"), [("use-labelled.jsonl", 0.95),
                                             ("use-heldout.jsonl", 0.95)])  # fmt: skip
def test_the_measure_separates_used_from_unused_on_the_labelled_pairs(name: str,
                                                                      floor: float) -> None:  # fmt: skip
    rows = [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]
    said = [use_share(row["memory"], row["reply"]) >= USED_SHARE for row in rows]
    truth = [row["used"] for row in rows]
    right = sum(s == t for s, t in zip(said, truth, strict=True))
    false_use = sum(s and not t for s, t in zip(said, truth, strict=True))
    assert right / len(rows) >= floor  # measured: 0.979 and 1.000 (BENCHMARKS.md)
    assert false_use == 0  # a memory never counts as used on a reply that only shares a word
    assert {True, False} == set(truth)  # the set holds both classes


def _run(memdir: Memdir, *args: str, now: str, stdin: str | None = None) -> str:
    done = memdir_main("--dir", str(memdir.root), *args, now=now, stdin=stdin)
    assert done.code == 0, done
    return done.out.strip()


def _fill(memdir: Memdir) -> None:
    """Other memories, so the full-text scores have something to stand out from."""
    for number in range(6):
        _run(memdir, "teach", f"the weather note number {number} about rain",
             now="2026-05-01T08:00:00Z")  # fmt: skip


def _recall_lines(memdir: Memdir) -> list[dict]:
    return [item.data for item in shelf.read_all(memdir.recall_shelf) if item.data]


def test_a_reply_that_uses_a_delivered_memory_rehearses_it(hashed: Memdir) -> None:
    _fill(hashed)
    rent = _run(hashed, "teach", "My rent is 1450 euros a month", now="2026-05-01T09:00:00Z")
    coffee = _run(hashed, "teach", "I take my coffee black with no sugar",
                  now="2026-05-01T09:00:00Z")  # fmt: skip
    assert rent in _run(hashed, "context", "my rent is how many euros a month",
                        now="2026-05-02T10:00:00Z")  # fmt: skip
    _run(hashed, "journal", "add", "--role", "assistant", "--session", "s1",
         "Your rent is 1450 euros, so the 1600 flat costs 150 more a month.",
         now="2026-05-02T10:01:00Z")  # fmt: skip
    assert coffee in _run(hashed, "context", "how do I take my coffee, black with sugar?",
                          now="2026-05-02T10:02:00Z")  # fmt: skip
    _run(hashed, "journal", "add", "--role", "assistant", "--session", "s1",
         "Noted, I will order a tea for you instead.", now="2026-05-02T10:03:00Z")  # fmt: skip
    deliveries = [line for line in _recall_lines(hashed) if line.get("via") == "context"]
    assert [line["memories"] for line in deliveries] == [[rent], [coffee]]
    report = json.loads(_run(hashed, "heal", "--json", now="2026-05-02T12:00:00Z"))
    assert report["replies"] == 2 and report["paired"] == 2
    assert [(p["delivered"], p["used"]) for p in report["pairs"]] == [([rent], [rent]),
                                                                      ([coffee], [])]  # fmt: skip
    (use,) = [line for line in _recall_lines(hashed) if line.get("via") == "use"]
    assert use["memories"] == [rent] and use["at"] == "2026-05-02T10:01:00Z"
    assert use["actor"] == "memdir"
    counts = uses.read(hashed)
    assert counts[rent] == [1, 1] and counts[coffee] == [1, 0]
    # the component by its documented formula: (used + 1) / (delivered + 2) − 1/2
    assert uses.component(counts, rent) == pytest.approx(2 / 3 - 0.5)
    assert uses.component(counts, coffee) == pytest.approx(1 / 3 - 0.5)
    assert uses.component(counts, "m-0000000000000000") == 0.0
    # a second run looks only at what is new
    again = json.loads(_run(hashed, "heal", "--json", now="2026-05-02T13:00:00Z"))
    assert again["replies"] == 0 and len(_recall_lines(hashed)) == 3


def test_a_reply_long_after_the_block_or_a_dry_run_records_nothing(hashed: Memdir) -> None:
    _fill(hashed)
    rent = _run(hashed, "teach", "My rent is 1450 euros a month", now="2026-05-01T09:00:00Z")
    assert rent in _run(hashed, "context", "my rent is how many euros a month",
                        now="2026-05-02T10:00:00Z")  # fmt: skip
    _run(hashed, "journal", "add", "--role", "assistant", "--session", "s1",
         "Your rent is 1450 euros.", now="2026-05-02T10:05:00Z")  # fmt: skip
    dry = json.loads(_run(hashed, "heal", "--dry-run", "--json", now="2026-05-02T12:00:00Z"))
    assert dry["used"] == 1 and not [x for x in _recall_lines(hashed) if x.get("via") == "use"]
    assert uses.read(hashed) == {}
    _run(
        hashed,
        "journal",
        "add",
        "--role",
        "assistant",
        "--session",
        "s1",
        "Your rent is still 1450 euros.",
        now="2026-05-02T11:40:00Z",
    )  # 100 min after: no pair
    report = json.loads(_run(hashed, "heal", "--json", now="2026-05-02T12:00:00Z"))
    assert report["replies"] == 2 and report["paired"] == 1  # only the first follows the block


def test_the_use_component_counts_in_ranking_only_when_weighted(hashed: Memdir) -> None:
    _fill(hashed)
    used = _run(hashed, "teach", "the garden shed key hangs by the back door",
                now="2026-05-01T09:00:00Z")  # fmt: skip
    ignored = _run(hashed, "teach", "the garden shed roof needs new felt",
                   now="2026-05-01T09:00:00Z")  # fmt: skip
    for hour in (10, 11, 12):
        for minute, prompt in ((0, "where does the garden shed key hang"),
                               (2, "what does the garden shed roof need")):  # fmt: skip
            _run(hashed, "context", prompt, now=f"2026-05-02T{hour}:0{minute}:00Z")
            _run(hashed, "journal", "add", "--role", "assistant", "--session", "s1",
                 "The shed key hangs by the back door.",
                 now=f"2026-05-02T{hour}:0{minute + 1}:00Z")  # fmt: skip
    _run(hashed, "heal", now="2026-05-02T13:00:00Z")

    def components(*extra: str) -> dict[str, float]:
        data = json.loads(_run(hashed, "recall", "the garden shed", "--json", "--explain",
                               "--no-record", *extra, now="2026-05-02T14:00:00Z"))  # fmt: skip
        return {row["id"]: row["use"] for row in next(s for s in data["stages"]
                                                      if s["name"] == "score")["rows"]}  # fmt: skip

    assert set(components().values()) == {0.0}  # weight 0 by default: not even read
    configure(hashed, recall={"profiles": {"healed": {"use": 1.0}}})
    healed = components("--profile", "healed")
    assert healed[used] == pytest.approx(4 / 5 - 0.5)  # delivered 3 times, used 3 times
    assert healed[ignored] == pytest.approx(1 / 5 - 0.5)  # delivered 3 times, never used
    assert {value for key, value in healed.items() if key not in (used, ignored)} == {0.0}


def test_sleep_runs_the_healer(hashed: Memdir) -> None:
    _fill(hashed)
    rent = _run(hashed, "teach", "My rent is 1450 euros a month", now="2026-05-01T09:00:00Z")
    _run(hashed, "context", "my rent is how many euros a month", now="2026-05-02T10:00:00Z")
    _run(hashed, "journal", "add", "--role", "assistant", "--session", "s1",
         "Your rent is 1450 euros.", now="2026-05-02T10:01:00Z")  # fmt: skip
    slept = json.loads(_run(hashed, "sleep", "--json", now="2026-05-03T03:00:00Z"))
    assert slept["use"]["paired"] == 1 and slept["use"]["pairs"][0]["used"] == [rent]
