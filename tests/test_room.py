"""`memdir room`: the affect of the conversation right now, from the journal, through the
policy (docs/AFFECT.md, "Reading the room")."""

from __future__ import annotations

import json

from conftest import configure, memdir_main

from memdir.archive_format.errors import BadInputError, ExitStatus
from memdir.archive_format.memdir import Memdir
from memdir.usecases.room import TREND, sparkline

NOW = "2026-05-01T12:00:00Z"
HAPPY = [
    "I am so happy and grateful today, what a wonderful morning",
    "we had a lovely picnic, it was great fun and I love it",
]
SAD = [
    "now I feel terrible, hopeless and miserable",
    "everything is awful and I hate this horrible day, I am so sad",
]


def _run(memdir: Memdir, *args: str) -> str:
    done = memdir_main("--dir", str(memdir.root), *args, now=NOW)
    assert done.code == 0, done
    return done.out


def _turns(memdir: Memdir, session: str, texts: list[str], hour: int = 10, **options: str) -> None:
    """The user's turns, a minute apart from `hour`:00 on NOW's day."""
    lines = "\n".join(
        json.dumps({"role": "user", "text": text, "at": f"2026-05-01T{hour:02}:{minute:02}:00Z",
                    **options})
        for minute, text in enumerate(texts)
    )  # fmt: skip
    done = memdir_main("--dir", str(memdir.root), "journal", "add", "--jsonl",
                       "--session", session, stdin=lines + "\n", now=NOW)  # fmt: skip
    assert done.code == 0, done


def test_a_conversation_that_turns_dark_reads_as_falling_and_engages_the_counterweights(
    hashed: Memdir,
) -> None:
    configure(hashed, affect={"annotator": "vader"})
    _turns(hashed, "s1", HAPPY + SAD)
    found = json.loads(_run(hashed, "room", "--json"))
    assert found["session"] == "s1"
    rows = found["turns"]
    assert [row["text"] for row in rows] == HAPPY + SAD[:1] + [SAD[1][:59] + "…"]
    assert all(row["valence"] > 0 for row in rows[:2]) and all(r["valence"] < 0 for r in rows[2:])
    mood = found["mood"]
    assert mood["user_turns"] == 4
    # the documented rule: later half's mean minus the earlier half's, TREND or more down
    halves = sum(r["valence"] for r in rows[2:]) / 2 - sum(r["valence"] for r in rows[:2]) / 2
    assert halves <= -TREND and mood["trend"] == "falling"
    assert mood["latest_valence"] == rows[-1]["valence"] <= -0.5
    assert mood["counterweights"] is True
    assert mood["sparkline"] == sparkline([r["valence"] for r in rows])
    plain = _run(hashed, "room")
    assert "falling" in plain and "engages the counterweights" in plain


def test_the_room_is_the_latest_session_unless_named_and_the_last_n_turns(hashed: Memdir) -> None:
    configure(hashed, affect={"annotator": "vader"})
    _turns(hashed, "old", SAD, hour=9)
    _turns(hashed, "new", HAPPY, hour=10)
    latest = json.loads(_run(hashed, "room", "--json"))
    assert latest["session"] == "new" and latest["mood"]["trend"] != "falling"
    assert latest["mood"]["counterweights"] is False
    named = json.loads(_run(hashed, "room", "--session", "old", "--turns", "1", "--json"))
    assert [row["text"][:20] for row in named["turns"]] == [SAD[1][:20]]
    assert named["mood"]["trend"] == "steady"  # one turn: no trend


def test_a_private_or_secret_turn_counts_in_no_figure(hashed: Memdir) -> None:
    configure(hashed, affect={"annotator": "vader"})
    _turns(hashed, "s1", HAPPY, hour=9)
    _turns(hashed, "s1", SAD[:1], hour=10, visibility="private")
    _turns(hashed, "s1", SAD[1:], hour=11, secrecy="secret")
    found = json.loads(_run(hashed, "room", "--json"))
    assert [row["text"] for row in found["turns"]] == HAPPY
    assert found["mood"]["user_turns"] == 2 and found["mood"]["counterweights"] is False


def test_no_annotator_and_bad_turns_are_one_line_errors(hashed: Memdir) -> None:
    configure(hashed, affect={"annotator": "none"})
    done = memdir_main("--dir", str(hashed.root), "room", now=NOW)
    assert done.code == BadInputError.status and "affect.annotator" in done.err
    assert "Traceback" not in done.err and len(done.err.strip().splitlines()) == 2  # and a hint
    done = memdir_main("--dir", str(hashed.root), "room", "--turns", "0", now=NOW)
    assert done.code == ExitStatus.USAGE and "Traceback" not in done.err


def test_an_empty_journal_has_no_room_to_read(hashed: Memdir) -> None:
    configure(hashed, affect={"annotator": "vader"})
    found = json.loads(_run(hashed, "room", "--json"))
    assert found["turns"] == [] and found["session"] is None
    assert found["mood"]["user_turns"] == 0 and found["mood"]["valence"] is None


def test_the_sparkline_spans_minus_one_to_one() -> None:
    assert sparkline([-1.0, 0.0, 1.0, -5.0, 5.0]) == "▁▅█▁█"
