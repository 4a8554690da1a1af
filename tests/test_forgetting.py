"""Forget reaches everything derived: after `memdir forget` or `memdir journal forget`, the
text is in no file under the memdir (shelves, journal, digests, dream summaries, the ring, the
boot and wake documents, the index and caches), and `verify` fails when a generated file still
quotes a forgotten record. Through the real console script."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from conftest import T0_DT, Run, memdir_main
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.clock import format_time
from memdir.archive_format.errors import ExitStatus
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.records import encode_line

DAY1 = format_time(T0_DT + timedelta(days=1))
DAY2 = format_time(T0_DT + timedelta(days=2))


def run(memdir: Memdir, *args: str, now: str = DAY1) -> Run:
    """A command line through the CLI in this process (what is forgotten is the subject here);
    the MCP test's server is a real process."""
    return memdir_main("--dir", str(memdir.root), *args, now=now)


def files_holding(memdir: Memdir, word: str) -> list[str]:
    """Every file under the memdir (.git aside) whose bytes hold `word`."""
    return sorted(
        str(path.relative_to(memdir.root))
        for path in memdir.root.rglob("*")
        if path.is_file() and ".git" not in path.parts and word.encode() in path.read_bytes()
    )


def derive_everything(memdir: Memdir) -> None:
    """What a day of use leaves: an index, the documents, digests and dream summaries."""
    for args in (("search", "quokka"), ("sleep",), ("boot",)):
        done = run(memdir, *args)
        assert done.code == 0, done


def say(memdir: Memdir, session: str, *texts: str) -> list[str]:
    turns = [journal.new_turn(T0_DT + timedelta(minutes=n), "user", session, text, "cli")
             for n, text in enumerate(texts)]  # fmt: skip
    journal.add_turns(memdir, turns)
    return [turn.id for turn in turns]


def test_forget_a_memory_leaves_its_text_in_no_file(hashed: Memdir) -> None:
    lifecycle.teach(hashed, "the quokka lives on Rottnest", T0_DT)
    secret = lifecycle.teach(hashed, "the quokka password is zebrafishword", T0_DT).id
    derive_everything(hashed)
    assert {"shelves/memories.jsonl", "state/ring.yaml", "documents/boot.md",
            "documents/wake.md"} <= set(files_holding(hashed, "zebrafishword"))  # fmt: skip
    done = run(hashed, "forget", secret)
    assert done.code == 0, done
    assert done.out.split() == [secret] and "git history" in done.err
    assert files_holding(hashed, "zebrafishword") == []
    # the documents were written again in the same command, with the rest still there
    for name in ("boot.md", "wake.md"):
        text = (hashed.documents_dir / name).read_text()
        assert "Rottnest" in text and secret not in text
    assert run(hashed, "verify").code == 0


def test_journal_forget_removes_turns_digests_and_summaries(hashed: Memdir) -> None:
    kept = say(hashed, "s1", "we planted the quokka garden", "the quokka garden needs water")
    gone = say(hashed, "s2", "my quokka diary says wombatword",
               "the quokka diary is private wombatword")  # fmt: skip
    derive_everything(hashed)
    held = files_holding(hashed, "wombatword")
    assert "journal/digests.jsonl" not in held  # digests name turns, never quote them
    assert {"journal/turns.jsonl", "shelves/memories.jsonl"} <= set(held), held
    digests_before = [json.loads(line) for line in
                      (hashed.journal_dir / "digests.jsonl").read_text().splitlines()]  # fmt: skip
    summaries = {d["memory"] for d in digests_before if set(d["turns"]) & set(gone)}
    assert summaries
    done = run(hashed, "journal", "forget", "--session", "s2", "--json")
    assert done.code == 0, done
    report = json.loads(done.out)
    assert report["turns"] == sorted(gone) and summaries <= set(report["memories"])
    assert files_holding(hashed, "wombatword") == []
    rows = json.loads(run(hashed, "journal", "read", "--all", "--json").out)
    assert [row["id"] for row in rows] == kept
    for memory_id in summaries:
        assert json.loads(run(hashed, "show", memory_id, "--json").out)["status"] == "forgotten"
    assert run(hashed, "verify").code == 0
    # the next dream summarises what is left, once (s1's digest was not touched)
    assert json.loads(run(hashed, "dream", "--json", now=DAY2).out)["groups"] == []


