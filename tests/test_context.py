"""`memdir context`: the per-prompt block — kinds, markers, budget, the verdict's say, privacy."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from conftest import T0_DT, configure, shelf_lines

from memdir.archive_format import lifecycle
from memdir.archive_format.documents import estimate_tokens
from memdir.archive_format.memdir import Memdir
from memdir.usecases.prompt import prompt_context

PROMPT = "Does Sam take his coffee black, with sugar, before the deadline?"


@pytest.fixture
def stocked(hashed: Memdir) -> Memdir:
    lifecycle.teach(hashed, "Sam takes his coffee black, no sugar", T0_DT)
    lifecycle.teach(hashed, "The deadline is Friday the 12th", T0_DT, key="deadline")
    lifecycle.teach(hashed, "Sam's coffee grinder is a Comandante", T0_DT)
    lifecycle.infer(hashed, "Sam might take his coffee black with sugar after all", T0_DT,
                    ttl=timedelta(days=7))  # fmt: skip
    lifecycle.teach(hashed, "Sam's coffee sugar debt is private", T0_DT, visibility="private")
    lifecycle.teach(hashed, "Sam's sealed coffee sugar secret", T0_DT, visibility="sealed")
    return hashed


def test_the_block_has_facts_memories_and_unconfirmed_items_with_ids_and_markers(
    stocked: Memdir,
) -> None:
    found = prompt_context(stocked, PROMPT, T0_DT, record=False)
    assert found.verdict == "GROUNDED"
    kinds = {entry.kind: entry for entry in found.entries}
    assert kinds["fact"].key == "deadline" and kinds["fact"].marker == "teaching"
    assert kinds["memory"].marker == "teaching"
    assert kinds["review"].marker.startswith("inference, provisional ×")
    text = found.markdown()
    for entry in found.entries:
        assert f"({entry.id}, {entry.marker})" in text
    assert text.index("Hard facts") < text.index("Relevant memories") < text.index("Unconfirmed")
    assert "private" not in text and "sealed" not in text
    assert found.to_dict()["text"] == text and found.to_dict()["tokens"] == estimate_tokens(text)


@pytest.mark.parametrize("budget", [20, 45, 60, 90, 150, 400])
def test_the_block_stays_within_the_budget_and_counts_what_it_left_out(
    stocked: Memdir, budget: int
) -> None:
    everything = prompt_context(stocked, PROMPT, T0_DT, record=False)
    found = prompt_context(stocked, PROMPT, T0_DT, budget=budget, record=False)
    text = found.markdown()
    assert text == "" or estimate_tokens(text) <= budget
    assert len(found.entries) + found.left_out == len(everything.entries)
    if found.entries and found.left_out:
        assert f"{found.left_out} more left out" in text
    order = ["fact", "memory", "review"]
    kinds = [order.index(entry.kind) for entry in found.entries]
    assert kinds == sorted(kinds)


def test_nothing_relevant_prints_nothing_and_records_nothing(stocked: Memdir) -> None:
    found = prompt_context(stocked, "zebra quantum lattice", T0_DT)
    assert found.verdict != "GROUNDED" and found.markdown() == "" and found.entries == []
    assert not [line for line in shelf_lines(stocked) if line.get("kind") == "recall"]


def test_what_is_shown_is_recorded_as_a_recall(stocked: Memdir) -> None:
    found = prompt_context(stocked, PROMPT, T0_DT)
    [line] = [line for line in shelf_lines(stocked) if line.get("kind") == "recall"]
    assert line["memories"] == [entry.id for entry in found.entries]


# --- a conversation's neighbours are one entry (usecases/prompt.py: bearing, conversation_unit) ---


def chat(memdir: Memdir, session: str | None, turns: list[tuple[str, str]],
         start: int = 0) -> list[str]:  # fmt: skip
    """Speaker-prefixed observations of one session (as chat imports and `memdir bench locomo`
    store them), a minute apart from minute `start`; their ids."""
    from memdir.archive_format.clock import format_time
    from memdir.archive_format.records import new_memory

    memories = [
        new_memory(created=format_time(T0_DT + timedelta(minutes=start + n)),
                   text=f"{speaker}: {text}", source="observation", author=f"chat:{speaker}",
                   store="episodic", session=session)
        for n, (speaker, text) in enumerate(turns)
    ]  # fmt: skip
    lifecycle.add_memories(memdir, memories)
    return [memory.id for memory in memories]


LESSONS = [
    ("ann", "Which instrument did you learn as a child?"),
    ("bo", "The cello, nine years of cello lessons"),  # 1
    ("bo", "and some piano lessons later on"),  # 2: beside 1, both bear on the prompt
    ("ann", "The weather is lovely today"),  # 3
    ("bo", "My bicycle got a flat tyre"),  # 4
    ("bo", "Cello lessons were on Saturdays"),  # 5: bears, but 3 and 4 do not
]
ABOUT_LESSONS = "Bo: cello lessons or piano lessons as a child?"
CHATTER = [("cy", f"We walked the dog along the river, day {n}") for n in range(20)]


def test_results_side_by_side_in_a_conversation_are_one_entry_in_its_order(
    hashed: Memdir,
) -> None:
    said = chat(hashed, "s1", LESSONS)
    chat(hashed, "s2", CHATTER, start=10)
    elsewhere = chat(hashed, None, [("bo", "I sold my old cello lessons books")], start=30)
    found = prompt_context(hashed, ABOUT_LESSONS, T0_DT + timedelta(days=1), record=False)
    units = [[entry.id for entry in unit] for unit in found.units()]
    assert [said[1], said[2]] in units  # one entry, in the conversation's order
    assert [said[5]] in units  # the turns between do not bear on the prompt: an entry apart
    assert all(len(unit) == 1 for unit in units if said[1] not in unit)
    assert elsewhere[0] not in {i for unit in units if len(unit) > 1 for i in unit}
    text = found.markdown()
    first, second = (text.splitlines().index(line) for line in text.splitlines()
                     if said[1] in line or said[2] in line)  # fmt: skip
    assert text.splitlines()[first].startswith("- bo: The cello")
    assert second == first + 1 and text.splitlines()[second].startswith("  bo: and some piano")
    assert found.to_dict()["units"] == len(units)
    assert {e["unit"] for e in found.to_dict()["entries"]} == set(range(len(units)))


def test_memories_without_a_session_are_never_joined(hashed: Memdir) -> None:
    chat(hashed, None, LESSONS)
    chat(hashed, "s2", CHATTER, start=10)
    found = prompt_context(hashed, ABOUT_LESSONS, T0_DT + timedelta(days=1), record=False)
    assert found.entries and all(len(unit) == 1 for unit in found.units())


@pytest.mark.parametrize("budget", [30, 60, 90, 400])
def test_a_joined_entry_keeps_the_budget_and_its_order(hashed: Memdir, budget: int) -> None:
    said = chat(hashed, "s1", LESSONS)
    chat(hashed, "s2", CHATTER, start=10)
    everything = prompt_context(hashed, ABOUT_LESSONS, T0_DT + timedelta(days=1), record=False)
    found = prompt_context(hashed, ABOUT_LESSONS, T0_DT + timedelta(days=1), budget=budget,
                           record=False)  # fmt: skip
    text = found.markdown()
    assert text == "" or estimate_tokens(text) <= budget
    assert len(found.entries) + found.left_out == len(everything.entries)
    for unit in found.units():
        assert [said.index(e.id) for e in unit] == sorted(said.index(e.id) for e in unit)


def test_beside_is_the_memory_before_and_after_in_the_session(hashed: Memdir) -> None:
    """Each result's `beside` (indexers/recall/neighbours.py) against the session's time order
    read from the catalog, with two sessions interleaved in time and memories of no session."""
    from memdir.indexers.index import MemoryIndex
    from memdir.indexers.recall import RecallOptions, recall

    one = chat(hashed, "one", [("ann", f"cello note {n}") for n in range(6)])
    two = chat(hashed, "two", [("bo", f"cello page {n}") for n in range(5)], start=2)
    loose = chat(hashed, None, [("cy", f"cello loose {n}") for n in range(3)], start=1)
    index = MemoryIndex(hashed)
    index.update()
    try:
        result = recall(index, "cello", T0_DT + timedelta(days=1), RecallOptions(k=20))
        iid = {m.id: m.iid for m in index.catalog.memories_by_id(one + two + loose).values()}
    finally:
        index.close()
    assert {c.id for c in result.results} == set(one + two + loose)
    for candidate in result.results:
        for order in (one, two):
            if candidate.id in order:
                at = order.index(candidate.id)
                expected = (iid[order[at - 1]] if at else -1,
                            iid[order[at + 1]] if at + 1 < len(order) else -1)  # fmt: skip
                assert candidate.beside == expected
        if candidate.id in loose:
            assert candidate.beside == (-1, -1)


# --- when no memory answers: the journal's turns (usecases/prompt.py: journal_entries) -----------

MOVE = ["I need help planning a move next spring.", "Happy to help. Where to?",
        "We found a flat in Valencia near the old riverbed park.", "Lovely choice.",
        "Mostly I worry about the paperwork for the flat.", "Let's make a list."]  # fmt: skip
ASKED = "Where was the flat we found in Valencia?"
LATER = T0_DT + timedelta(days=30)


@pytest.fixture
def moved(hashed: Memdir) -> tuple[Memdir, list[str]]:
    """A conversation in the journal only (as an import leaves it), a memory about something
    else, and turns the assistant may never be shown, each holding the prompt's words."""
    from memdir.archive_format import journal

    turns = [journal.new_turn(T0_DT + timedelta(minutes=n), "user" if n % 2 == 0 else
                              "assistant", "chatgpt-move", text, "import:chatgpt")
             for n, text in enumerate(MOVE)]  # fmt: skip
    withheld = [
        journal.new_turn(T0_DT, "user", "s2", "The flat we found in Valencia: private", "cli",
                         "private"),
        journal.new_turn(T0_DT, "user", "s2", "The flat we found in Valencia: sealed", "cli",
                         "sealed"),
        journal.new_turn(T0_DT, "user", "s2", "The flat we found in Valencia: sensitive", "cli",
                         secrecy="sensitive"),
        journal.new_turn(T0_DT, "user", "s2", "The flat we found in Valencia: secret", "cli",
                         secrecy="secret"),
    ]  # fmt: skip
    journal.add_turns(hashed, turns + withheld)
    lifecycle.teach(hashed, "My bicycle is a blue road bike", T0_DT)
    return hashed, [turn.id for turn in turns]


