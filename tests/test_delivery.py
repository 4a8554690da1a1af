"""What a person and an agent receive (issue 26): hard facts and appointments past the age
cut-offs, the per-prompt block's relevance, the verdict's evidence, wake's sections and sleep's
visible supersedes — each expectation written from docs/RECALL.md and docs/CONTINUITY.md."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import configure

from memdir.archive_format import lifecycle
from memdir.archive_format.cutoffs import named_day, past_cutoff
from memdir.archive_format.memdir import Memdir, init
from memdir.cli.main import main

NOV1 = datetime(2026, 11, 1, 10, 0, tzinfo=timezone.utc)


def cli(capsys: pytest.CaptureFixture[str], memdir: Memdir, *args: str) -> tuple[int, str]:
    """Run `memdir --dir MEMDIR ARGS…` in-process; its exit status and stdout."""
    capsys.readouterr()
    code = main(["--dir", str(memdir.root), *args])
    return code, capsys.readouterr().out


def recall_json(capsys: pytest.CaptureFixture[str], memdir: Memdir, query: str, now: datetime,
                *extra: str) -> dict:  # fmt: skip
    code, out = cli(capsys, memdir, "recall", query, "--json", "--no-record", "--now",
                    now.isoformat(), *extra)  # fmt: skip
    assert code == 0, out
    return json.loads(out)


@pytest.fixture
def minilm_md(tmp_path: Path, minilm) -> Memdir:  # noqa: ARG001 (skips without the model)
    memdir, _ = init(tmp_path / "memory", NOV1)
    return memdir


# --- the age cut-offs: hard facts and dated memories (archive_format/cutoffs.py) ---------------


def test_a_keyed_financial_teaching_outlives_the_financial_cutoff(
    capsys: pytest.CaptureFixture[str], minilm_md: Memdir
) -> None:
    rent = lifecycle.teach(minilm_md, "My rent is 1450 euros a month", NOV1, type="FINANCIAL",
                           key="rent").id  # fmt: skip
    for days in (2, 8, 40, 200):
        found = recall_json(capsys, minilm_md, "how much is my rent", NOV1 + timedelta(days=days))
        assert found["verdict"] == "GROUNDED", days
        assert rent in [r["id"] for r in found["results"]], days
    code, out = cli(capsys, minilm_md, "wake", "--json", "--now",
                    (NOV1 + timedelta(days=30)).isoformat())  # fmt: skip
    assert code == 0 and rent in out


def test_a_typed_or_pinned_hard_fact_outlives_the_cutoffs_but_news_does_not() -> None:
    cutoffs = {"financial": timedelta(hours=168), "emotion": timedelta(hours=48)}
    month = NOV1 + timedelta(days=30)
    assert past_cutoff(("FINANCIAL",), NOV1, month, cutoffs) == "FINANCIAL"
    assert past_cutoff(("FINANCIAL",), NOV1, month, cutoffs, hard=True) is None
    assert past_cutoff(("EMOTION",), NOV1, NOV1 + timedelta(hours=49), cutoffs) == "EMOTION"


def test_an_appointment_counts_its_cutoff_from_the_day_it_names(
    capsys: pytest.CaptureFixture[str], minilm_md: Memdir
) -> None:
    dentist = lifecycle.teach(minilm_md, "My dentist appointment is on 3 December", NOV1,
                              type="DATE", subtype="appointment").id  # fmt: skip
    for day in (NOV1 + timedelta(days=19), datetime(2026, 12, 3, 8, tzinfo=timezone.utc),
                datetime(2026, 12, 9, 8, tzinfo=timezone.utc)):  # fmt: skip
        found = recall_json(capsys, minilm_md, "when is my dentist appointment", day)
        assert dentist in [r["id"] for r in found["results"]], day
    # a week after the day it names, the date cut-off (168 h) has passed
    gone = recall_json(capsys, minilm_md, "when is my dentist appointment",
                       datetime(2026, 12, 12, 8, tzinfo=timezone.utc))  # fmt: skip
    assert dentist not in [r["id"] for r in gone["results"]]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My dentist appointment is on 3 December", "2026-12-03"),
        ("dentist on December 3rd, 2027 at 10", "2027-12-03"),
        ("the plumber comes 2026-11-04", "2026-11-04"),
        ("we met on 28 October", "2026-10-28"),  # a past day within a week: this year
        ("the concert is on 2 March", "2027-03-02"),  # the next 2 March
        ("nothing dated here, 31 flavours", None),
        ("on 31 February", None),
    ],
)
def test_named_day(text: str, expected: str | None) -> None:
    day = named_day(text, NOV1)
    assert (day.isoformat() if day else None) == expected