def test_forgetting_a_turn_of_a_group_lets_the_next_dream_summarise_the_rest(
    hashed: Memdir,
) -> None:
    ids = say(hashed, "s1", "the quokka garden has tomatoes", "the quokka garden has wombatword",
              "the quokka garden has beans")  # fmt: skip
    derive_everything(hashed)
    done = run(hashed, "forget", ids[1])  # a turn id: forget points it at the journal
    assert done.code == 0, done
    assert ids[1] in done.out.split()
    assert files_holding(hashed, "wombatword") == []
    dreamt = json.loads(run(hashed, "dream", "--json", now=DAY2).out)
    [group] = dreamt["groups"]
    assert "tomatoes" in group["text"] and "beans" in group["text"]
    assert "wombatword" not in group["text"]
    assert run(hashed, "verify").code == 0


def test_verify_fails_while_a_generated_file_quotes_a_forgotten_record(hashed: Memdir) -> None:
    memory_id = lifecycle.teach(hashed, "the quokka pin is 4321", T0_DT).id
    [turn_id] = say(hashed, "s1", "the quokka pin is 4321, I said")
    derive_everything(hashed)
    stale = (hashed.documents_dir / "wake.md").read_text()
    assert run(hashed, "forget", memory_id).code == 0
    assert run(hashed, "journal", "forget", turn_id).code == 0
    assert run(hashed, "verify").code == 0
    (hashed.documents_dir / "wake.md").write_text(stale)  # e.g. a copy restored by hand
    done = run(hashed, "verify")
    assert done.code == ExitStatus.PROBLEMS
    assert f"documents/wake.md still quotes forgotten {memory_id}" in done.out


def test_verify_fails_when_a_merge_brings_a_forgotten_turn_back(hashed: Memdir) -> None:
    [turn_id] = say(hashed, "s1", "the quokka secret is wombatword")
    line = (hashed.journal_dir / "turns.jsonl").read_bytes()
    assert run(hashed, "journal", "forget", turn_id).code == 0
    with open(hashed.journal_dir / "turns.jsonl", "ab") as handle:
        handle.write(line)  # what a union merge from a clone that still had it does
    rows = json.loads(run(hashed, "journal", "read", "--all", "--json").out)
    assert rows == []  # readers never show it
    done = run(hashed, "verify")
    assert done.code == ExitStatus.PROBLEMS and f"{turn_id} is forgotten" in done.out
    assert run(hashed, "journal", "forget", turn_id).code == 0
    assert files_holding(hashed, "wombatword") == [] and run(hashed, "verify").code == 0


def test_journal_forget_errors_are_one_line(md: Memdir) -> None:
    for args, status in ((("journal", "forget"), ExitStatus.BAD_INPUT),
                         (("journal", "forget", "t-0000"), ExitStatus.NOT_FOUND),
                         (("journal", "forget", "m-0000"), ExitStatus.BAD_INPUT),
                         (("journal", "forget", "--session", "nope"), ExitStatus.NOT_FOUND)):  # fmt: skip
        done = run(md, *args)
        assert done.code == status, done
        assert "Traceback" not in done.err and len(done.err.strip().splitlines()) <= 2


@settings(max_examples=40, deadline=None)
@given(
    forgotten=st.sets(st.integers(0, 5)),
    order=st.permutations(range(6)),
    again=st.sets(st.integers(0, 5)),
)
def test_a_tombstone_hides_its_turn_whatever_the_line_order(
    tmp_path_factory: object, forgotten: set[int], order: list[int], again: set[int]
) -> None:
    """The journal fold: a turn with a tombstone is never read, in any line order, even when a
    merge appended its line again."""
    from memdir.archive_format.memdir import init

    root = Path(tmp_path_factory.mktemp("fold")) / "m"  # type: ignore[attr-defined]
    memdir, _ = init(root, T0_DT)
    turns = [journal.new_turn(T0_DT + timedelta(minutes=n), "user", "s", f"turn {n}", "cli")
             for n in range(6)]  # fmt: skip
    journal.add_turns(memdir, [turns[n] for n in order])
    if forgotten:
        with memdir.lock():
            journal.forget_turns(memdir, [turns[n] for n in forgotten], T0_DT)
    path = journal.turns_path(memdir)
    for n in again:
        with open(path, "ab") as handle:
            handle.write(encode_line(turns[n].to_line()))
    seen = [turn.id for turn in journal.read_journal(memdir).turns]
    assert seen == [turns[n].id for n in range(6) if n not in forgotten]


