"""Recall reaches the journal (issue 26): `memdir recall --include-journal` and the MCP tool's
`include_journal` add the turns that hold the query's words — a detail said in the middle of an
imported or journalled conversation, which no memory kept — as a group apart from the
memories, through the policy's rows (docs/RECALL.md, "The journal group"; docs/POLICY.md)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.clock import format_time
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.records import Tombstone, encode_line
from memdir.cli.main import main
from memdir.usecases.journal import search_terms, search_turns

LATER = datetime(2027, 1, 1, tzinfo=timezone.utc)
SAID = ["I need help planning a move next spring.", "Happy to help. Where to?",
        "We found a flat in Valencia near the old riverbed park.", "Lovely choice.",
        "Mostly I worry about the paperwork.", "Let's make a list."]  # fmt: skip
CONVERSATION = "c0000000-0000-4000-8000-00000000000a"
SESSION = f"chatgpt-{CONVERSATION}"  # an import names the session by its source format


def cli(capsys: pytest.CaptureFixture[str], memdir: Memdir, *args: str) -> tuple[int, str, str]:
    """`memdir --dir MEMDIR ARGS… --now LATER` in-process: exit status, stdout, stderr."""
    capsys.readouterr()
    code = main(["--dir", str(memdir.root), *args, "--now", LATER.isoformat()])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def recall(capsys: pytest.CaptureFixture[str], memdir: Memdir, query: str, *extra: str) -> Any:
    code, out, err = cli(capsys, memdir, "recall", query, "--json", "--no-record", *extra)
    assert code == 0, err
    return json.loads(out)


def chatgpt_export(path: Path) -> Path:
    """A ChatGPT `conversations.json` of one conversation, "Move", of the turns in SAID."""

    def node(number: int, text: str) -> dict[str, Any]:
        last = number == len(SAID) - 1
        return {"id": f"n{number}", "parent": f"n{number - 1}" if number else None,
                "children": [] if last else [f"n{number + 1}"],
                "message": {"id": f"n{number}",
                            "author": {"role": "user" if number % 2 == 0 else "assistant"},
                            "create_time": 1793523600 + number * 60,
                            "content": {"content_type": "text", "parts": [text]}}}  # fmt: skip

    mapping = {f"n{number}": node(number, text) for number, text in enumerate(SAID)}
    path.write_text(json.dumps([{"id": CONVERSATION, "title": "Move", "create_time": 1793523600,
                                 "mapping": mapping, "current_node": f"n{len(SAID) - 1}"}]))  # fmt: skip
    return path


@pytest.fixture
def imported(capsys: pytest.CaptureFixture[str], hashed: Memdir, tmp_path: Path) -> Memdir:
    """A memdir with a few memories and an imported conversation no memory summarises."""
    for text in ("I take my coffee black", "My sister lives in Krakow", "I run on Sundays"):
        lifecycle.teach(hashed, text, LATER - timedelta(days=30))
    code, _, err = cli(capsys, hashed, "import", str(chatgpt_export(tmp_path / "export.json")))
    assert code == 0, err
    return hashed


def test_a_detail_said_mid_import_is_recalled_with_the_journal_and_not_without(
    capsys: pytest.CaptureFixture[str], imported: Memdir
) -> None:
    plain = recall(capsys, imported, "where was the flat in Valencia?")
    assert "journal" not in plain
    assert not any("Valencia" in row["text"] for row in plain["results"])
    found = recall(capsys, imported, "where was the flat in Valencia?", "--include-journal")
    group = found["journal"]
    assert group["label"] == "from the journal — verbatim turns, not memories"
    assert group["terms"] == ["flat", "valencia"]
    [turn] = group["turns"]
    assert turn["text"] == SAID[2] and turn["role"] == "user" and turn["trusted"] is True
    assert turn["session"] == SESSION and turn["topic"] == "Move"
    assert turn["channel"].startswith("import:") and turn["matched"] == ["flat", "valencia"]
    assert turn["at"].startswith("2026-11-01")  # the message's own time, not the import's
    # the memories are ranked and judged exactly as without the journal
    assert found["verdict"] == plain["verdict"]
    assert [(r["id"], r["score"]) for r in found["results"]] == [
        (r["id"], r["score"]) for r in plain["results"]
    ]


def test_the_group_is_labelled_apart_in_the_terminal_and_explained(
    capsys: pytest.CaptureFixture[str], imported: Memdir
) -> None:
    code, out, _ = cli(capsys, imported, "recall", "Valencia", "--no-record", "--include-journal")
    assert code == 0
    memories, heading, group = out.partition("from the journal — verbatim turns, not memories (1)")
    assert heading and "Valencia" not in memories
    assert f"2026-11-01 [{SESSION} · Move] user: {SAID[2]}" in group
    code, out, _ = cli(capsys, imported, "recall", "Valencia", "--no-record", "--include-journal",
                       "--explain")  # fmt: skip
    assert code == 0 and "searched the journal for: valencia" in out and "matched valencia" in out
    explained = recall(capsys, imported, "Valencia", "--include-journal", "--explain")
    assert "stages" in explained and explained["journal"]["turns"][0]["matched"] == ["valencia"]
    # a query of stop words alone searches for nothing, and says so
    code, out, _ = cli(capsys, imported, "recall", "what is it?", "--no-record",
                       "--include-journal", "--explain")  # fmt: skip
    assert code == 0 and "searched the journal for: no words" in out
    assert "no turn holds the query's words" in out


def test_a_turn_journalled_with_journal_add_is_recalled(
    capsys: pytest.CaptureFixture[str], hashed: Memdir
) -> None:
    said = "The dentist in Lisbon is Dr Mendes, on Rua Augusta."
    code, _, err = cli(capsys, hashed, "journal", "add", "--role", "user", "--session", "s1", said)
    assert code == 0, err
    query = "who is my dentist in Lisbon?"
    assert recall(capsys, hashed, query)["results"] == []
    found = recall(capsys, hashed, query, "--include-journal")
    assert [turn["text"] for turn in found["journal"]["turns"]] == [said]
    assert found["verdict"] == "NO_DATA"  # a turn is not a memory: it grounds nothing


def withheld_turns(memdir: Memdir) -> dict[str, str]:
    """A Valencia turn of each exposure; their texts by exposure."""
    texts = {"normal": "Valencia flat is normal", "sensitive": "Valencia flat is sensitive",
             "private": "Valencia flat is private", "sealed": "Valencia flat is sealed",
             "secret": "Valencia flat is secret"}  # fmt: skip
    at = LATER - timedelta(hours=1)
    journal.add_turns(memdir, [
        journal.new_turn(at, "user", "s9", texts["normal"], "cli"),
        journal.new_turn(at, "user", "s9", texts["sensitive"], "cli", secrecy="sensitive"),
        journal.new_turn(at, "user", "s9", texts["private"], "cli", "private"),
        journal.new_turn(at, "user", "s9", texts["sealed"], "cli", "sealed"),
        journal.new_turn(at, "user", "s9", texts["secret"], "cli", secrecy="secret"),
    ])  # fmt: skip
    assert texts["secret"] in (memdir.root / "journal" / "secret.jsonl").read_text()
    return texts


def test_the_assistant_gets_normal_turns_only(
    hashed: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memdir.cli.mcp_server import MemdirTools
    from memdir.usecases.recall import ASSISTANT_TURN

    monkeypatch.setenv("MEMDIR_NOW", LATER.isoformat())
    texts = withheld_turns(hashed)
    tools = MemdirTools(hashed, timedelta(hours=24))
    for private in (False, True):
        for components in (False, True):
            found = tools.recall("Valencia flat", include_journal=True, include_private=private,
                                 components=components)  # fmt: skip
            turns = found["journal"]["turns"]
            assert [turn["text"] for turn in turns] == [texts["normal"]], (private, components)
            assert all(set(turn) <= set(ASSISTANT_TURN) for turn in turns)
            dumped = json.dumps(found)
            for exposure in ("sensitive", "private", "sealed", "secret"):
                assert texts[exposure] not in dumped, (exposure, private)
    assert "journal" not in tools.recall("Valencia flat")


def test_the_owner_gets_private_turns_when_asked_and_sealed_or_secret_never(
    capsys: pytest.CaptureFixture[str], hashed: Memdir
) -> None:
    texts = withheld_turns(hashed)
    shown = {
        asked: {turn["text"] for turn in recall(capsys, hashed, "Valencia flat",
                                                "--include-journal", *asked)["journal"]["turns"]}
        for asked in ((), ("--include-private",))
    }  # fmt: skip
    assert shown[()] == {texts["normal"], texts["sensitive"]}
    assert shown[("--include-private",)] == {texts["normal"], texts["sensitive"], texts["private"]}


def test_bad_input_is_one_line_and_a_bad_journal_line_is_skipped(
    capsys: pytest.CaptureFixture[str], imported: Memdir
) -> None:
    code, out, err = cli(capsys, imported, "recall", "  ", "--include-journal")
    assert code != 0 and out == "" and "Traceback" not in err and "empty" in err
    with open(imported.root / "journal" / "turns.jsonl", "ab") as handle:
        # (a line that cannot hold the query's words is not even parsed: the search's byte
        # scan passes it over, and `memdir verify` names it)
        handle.write(b'{"kind":"turn","id": oops, "text": "Valencia"}\n')
    code, out, err = cli(capsys, imported, "recall", "Valencia", "--json", "--no-record",
                         "--include-journal")  # fmt: skip
    assert code == 0 and "Traceback" not in err and "turns.jsonl" in err
    assert [turn["text"] for turn in json.loads(out)["journal"]["turns"]] == [SAID[2]]


def test_the_rarer_word_ranks_first(capsys: pytest.CaptureFixture[str], hashed: Memdir) -> None:
    """At as many query words matched, the turn with the rarer one comes first, however much
    newer the others are (the search's documented order: most words, rarest, newest)."""
    at = LATER - timedelta(days=10)
    journal.add_turns(hashed, [
        journal.new_turn(at, "user", "s1", "We saw a flat in Valencia", "cli"),
        journal.new_turn(at, "user", "s3", "Valencia, finally", "cli"),
        *(journal.new_turn(at + timedelta(days=1, minutes=n), "user", "s2", f"flat number {n}",
                           "cli") for n in range(5)),
    ])  # fmt: skip
    best = ["We saw a flat in Valencia", "Valencia, finally"]
    found = recall(capsys, hashed, "Valencia flat?", "--include-journal", "--k", "3")
    assert [turn["text"] for turn in found["journal"]["turns"]][:2] == best
    code, out, _ = cli(capsys, hashed, "journal", "search", "flat Valencia", "--json")
    assert code == 0 and [row["text"] for row in json.loads(out)][:2] == best


def test_served_and_in_process_answers_are_the_same(imported: Memdir, tmp_path: Path) -> None:
    """`memdir serve` runs the same command: the journal group is identical through it."""
    from conftest import Server, clean_env, memdir_cli

    args = ("--dir", str(imported.root), "recall", "Valencia", "--no-record", "--include-journal")
    now = LATER.isoformat()
    local = [memdir_cli(*args, *extra, now=now, env=clean_env(MEMDIR_NO_SERVICE="1"))
             for extra in ((), ("--json",))]  # fmt: skip
    running = Server(imported, tmp_path / "serve.log", "--no-watch")
    try:
        running.wait_ready()
        before = running.status()["requests"]
        served = [memdir_cli(*args, *extra, now=now) for extra in ((), ("--json",))]
        assert running.status()["requests"] == before + 2, "not served"
    finally:
        assert running.stop() == 0, running.text()
    assert all(run.code == 0 for run in (*local, *served)), (local, served)
    timeless = re.compile(r"\d+ ms\)")  # the recall's own time differs
    assert timeless.sub("ms)", local[0].out) == timeless.sub("ms)", served[0].out)
    mine, theirs = json.loads(local[1].out), json.loads(served[1].out)
    assert mine.pop("milliseconds") >= 0 and theirs.pop("milliseconds") >= 0
    assert mine == theirs and [t["text"] for t in theirs["journal"]["turns"]] == [SAID[2]]


def test_the_words_of_a_time_window_are_not_searched(
    capsys: pytest.CaptureFixture[str], hashed: Memdir
) -> None:
    at = LATER - timedelta(days=5)
    journal.add_turns(hashed, [
        journal.new_turn(at, "user", "s1", "Valencia was warm", "cli"),
        journal.new_turn(at, "user", "s1", "A long week at work", "cli"),
    ])  # fmt: skip
    found = recall(capsys, hashed, "What did I say about Valencia Last Week?", "--include-journal")
    assert found["analysis"]["time_window"]["phrase"].lower() == "last week"
    assert found["journal"]["terms"] == ["say", "valencia"]
    assert [turn["text"] for turn in found["journal"]["turns"]] == ["Valencia was warm"]


def test_an_unverified_user_turn_is_said_to_be_unverified(
    capsys: pytest.CaptureFixture[str], hashed: Memdir
) -> None:
    at = LATER - timedelta(hours=2)
    journal.add_turns(hashed, [journal.new_turn(at, "user", "s1", "Valencia, from an unconfirmed hook",
                                                "hook:unverified")])  # fmt: skip
    code, out, _ = cli(capsys, hashed, "recall", "Valencia", "--no-record", "--include-journal")
    assert code == 0 and "user (unverified): Valencia, from an unconfirmed hook" in out
    [turn] = recall(capsys, hashed, "Valencia", "--include-journal")["journal"]["turns"]
    assert turn["trusted"] is False


# --- the search's byte scan (archive_format/journal.py: lines_holding) ---------------------------

VOCABULARY = ["Valencia", "valencia's", "VALÈNCIA", "flat", "Flats", "park", "parks", "café",
              "Cafe", "riverbed", "the", "a", "we", "found", "\"quoted\"", "back\\slash",
              "new\nline", "tab\there", "😀", "naïve", "naive", "über", "ueber", "x"]  # fmt: skip
sentences = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=8).map(" ".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(said=st.lists(sentences, min_size=1, max_size=12), query=sentences,
       need=st.integers(min_value=1, max_value=3))  # fmt: skip
def test_the_byte_scan_keeps_every_line_a_search_could_match(
    said: list[str], query: str, need: int
) -> None:
    turns = [journal.new_turn(LATER + timedelta(seconds=n), "user", "s1", text)
             for n, text in enumerate(said)]  # fmt: skip
    stone = Tombstone(turns[0].id, turns[0].at, format_time(LATER))
    lines = [encode_line(t.to_line()) for t in turns] + [encode_line(stone.to_line())]
    blob = b"".join(lines)
    wanted = search_terms(query)
    kept = journal.lines_holding(blob, sorted(w.encode() for w in wanted), need)
    offset = 0
    for turn, line in zip(turns, lines, strict=False):
        if len(wanted & search_terms(turn.text)) >= need:
            assert offset in kept, (turn.text, wanted)
        offset += len(line)
    assert len(blob) - len(lines[-1]) in kept  # a tombstone is always read


def test_a_search_reads_the_same_turns_with_or_without_the_byte_scan(
    hashed: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    import random

    chooser = random.Random(7)
    turns = [journal.new_turn(LATER - timedelta(minutes=n), chooser.choice(("user", "assistant")),
                              f"s{n % 3}", " ".join(chooser.choices(VOCABULARY, k=6)),
                              visibility=chooser.choice(("normal", "normal", "private")))
             for n in range(60)]  # fmt: skip
    journal.add_turns(hashed, turns)
    queries = ["Valencia flat", "cafe", "naive park", "über", "found the riverbed", "zebra"]
    scanned = [search_turns(hashed, q, LATER, 50, everything=True) for q in queries]
    full_read = journal.read_journal

    def read_everything(memdir, until=None, since=None, holding=None, need=1):  # noqa: ARG001
        return full_read(memdir, until, since)

    monkeypatch.setattr(journal, "read_journal", read_everything)
    assert scanned == [search_turns(hashed, q, LATER, 50, everything=True) for q in queries]
    assert any(scanned)
