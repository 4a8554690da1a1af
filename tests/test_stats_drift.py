"""`memdir stats --drift` (issue 30, item 5): per month written, the memories' mean valence and
arousal, their strongest emotion and their mix of types, with the Jensen–Shannon divergence of
each month's mix from the month before and from the whole. Only memories every surface may show
count; the expected numbers are worked out by hand from a scripted history."""

from __future__ import annotations

import json

import pytest
from conftest import configure, memdir_main

from memdir.archive_format.memdir import Memdir


def test_drift_by_month_from_a_hand_worked_history(hashed: Memdir) -> None:
    memdir = configure(hashed, affect={"annotator": "none"})  # affect only as the user gave it
    root = str(memdir.root)

    def ok(*args: str, now: str) -> str:
        done = memdir_main("--dir", root, *args, now=now)
        assert done.code == 0, done
        return done.out.strip()

    march, april = "2026-03-10T09:00:00Z", "2026-04-10T09:00:00Z"
    ok("teach", "I like the new flat", "--type", "FACT", "--valence", "0.6", "--arousal", "0.2",
       now=march)  # fmt: skip
    ok("teach", "Bus 12 stops at the corner", "--type", "FACT", "--valence", "0.0",
       "--arousal", "0.4", now=march)  # fmt: skip
    ok("teach", "The move was exhausting", "--type", "FACT", "--valence", "-0.6", now=april)
    ok("teach", "I felt lonely on Sunday", "--type", "EMOTION", "--valence", "-0.8",
       "--arousal", "0.6", now=april)  # fmt: skip
    # neither counts: a private memory would be summarised, a rejected guess is not the user's
    ok("teach", "My therapist says I am burnt out", "--type", "FACT", "--visibility", "private",
       "--valence", "-1", now=april)  # fmt: skip
    guess = ok("infer", "The user dislikes the flat", "--type", "EMOTION", now=april)
    ok("reject", guess, "--reason", "wrong", now=april)

    report = json.loads(ok("stats", "--drift", "--json", now="2026-05-01T09:00:00Z"))["drift"]
    assert report["memories"] == 4
    assert report["types"] == {"EMOTION": 0.25, "FACT": 0.75}
    first, second = report["months"]
    assert first["month"] == "2026-03" and first["memories"] == 2
    assert first["valence"] == pytest.approx(0.3) and first["arousal"] == pytest.approx(0.3)
    assert first["types"] == {"FACT": 1.0} and first["type_drift"] is None
    assert second["month"] == "2026-04" and second["memories"] == 2
    assert second["valence"] == pytest.approx(-0.7) and second["arousal"] == pytest.approx(0.3)
    assert second["valence_change"] == pytest.approx(-1.0)
    assert second["types"] == {"EMOTION": 0.5, "FACT": 0.5}
    # p = (1, 0), q = (.5, .5), m = (.75, .25): (log2(4/3) + .5·log2(2/3) + .5·log2(2)) / 2
    assert second["type_drift"] == pytest.approx(0.3113, abs=1e-4)
    assert first["emotion"] is None  # no annotator, and the user gave no chord
    table = ok("stats", "--drift", now="2026-05-01T09:00:00Z")
    assert "2026-03" in table and "2026-04" in table and "0.31 bits" in table
    both = memdir_main("--dir", root, "stats", "--drift", "--provenance")
    assert both.code == 8 and both.err.startswith("memdir: error:")
