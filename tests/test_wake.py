"""What wake and review keep and what they fold away (issue 26), through the CLI on real
memdirs — each expectation from docs/CONTINUITY.md ("Boot and wake", "Kept at any age"):

- pinned, important (importance >= 8), MEDICATION and FINANCIAL memories stay in wake at any
  age while they are current, and leave it once superseded, rejected, forgotten or past
  recall's cut-off (a pinned one is exempt from that; an important feeling is not);
- dream's conversation summaries awaiting confirmation are one line of `memdir review` and of
  wake's review queue (`memdir review --summaries` lists them), and two of them on one topic
  are no contradiction for the person to settle."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import clean_env, memdir_main

from memdir.archive_format.memdir import Memdir
from memdir.cli.main import main

NOV1 = datetime(2026, 11, 1, 10, 0, tzinfo=timezone.utc)


@pytest.fixture
def cli(cli_in_process):
    """What wake and review show is the subject here, not processes: the CLI runs in this
    process (conftest.memdir_main)."""
    return cli_in_process


def run(capsys: pytest.CaptureFixture[str], memdir: Memdir, when: datetime, *args: str) -> str:
    """`memdir --dir MEMDIR ARGS… --now WHEN` in-process; its stdout (it must exit 0)."""
    capsys.readouterr()
    code = main(["--dir", str(memdir.root), *args, "--now", when.isoformat()])
    out = capsys.readouterr().out
    assert code == 0, out
    return out.strip()


def wake_json(capsys: pytest.CaptureFixture[str], memdir: Memdir, when: datetime) -> dict:
    return json.loads(run(capsys, memdir, when, "wake", "--json"))


def kept_ids(document: dict) -> list[str]:
    return [item["id"] for item in document["sections"]["standing"]["items"]]


def test_a_pinned_allergy_without_a_key_stays_in_wake_at_any_age(
    capsys: pytest.CaptureFixture[str], hashed: Memdir
) -> None:
    teach = ("teach", "--importance")
    allergy = run(capsys, hashed, NOV1, *teach, "9", "--pin", "I am allergic to penicillin")
    pill = run(capsys, hashed, NOV1, "teach", "I take 50 mg of sertraline", "--type", "MEDICATION")
    loan = run(capsys, hashed, NOV1, "teach", "I repay 200 euros a month", "--type", "FINANCIAL")
    vital = run(capsys, hashed, NOV1, *teach, "8", "My blood group is A negative")
    plain = run(capsys, hashed, NOV1, "teach", "I like the colour green")
    # thirty everyday notes push the first teachings off the console ring (its open threads)
    for day in range(1, 31):
        run(capsys, hashed, NOV1 + timedelta(days=day), "teach", f"Diary {day}: a walk")
    for age in (15, 60, 400):
        document = wake_json(capsys, hashed, NOV1 + timedelta(days=age))
        assert allergy in document["markdown"] and pill in document["markdown"], age
        assert set(kept_ids(document)) == {allergy, pill, loan, vital}, age
        assert plain not in document["markdown"], age  # an ordinary teaching is recent news
    # pinned first, then the most important
    assert kept_ids(document)[:2] == [allergy, vital]
    boot = run(capsys, hashed, NOV1 + timedelta(days=400), "boot")
    assert "I am allergic to penicillin" in boot.split("## Kept at any age")[1]


def test_kept_memories_leave_wake_once_they_are_no_longer_current(
    capsys: pytest.CaptureFixture[str], hashed: Memdir
) -> None:
    pinned = ("teach", "--pin")
    forgotten = run(capsys, hashed, NOV1, *pinned, "The spare key is under the blue pot")
    rejected = run(capsys, hashed, NOV1, *pinned, "I am allergic to cats")
    replaced = run(capsys, hashed, NOV1, "teach", "I take 20 mg of statin", "--type",
                   "MEDICATION", "--key", "statin")  # fmt: skip
    feeling = run(capsys, hashed, NOV1, "teach", "I am devastated about the move", "--type",
                  "EMOTION", "--importance", "9")  # fmt: skip
    guess = run(capsys, hashed, NOV1, "infer", "The user may be diabetic", "--importance", "9")
    pinned_note = run(capsys, hashed, NOV1, *pinned, "I parked on level 3", "--temporal",
                      "ephemeral")  # fmt: skip
    day1 = wake_json(capsys, hashed, NOV1 + timedelta(days=1))
    assert feeling in kept_ids(day1)  # important, and within its 48 h
    assert guess not in kept_ids(day1)  # unconfirmed: the review queue asks about it instead
    run(capsys, hashed, NOV1 + timedelta(days=2), "forget", forgotten)
    run(capsys, hashed, NOV1 + timedelta(days=2), "reject", rejected, "--reason", "not true")
    newer = run(capsys, hashed, NOV1 + timedelta(days=2), "teach", "I take 40 mg of statin",
                "--type", "MEDICATION", "--key", "statin")  # fmt: skip
    run(capsys, hashed, NOV1 + timedelta(days=2), "confirm", guess)
    document = wake_json(capsys, hashed, NOV1 + timedelta(days=30))
    markdown = document["markdown"]
    for gone in (forgotten, rejected, replaced, feeling):
        assert gone not in markdown, gone
    assert "spare key" not in markdown and "devastated" not in markdown
    # the keyed medication is a hard fact (its own section), the confirmed guess is kept, and
    # a pinned note is a hard fact, exempt from the ephemeral cut-off as in recall
    assert [i["id"] for i in document["sections"]["hard_facts"]["items"]] == [newer]
    assert set(kept_ids(document)) == {guess, pinned_note}


def test_review_lists_dreams_summaries_on_one_line_unless_asked(
    capsys: pytest.CaptureFixture[str], hashed: Memdir
) -> None:
    for day in range(1, 7):
        when = NOV1 + timedelta(days=day)
        run(capsys, hashed, when, "journal", "add", "--role", "user", "--session", f"chat-{day}",
            f"Let us plan the garden beds, tomatoes and basil, for week {day}")  # fmt: skip
        run(capsys, hashed, when + timedelta(minutes=1), "journal", "add", "--role", "assistant",
            "--session", f"chat-{day}", "Tomatoes need full sun; basil grows beside them")  # fmt: skip
    night = NOV1 + timedelta(days=7)
    run(capsys, hashed, night, "sleep", "--json")
    guess = run(capsys, hashed, night, "infer", "The user may enjoy gardening")
    found = json.loads(run(capsys, hashed, night, "review", "--json"))
    summaries = {row["id"] for row in found["queue"] if row["author"] == "memdir"}
    assert len(summaries) == 6 and guess in {row["id"] for row in found["queue"]}
    text = run(capsys, hashed, night, "review")
    assert guess in text and not any(memory_id in text for memory_id in summaries)
    assert "conversation summaries from sleep (dream) awaiting confirmation: 6" in text
    assert "memdir review --summaries" in text
    listed = run(capsys, hashed, night, "review", "--summaries")
    assert all(memory_id in listed for memory_id in summaries) and guess not in listed
    review = wake_json(capsys, hashed, night)["sections"]["review"]
    assert [item.get("id") for item in review["items"] if "id" in item] == [guess]
    assert review["omitted"] == 0  # the summaries' line is not counted again as "… N more"


def test_two_conversation_summaries_on_one_topic_are_no_contradiction(
    cli,
    tmp_path: Path,
    minilm,  # noqa: ARG001 (skips without the model)
) -> None:
    root = str(tmp_path / "memory")
    assert cli("init", root).code == 0
    for day in range(1, 4):
        for role, minute, text in (
            ("user", 0, "Let us plan the garden beds for spring, tomatoes and basil"),
            ("assistant", 1, "Tomatoes need full sun; basil grows well beside them in the garden"),
        ):
            when = f"2026-11-0{day}T10:0{minute}:00Z"
            assert cli("--dir", root, "journal", "add", "--role", role, "--session", f"s{day}",
                       text, now=when).code == 0  # fmt: skip
    night = "2026-11-05T10:00:00Z"
    assert cli("--dir", root, "sleep", "--json", now=night).code == 0
    found = json.loads(cli("--dir", root, "review", "--json", now=night).out)
    assert len([row for row in found["queue"] if row["author"] == "memdir"]) == 3
    assert found["contradictions"] == []
    document = json.loads(cli("--dir", root, "wake", "--json", now=night).out)
    assert document["sections"]["decisions"]["items"] == []


def test_wakes_review_and_decisions_follow_the_cutoffs_as_recall_does(
    capsys: pytest.CaptureFixture[str], hashed: Memdir
) -> None:
    mood = run(capsys, hashed, NOV1, "infer", "The user may feel low today", "--type", "EMOTION",
               "--ttl", "30d")  # fmt: skip
    note = run(capsys, hashed, NOV1, "infer", "The user may be at the gym now", "--temporal",
               "ephemeral", "--ttl", "30d")  # fmt: skip
    guess = run(capsys, hashed, NOV1, "infer", "The user may like jazz", "--ttl", "30d")
    calm = run(capsys, hashed, NOV1, "teach", "I feel calm about the exam", "--type", "EMOTION")
    worry = run(capsys, hashed, NOV1, "teach", "I feel worried about the exam", "--type",
                "EMOTION")  # fmt: skip
    run(capsys, hashed, NOV1, "link", calm, worry, "--type", "contradicts")
    soon = wake_json(capsys, hashed, NOV1 + timedelta(hours=12))["sections"]
    assert {i.get("id") for i in soon["review"]["items"]} == {mood, note, guess}
    assert any(i.get("what") == "contradiction" for i in soon["decisions"]["items"])
    later = wake_json(capsys, hashed, NOV1 + timedelta(days=3))
    assert [i.get("id") for i in later["sections"]["review"]["items"]] == [guess]
    assert later["sections"]["decisions"]["items"] == []
    assert mood not in later["markdown"] and note not in later["markdown"]
    # the review command is the whole list: it still asks until the TTL settles them
    queue = json.loads(run(capsys, hashed, NOV1 + timedelta(days=3), "review", "--json"))["queue"]
    assert {row["id"] for row in queue} == {mood, note, guess}


def test_the_self_notes_reach_wake_saying_who_set_each_field(hashed: Memdir) -> None:
    """docs/CONTINUITY.md, Self: wake carries the self notes; a field the user did not set says
    who did."""
    root = str(hashed.root)
    assert memdir_main("--dir", root, "self", "set", "name=Ada", "tone=warm, brief").code == 0
    as_assistant = clean_env(MEMDIR_ACTOR="assistant")
    done = memdir_main("--dir", root, "self", "set", "humour=dry", env=as_assistant, now=None)
    assert done.code == 0, done  # an assistant writes at the real time
    woken = memdir_main("--dir", root, "wake", "--json")
    assert woken.code == 0, woken
    section = json.loads(woken.out)["sections"]["self"]
    fields = {item["field"]: (item["value"], item["set_by"]) for item in section["items"]}
    assert fields == {"name": ("Ada", "user"), "tone": ("warm, brief", "user"),
                      "humour": ("dry", "assistant")}  # fmt: skip
    text = memdir_main("--dir", root, "wake").out
    assert "- humour: dry (set by assistant)" in text and "- name: Ada\n" in text


def test_wake_lists_what_is_coming_up_however_long_ago_it_was_taught(
    capsys: pytest.CaptureFixture[str], hashed: Memdir
) -> None:
    """docs/CONTINUITY.md, "Coming up": a memory naming a day from today to 60 days ahead is in
    wake's Coming up, soonest first, once (not again among the recent teachings)."""
    dentist = run(capsys, hashed, NOV1, "teach", "My dentist appointment is on 3 December")
    flight = run(capsys, hashed, NOV1, "teach", "My flight to Tokyo is on 12 March",
                 "--type", "DATE:appointment")  # fmt: skip
    married = run(capsys, hashed, NOV1, "teach", "We married on 3 May 2019")
    for day in range(1, 31):  # everyday notes move the console ring on
        run(capsys, hashed, NOV1 + timedelta(days=day), "teach", f"Diary {day}: a walk")

    def upcoming(when: datetime) -> list[tuple[str, int]]:
        items = wake_json(capsys, hashed, when)["sections"]["upcoming"]["items"]
        return [(item["id"], item["in_days"]) for item in items]

    assert upcoming(NOV1 + timedelta(days=1)) == [(dentist, 31)]  # the flight is beyond 60 days
    document = wake_json(capsys, hashed, NOV1 + timedelta(days=1))
    assert document["markdown"].count(dentist) == 1  # not again among the recent teachings
    # nineteen days on, long out of the recent teachings, the appointment is still coming up
    assert upcoming(datetime(2026, 11, 20, 9, tzinfo=timezone.utc)) == [(dentist, 13)]
    assert upcoming(datetime(2026, 12, 3, 8, tzinfo=timezone.utc)) == [(dentist, 0)]
    assert upcoming(datetime(2026, 12, 4, 9, tzinfo=timezone.utc)) == []  # its day is past
    assert upcoming(datetime(2027, 2, 1, 9, tzinfo=timezone.utc)) == [(flight, 39)]
    assert married not in {i for i, _ in upcoming(datetime(2027, 2, 1, 9, tzinfo=timezone.utc))}
    # an empty Coming up is left out of wake rather than said to be empty
    later = wake_json(capsys, hashed, datetime(2027, 4, 1, tzinfo=timezone.utc))
    assert "Coming up" not in later["markdown"]