def test_no_memory_answers_so_the_block_carries_the_turns_that_hold_its_words(
    moved: tuple[Memdir, list[str]],
) -> None:
    memdir, said = moved
    found = prompt_context(memdir, ASKED, LATER)
    assert found.verdict != "GROUNDED"
    [turn] = [e for e in found.entries if e.text == MOVE[2]]
    assert turn.kind == "journal" and turn.id == said[2]
    assert turn.marker == f"journal, user, {T0_DT.date().isoformat()}"
    assert found.entries[0] is turn  # the most words first (the paperwork turn holds one)
    text = found.markdown()
    assert "From the journal" in text and f"({said[2]}, journal, user," in text
    for word in ("private", "sealed", "sensitive", "secret"):
        assert f"Valencia: {word}" not in text
    assert estimate_tokens(text) <= 400
    # a turn is no memory: nothing is recorded as recalled
    assert not [line for line in shelf_lines(memdir) if line.get("kind") == "recall"]


def test_a_turn_holding_too_few_of_the_prompts_words_is_not_carried(
    moved: tuple[Memdir, list[str]],
) -> None:
    memdir, _ = moved
    # "paperwork" alone of four words: fewer than two
    found = prompt_context(memdir, "paperwork deadlines visas embassy", LATER, record=False)
    assert found.entries == [] and found.markdown() == ""