def test_mcp_forget_reaches_the_documents_and_the_index(hashed: Memdir) -> None:
    """The MCP `forget` tool (the SDK's stdio client) refreshes what `memdir forget` does."""
    import anyio
    from conftest import MEMDIR_BIN, clean_env
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    secret = lifecycle.teach(hashed, "the quokka password is zebrafishword", T0_DT).id
    derive_everything(hashed)
    request = "Please forget that the quokka password is zebrafishword"
    assert run(hashed, "journal", "add", "--role", "user", "--session", "s9", request).code == 0
    params = StdioServerParameters(command=str(MEMDIR_BIN), args=["--dir", str(hashed.root), "mcp"],
                                   env=clean_env(MEMDIR_NOW=DAY1))  # fmt: skip

    async def scenario() -> dict[str, object]:
        async with Client(params, read_timeout_seconds=60) as client:
            result = await client.call_tool("forget", {"memory_id": secret, "quote": request})
            assert not result.is_error, result
            return dict(result.structured_content or {})

    assert anyio.run(scenario)["status"] == "forgotten"
    # the user's own request still says it (the journal, and wake's raw window quoting that
    # turn): the turn is theirs to forget; the memory is gone from the shelves, index and ring
    assert files_holding(hashed, "zebrafishword") == ["documents/wake.md", "journal/turns.jsonl"]
    for name in ("wake.md", "boot.md"):
        assert secret not in (hashed.documents_dir / name).read_text()
    assert run(hashed, "verify").code == 0


def test_forget_leaves_the_shelves_vouched_for_and_a_returned_line_is_still_caught(
    md: Memdir,
) -> None:
    """Forget compacts every shelf itself, so the tombstone stamp vouches for the shelves as
    forget left them and the next command checks none again; a line that a merge brings back
    afterwards is still found and compacted by the next write."""
    from memdir.archive_format import tombstones

    kept = lifecycle.teach(md, "the quokka lives on Rottnest", T0_DT).id
    gone = lifecycle.teach(md, "the quokka password is zebrafishword", T0_DT).id
    line = next(raw for raw in md.memory_shelf.read_bytes().splitlines(keepends=True)
                if gone.encode() in raw)  # fmt: skip
    lifecycle.forget(md, gone, T0_DT + timedelta(hours=1))
    assert b"zebrafishword" not in md.memory_shelf.read_bytes()
    assert not tombstones.pending(md)
    with open(md.memory_shelf, "ab") as handle:  # a clone that still had it sends it back
        handle.write(line)
    assert tombstones.pending(md)
    lifecycle.teach(md, "the next write", T0_DT + timedelta(hours=2))
    assert b"zebrafishword" not in md.memory_shelf.read_bytes()
    assert kept.encode() in md.memory_shelf.read_bytes()


def test_the_last_entry_is_quoted_without_the_ids_of_forgotten_turns(hashed: Memdir) -> None:
    """An entry is never edited: one written before a `journal forget` names the turn, and the
    briefing quotes it as "(a forgotten record)"; a turn still there keeps its id."""
    from memdir.usecases import documents, forgetting
    from memdir.usecases.journal import write_entry

    gone, kept = say(hashed, "chat", "the quokka password is zebrafishword", "hello again")
    write_entry(hashed, f"Talked about {gone} and {kept}.", T0_DT + timedelta(hours=1), "user")
    forgetting.forget_turns(hashed, [gone], None, T0_DT + timedelta(hours=2))
    briefing = documents.wake(hashed, T0_DT + timedelta(hours=3)).markdown
    assert f"Talked about (a forgotten record) and {kept}." in briefing
    assert gone not in briefing


def test_a_forgotten_line_appended_back_after_several_forgets_is_caught(md: Memdir) -> None:
    """With several forgotten ids the grown tail of a shelf is searched for each of them where
    it is mapped (tombstones._contents): a forgotten line that comes back at the end is still
    found and compacted by the next write, and the lines kept stay."""
    taught = [lifecycle.teach(md, f"the quokka secret number {n} is zebrafish{n}", T0_DT).id
              for n in range(4)]  # fmt: skip
    lines = {raw for raw in md.memory_shelf.read_bytes().splitlines(keepends=True)
             if taught[1].encode() in raw}  # fmt: skip
    for number, memory_id in enumerate(taught[:3]):
        lifecycle.forget(md, memory_id, T0_DT + timedelta(hours=1 + number))
    lifecycle.teach(md, "a later memory", T0_DT + timedelta(hours=5))
    with open(md.memory_shelf, "ab") as handle:  # a clone that still had it sends it back
        handle.write(b"".join(lines))
    lifecycle.teach(md, "the next write", T0_DT + timedelta(hours=6))
    shelf_bytes = md.memory_shelf.read_bytes()
    assert all(f"zebrafish{n}".encode() not in shelf_bytes for n in range(3))
    assert b"zebrafish3" in shelf_bytes and b"the next write" in shelf_bytes
