"""The year-of-life suite's fast part (benchmarks/year_of_life.py runs the whole year): one
person's memdir through the CLI, a sleep every two months, the standing questions every 45
days — no hard fact, appointment or pinned memory lost at any date asked, no silent status
change of a teaching, every cut-off as docs/RECALL.md says."""

from __future__ import annotations

from pathlib import Path

from benchmarks.year_of_life import live_year


def test_a_year_of_life_loses_nothing_the_rules_keep(tmp_path: Path) -> None:
    year = live_year(tmp_path / "me", sleep_every=61, ask_every=45)
    assert year.checks > 50
    assert year.failures == []