def test_memory_that_answers_keeps_the_journal_out(moved: tuple[Memdir, list[str]]) -> None:
    memdir, _ = moved
    taught = lifecycle.teach(
        memdir, "The flat we found in Valencia was by the riverbed park", T0_DT
    )
    found = prompt_context(memdir, ASKED, LATER, record=False)
    assert found.verdict == "GROUNDED" and taught.id in [e.id for e in found.entries]
    assert [e for e in found.entries if e.kind == "journal"] == []


def test_the_journal_can_be_switched_off(moved: tuple[Memdir, list[str]]) -> None:
    memdir, _ = moved
    off = configure(memdir, context={"journal": False})
    assert prompt_context(off, ASKED, LATER, record=False).entries == []


def test_the_conversation_in_progress_is_left_out(moved: tuple[Memdir, list[str]], cli) -> None:
    """The hook records the prompt in its session before asking (`context --journal S`): that
    turn, and the rest of the session, the assistant already has; turns of others it gets."""
    memdir, said = moved
    args = ("--dir", str(memdir.root), "context", "--json", "--no-record")
    done = cli(*args, "--journal", "chatgpt-move", ASKED, now=LATER.isoformat())
    assert done.code == 0, done
    assert [e for e in json.loads(done.out)["entries"] if e["kind"] == "journal"] == []
    # another conversation gets the turn, and not the question the first one journalled: a
    # turn that is mostly questions asks, it does not tell
    done = cli(*args, "--journal", "today", ASKED, now=LATER.isoformat())
    shown = [e for e in json.loads(done.out)["entries"] if e["kind"] == "journal"]
    assert said[2] in [e["id"] for e in shown] and all(e["text"] != ASKED for e in shown)


