"""Time expressions → windows, relative to a fixed now (Sunday 2026-11-29 15:00 UTC)."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from memdir.indexers.recall.timewindow import find_time_window

NOW = datetime(2026, 11, 29, 15, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did I do yesterday?", date(2026, 11, 28), date(2026, 11, 29)),
        ("meetings last week", date(2026, 11, 16), date(2026, 11, 23)),
        ("anything this month", date(2026, 11, 1), date(2026, 12, 1)),
        ("where did we go in May 2023", date(2023, 5, 1), date(2023, 6, 1)),
        ("in may", date(2026, 5, 1), date(2026, 6, 1)),
        ("in december", date(2025, 12, 1), date(2026, 1, 1)),
        ("on 8 May, 2023", date(2023, 5, 8), date(2023, 5, 9)),
        ("May 8 2023", date(2023, 5, 8), date(2023, 5, 9)),
        ("what happened in 2024", date(2024, 1, 1), date(2025, 1, 1)),
        ("our trip last summer", date(2026, 6, 1), date(2026, 9, 1)),
        ("last monday", date(2026, 11, 23), date(2026, 11, 24)),
        ("two weeks ago", date(2026, 11, 12), date(2026, 11, 19)),
        ("3 days ago", date(2026, 11, 25), date(2026, 11, 27)),
        ("what did Paola explore on 24.01.2024?", date(2024, 1, 24), date(2024, 1, 25)),
        ("on 2024-01-05", date(2024, 1, 5), date(2024, 1, 6)),
        ("on 1/24/2024", date(2024, 1, 24), date(2024, 1, 25)),
        ("on 24/1/2024", date(2024, 1, 24), date(2024, 1, 25)),
        ("on 3/4/2024", date(2024, 3, 4), date(2024, 3, 5)),
        ("which place did I visit in the first week of 2024?", date(2024, 1, 1), date(2024, 1, 8)),
        ("the second week of November", date(2026, 11, 8), date(2026, 11, 15)),
        ("the last week of february 2024", date(2024, 2, 23), date(2024, 3, 1)),
        ("the 3rd week of December", date(2025, 12, 15), date(2025, 12, 22)),
        ("the last week of 2025", date(2025, 12, 25), date(2026, 1, 1)),
        ("where will Kate go in the spring of 2024?", date(2024, 3, 1), date(2024, 6, 1)),
        ("in winter 2021 - 2022", date(2021, 12, 1), date(2022, 3, 1)),
    ],
)
def test_expressions(query: str, start: date, end: date) -> None:
    window = find_time_window(query, NOW)
    assert window is not None
    assert (window.start.date(), window.end.date()) == (start, end)


def test_past_year_is_rolling() -> None:
    window = find_time_window("the past year", NOW)
    assert window is not None and window.contains(datetime(2026, 1, 15, tzinfo=timezone.utc))
    assert not window.contains(datetime(2025, 11, 1, tzinfo=timezone.utc))


@pytest.mark.parametrize("query", ["what is my sister's name?", "I may go later", "coffee order"])
def test_no_window(query: str) -> None:
    assert find_time_window(query, NOW) is None


def test_impossible_numeric_date_is_no_window() -> None:
    assert find_time_window("on 31.02.2024", NOW) is None
