"""What a person and an agent receive (issue 26): hard facts and appointments past the age
cut-offs, the per-prompt block's relevance, the verdict's evidence, wake's sections and sleep's
visible supersedes — each expectation written from docs/RECALL.md and docs/CONTINUITY.md."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import configure
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.archive_format import cutoffs, lifecycle
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
        ("the 3rd\tof Dec 2027", "2027-12-03"),
        ("(31)", None),
        # a long s matches "s" when cases are ignored, but names no month (it raised KeyError)
        ("ſept 3", None),
        ("on 3 ſep 2027", None),
    ],
)
def test_named_day(text: str, expected: str | None) -> None:
    day = named_day(text, NOV1)
    assert (day.isoformat() if day else None) == expected


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["1", "3", "20", "26", "-", "1-", " ", "\t", ".", ",", "of",
                                 "st", "rd", "Dec", "ſept", "may", "x"]), max_size=12).map("".join))  # fmt: skip
def test_the_quick_scan_turns_away_only_texts_no_pattern_matches(text: str) -> None:
    """named_day skips the patterns when its quick scan finds no digit next to a space or a
    hyphen: that is only right if every text a pattern matches has one."""
    if cutoffs._NEAR_DIGIT.search(text) is None:
        assert not any(pattern.search(text) for pattern in cutoffs._PATTERNS), text
    named_day(text, NOV1)  # never raises


# --- the verdict (indexers/recall/verdict.py) --------------------------------------------------


def test_an_expired_guess_alone_never_grounds(
    capsys: pytest.CaptureFixture[str], minilm_md: Memdir
) -> None:
    guess = lifecycle.infer(minilm_md, "The user's favourite tea is oolong", NOV1,
                            ttl=timedelta(days=7)).id  # fmt: skip
    later = NOV1 + timedelta(days=10)
    found = recall_json(capsys, minilm_md, "what is my favourite tea?", later, "--include-expired")
    assert [r["id"] for r in found["results"]] == [guess]
    assert found["verdict"] == "LOW_CONFIDENCE"
    lifecycle.teach(minilm_md, "My favourite tea is oolong, brewed twice", later)
    taught = recall_json(capsys, minilm_md, "what is my favourite tea?", later,
                         "--include-expired")  # fmt: skip
    assert taught["verdict"] == "GROUNDED"


def test_what_happened_yesterday_is_not_no_data_when_yesterday_holds_memories(
    capsys: pytest.CaptureFixture[str], minilm_md: Memdir
) -> None:
    yesterday = NOV1 + timedelta(days=3)
    for hour, text in enumerate(("Went to the dentist, two fillings", "Lunch with Clara at noon",
                                 "Finished the quarterly report")):  # fmt: skip
        lifecycle.teach(minilm_md, text, yesterday + timedelta(hours=hour))
    lifecycle.teach(minilm_md, "Repainted the hallway", NOV1)
    found = recall_json(
        capsys, minilm_md, "what happened yesterday?", yesterday + timedelta(days=1)
    )
    assert found["results"] and found["verdict"] != "NO_DATA"


# --- sleep's automatic supersede is never silent (memdir/usecases/sleep.py, review.py) -------------


def test_sleep_keeps_compatible_teachings_and_shows_what_it_replaced(
    capsys: pytest.CaptureFixture[str], minilm_md: Memdir
) -> None:
    from memdir.usecases.sleep import sleep

    lives = lifecycle.teach(minilm_md, "My sister Anna lives in Krakow", NOV1).id
    works = lifecycle.teach(minilm_md, "My sister Anna works in Krakow as a nurse",
                            NOV1 + timedelta(hours=1)).id  # fmt: skip
    madrid = lifecycle.teach(minilm_md, "I live in Madrid", NOV1).id
    berlin = lifecycle.teach(minilm_md, "I now live in Berlin", NOV1 + timedelta(hours=2)).id
    night = NOV1 + timedelta(days=1)
    sleep(minilm_md, night)
    status = {}
    for memory_id in (lives, works, madrid, berlin):
        code, out = cli(capsys, minilm_md, "show", memory_id, "--json", "--now", night.isoformat())
        status[memory_id] = json.loads(out)["status"]
    assert status[lives] == status[works] == "durable"  # both hold
    assert status[madrid] == "superseded" and status[berlin] == "durable"  # a real change
    # …and the person sees it: in review and in wake's "Needs your decision", with its undo
    code, out = cli(capsys, minilm_md, "review", "--json", "--now", night.isoformat())
    [row] = json.loads(out)["automatic_supersedes"]
    assert (row["old"]["id"], row["new"]["id"]) == (madrid, berlin)
    code, out = cli(capsys, minilm_md, "wake", "--now", night.isoformat())
    undo = f"memdir link {berlin} {madrid} --type compatible"
    assert undo in out
    # undoing it makes the older durable again and takes it off the list
    assert main(["--dir", str(minilm_md.root), "link", berlin, madrid, "--type", "compatible",
                 "--now", night.isoformat()]) == 0  # fmt: skip
    code, out = cli(capsys, minilm_md, "review", "--json", "--now", night.isoformat())
    assert json.loads(out)["automatic_supersedes"] == []
    code, out = cli(capsys, minilm_md, "show", madrid, "--json", "--now", night.isoformat())
    assert json.loads(out)["status"] == "durable"


def test_restates_against_adds_on_the_labelled_pairs(minilm) -> None:  # noqa: ARG001
    """tests/fixtures/restates-pairs.jsonl (40 pairs written for this): the whole rule keeps
    the precision measured (benchmarks/supersede_restates.py: 0.833, recall 0.588; before the
    relation-verb rule and the change cue 0.529 / 0.529)."""
    import contextlib
    import io

    from benchmarks.supersede_restates import main as measure

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        measure(False)
    summary = next(line for line in out.getvalue().splitlines() if line.startswith("after"))
    precision = float(summary.split("precision ")[1].split(",")[0])
    recall = float(summary.split("recall ")[1].split(" ")[0])
    assert precision >= 0.8 and recall >= 0.55, summary


# --- the per-prompt block (memdir/usecases/prompt.py) ---------------------------------------------

LIFE = (
    "I love jasmine green tea in the afternoon",
    "My favourite tea shop is on Canal Street",
    "I take 50 mg of sertraline every morning",
    "I am allergic to penicillin",
    "My dentist is Dr Weiss",
    "I play five-a-side football on Thursdays",
    "Our cat Miso sleeps on the sofa all day",
    "I am learning Portuguese for a trip to Lisbon",
    "My sister Anna lives in Krakow",
    "I bought new running shoes last week",
    "The boiler was serviced in October",
    "I prefer window seats on trains",
)


@pytest.fixture
def life(minilm_md: Memdir) -> tuple[Memdir, dict[str, str]]:
    ids = {text: lifecycle.teach(minilm_md, text, NOV1).id for text in LIFE}
    ids["rent"] = lifecycle.teach(minilm_md, "My rent is 1450 euros a month", NOV1,
                                  type="FINANCIAL", key="rent").id  # fmt: skip
    return minilm_md, ids


def context_json(capsys: pytest.CaptureFixture[str], memdir: Memdir, prompt: str) -> dict:
    code, out = cli(capsys, memdir, "context", prompt, "--json", "--no-record", "--now",
                    (NOV1 + timedelta(days=1)).isoformat())  # fmt: skip
    assert code == 0, out
    return json.loads(out)


def test_a_prompt_about_tea_carries_tea_and_no_health_facts(
    capsys: pytest.CaptureFixture[str], life: tuple[Memdir, dict[str, str]]
) -> None:
    from memdir.usecases.prompt import MAX_ENTRIES

    memdir, ids = life
    found = context_json(capsys, memdir, "Which tea should I buy for this afternoon?")
    shown = [entry["id"] for entry in found["entries"]]
    assert ids["I love jasmine green tea in the afternoon"] in shown
    for health in ("I take 50 mg of sertraline every morning", "I am allergic to penicillin"):
        assert ids[health] not in shown
    assert ids["rent"] not in shown  # a hard fact joins only a prompt that bears on it
    assert len(shown) <= MAX_ENTRIES and found["tokens"] <= 250
    # a prompt about the medicine does carry it
    found = context_json(capsys, memdir, "What dose of sertraline do I take?")
    assert ids["I take 50 mg of sertraline every morning"] in [e["id"] for e in found["entries"]]


def test_hard_facts_join_when_the_prompt_names_them_or_always_when_the_user_says_so(
    capsys: pytest.CaptureFixture[str], life: tuple[Memdir, dict[str, str]]
) -> None:
    memdir, ids = life
    found = context_json(capsys, memdir, "how much is my rent?")
    facts = [entry for entry in found["entries"] if entry["kind"] == "fact"]
    assert [entry["id"] for entry in facts] == [ids["rent"]]
    always = configure(memdir, context={"hard_facts": "always"})
    found = context_json(capsys, always, "Which tea should I buy for this afternoon?")
    facts = [entry for entry in found["entries"] if entry["kind"] == "fact"]
    assert [entry["id"] for entry in facts] == [ids["rent"]]
    assert ids["I love jasmine green tea in the afternoon"] in [e["id"] for e in found["entries"]]


def test_a_pinned_memory_joins_only_a_prompt_that_bears_on_it(
    capsys: pytest.CaptureFixture[str], life: tuple[Memdir, dict[str, str]]
) -> None:
    """Pinned is recall's guaranteed channel (docs/RECALL.md §5), not "in every prompt": the
    block's relevance floor and share still decide (only `context.hard_facts: always` puts
    memories in every block)."""
    memdir, ids = life
    pinned = lifecycle.teach(memdir, "I carry an EpiPen for a severe wasp sting allergy", NOV1,
                             pinned=True, importance=9).id  # fmt: skip
    found = context_json(capsys, memdir, "Which tea should I buy for this afternoon?")
    shown = [entry["id"] for entry in found["entries"]]
    assert ids["I love jasmine green tea in the afternoon"] in shown and pinned not in shown
    found = context_json(capsys, memdir, "What should I do if a wasp stings me?")
    assert pinned in [entry["id"] for entry in found["entries"]]


# --- wake's sections and the guaranteed channel -------------------------------------------------


def test_milestones_take_no_slot_from_a_query_they_do_not_bear_on(
    capsys: pytest.CaptureFixture[str], minilm_md: Memdir
) -> None:
    wedding = lifecycle.teach(minilm_md, "We got married in Lisbon", NOV1, temporal="milestone").id
    born = lifecycle.teach(minilm_md, "Our son Leo was born in March", NOV1,
                           temporal="milestone").id  # fmt: skip
    for text in ("My manager Rita praised the launch plan", "The manager meeting moved to Monday",
                 "Rita is a calm and fair manager", "I repotted the basil"):  # fmt: skip
        lifecycle.teach(minilm_md, text, NOV1)
    found = recall_json(capsys, minilm_md, "manager", NOV1 + timedelta(days=1), "-k", "3")
    shown = [r["id"] for r in found["results"]]
    assert wedding not in shown and born not in shown and len(shown) == 3
    # a query about the milestone still gets it
    found = recall_json(capsys, minilm_md, "when did we get married?", NOV1 + timedelta(days=1))
    assert wedding in [r["id"] for r in found["results"]]


def test_wake_threads_follow_the_cutoffs_and_summaries_do_not_flood_review(
    capsys: pytest.CaptureFixture[str], hashed: Memdir
) -> None:
    parked = lifecycle.teach(hashed, "I parked on level 3", NOV1, temporal="ephemeral").id
    lifecycle.teach(hashed, "I like green tea", NOV1)
    for number in range(8):
        lifecycle.infer(hashed, f"Conversation on 2026-11-0{number + 1}: User: hello {number}",
                        NOV1, ttl=timedelta(days=30), author="memdir")  # fmt: skip
    guess = lifecycle.infer(hashed, "The user may prefer oolong", NOV1, ttl=timedelta(days=30)).id
    code, out = cli(
        capsys, hashed, "wake", "--json", "--now", (NOV1 + timedelta(days=19)).isoformat()
    )
    sections = json.loads(out)["sections"]
    assert parked not in json.dumps(sections["threads"])
    review = sections["review"]["items"]
    assert [item.get("id") for item in review if "id" in item] == [guess]
    [summaries] = [item for item in review if item.get("what") == "conversation summaries"]
    assert summaries["count"] == 8


# --- the journal is searchable (memdir/usecases/journal.py: search_turns) --------------------------


def test_a_detail_said_mid_conversation_in_an_import_is_found(
    capsys: pytest.CaptureFixture[str], hashed: Memdir, tmp_path: Path
) -> None:
    from memdir.archive_format import journal

    def message(number: int, role: str, text: str, parent: str | None) -> dict:
        return {"id": f"n{number}", "parent": parent, "children": [f"n{number + 1}"],
                "message": {"id": f"n{number}", "author": {"role": role},
                            "create_time": 1793523600 + number * 60,
                            "content": {"content_type": "text", "parts": [text]}}}  # fmt: skip

    said = ["I need help planning a move next spring.", "Happy to help. Where to?",
            "We found a flat in Valencia near the old riverbed park.", "Lovely choice.",
            "Mostly I worry about the paperwork.", "Let's make a list."]  # fmt: skip
    mapping = {}
    for number, text in enumerate(said):
        node = message(number, "user" if number % 2 == 0 else "assistant", text,
                       f"n{number - 1}" if number else None)  # fmt: skip
        mapping[node["id"]] = node
    mapping[f"n{len(said) - 1}"]["children"] = []
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([{"id": "c0000000-0000-4000-8000-00000000000a", "title": "Move",
                                   "create_time": 1793523600, "mapping": mapping,
                                   "current_node": f"n{len(said) - 1}"}]))  # fmt: skip
    later = datetime(2027, 1, 1, tzinfo=timezone.utc)
    code, out = cli(capsys, hashed, "import", str(export), "--now", later.isoformat())
    assert code == 0, out
    code, out = cli(capsys, hashed, "journal", "search", "valencia", "--json", "--now",
                    later.isoformat())  # fmt: skip
    rows = json.loads(out)
    assert [row["text"] for row in rows] == [said[2]] and rows[0]["role"] == "user"
    # a private turn is no hit unless asked for, a sealed one never
    journal.add_turns(hashed, [
        journal.new_turn(later, "user", "s9", "Valencia rent is private", "cli", "private"),
        journal.new_turn(later, "user", "s9", "Valencia keys are sealed", "cli", "sealed"),
    ])  # fmt: skip
    code, out = cli(capsys, hashed, "journal", "search", "Valencia", "--json", "--now",
                    (later + timedelta(minutes=1)).isoformat())  # fmt: skip
    assert [row["text"] for row in json.loads(out)] == [said[2]]
    code, out = cli(capsys, hashed, "journal", "search", "Valencia", "--all", "--json", "--now",
                    (later + timedelta(minutes=1)).isoformat())  # fmt: skip
    texts = [row["text"] for row in json.loads(out)]
    assert "Valencia rent is private" in texts and "Valencia keys are sealed" not in texts