def test_a_user_turn_no_channel_vouches_for_is_marked_unverified(
    moved: tuple[Memdir, list[str]],
) -> None:
    from memdir.archive_format import journal

    memdir, _ = moved
    claimed = journal.new_turn(LATER - timedelta(days=1), "user", "s3",
                               "The flat we found in Valencia has a balcony", "hook:unverified")  # fmt: skip
    journal.add_turns(memdir, [claimed])
    found = prompt_context(memdir, ASKED, LATER, record=False)
    [entry] = [e for e in found.entries if e.id == claimed.id]
    assert entry.marker.startswith("journal, user (unverified), ")


def test_a_guess_alone_never_grounds_the_block(hashed: Memdir) -> None:
    """The block speaks on durable evidence only (docs/MCP.md): an unconfirmed inference that
    matches the prompt best, alone, is no answer — and a rejected one is not even shown."""
    for text in CHATTER:
        lifecycle.teach(hashed, text[1], T0_DT)
    guess = lifecycle.infer(hashed, "Bo took cello lessons as a child, cello and piano lessons",
                            T0_DT, ttl=timedelta(days=30)).id  # fmt: skip
    wrong = lifecycle.infer(hashed, "Bo took piano lessons as a child, cello lessons too",
                            T0_DT, ttl=timedelta(days=30)).id  # fmt: skip
    lifecycle.reject(hashed, wrong, "the user said no", T0_DT)
    found = prompt_context(hashed, ABOUT_LESSONS, T0_DT + timedelta(days=1), record=False)
    assert found.verdict != "GROUNDED" and found.entries == []
    taught = lifecycle.teach(hashed, "Bo: cello lessons as a child, then piano lessons", T0_DT).id
    found = prompt_context(hashed, ABOUT_LESSONS, T0_DT + timedelta(days=1), record=False)
    shown = {e.id: e for e in found.entries}
    assert found.verdict == "GROUNDED" and taught in shown and wrong not in shown
    assert shown[guess].kind == "review"
