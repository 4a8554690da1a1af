"""`memdir import`: ChatGPT, Claude and JSONL exports into the raw journal; idempotent, with an
exact undo; malformed input is reported with its position and stores nothing partial."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import T0_DT, Run, shelf_lines, snapshot

from memdir.archive_format import journal
from memdir.archive_format.errors import FormatError, LifecycleError, NotFoundError
from memdir.archive_format.imports import read_manifest
from memdir.archive_format.memdir import Memdir
from memdir.usecases import provenance
from memdir.usecases.imports import detect, import_file, source_id, undo


@pytest.fixture
def cli(cli_in_process):
    """What the commands do and print is the subject here, not processes: the CLI runs in this
    process (conftest.memdir_main)."""
    return cli_in_process


FIXTURES = Path(__file__).parent / "fixtures" / "imports"
NOW = T0_DT + timedelta(days=400)  # 2027: after every conversation in the fixtures
CASES = {
    # format: (file, turns, sessions, (role, text) of the first turn)
    "chatgpt": ("chatgpt-conversations.json", 6, 2,
                ("user", "My tomato seedlings are getting leggy. I keep them on the kitchen "
                 "windowsill.")),
    "claude": ("claude-conversations.json", 5, 2,
               ("user", "My sourdough starter smells like nail polish. I feed it once a day "
                "with rye flour.")),
    "jsonl": ("transcript.jsonl", 5, 2, ("user", "I'm moving to Lisbon in September.")),
}  # fmt: skip


def journal_bytes(md: Memdir) -> bytes:
    path = md.journal_dir / "turns.jsonl"
    return path.read_bytes() if path.exists() else b""


def turn_lines(md: Memdir) -> list[dict]:
    return [json.loads(line) for line in journal_bytes(md).splitlines()]


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_import_is_idempotent_and_undo_is_exact(md: Memdir, fmt: str) -> None:
    name, count, sessions, first = CASES[fmt]
    path = FIXTURES / name
    journal.add_turns(md, [journal.new_turn(T0_DT, "user", "before", "already here")])
    before_journal, before_state = journal_bytes(md), snapshot(md.root)

    report = import_file(md, path, fmt, NOW)
    source = source_id(path.read_bytes())
    assert (report.source, report.added, report.already) == (source, count, 0)
    imported = [t for t in turn_lines(md) if t["channel"] == f"import:{source}"]
    assert len(imported) == count and len({t["session"] for t in imported}) == sessions
    assert (imported[0]["role"], imported[0]["text"]) == first
    assert {t["role"] for t in imported} <= {"user", "assistant", "tool"}
    assert read_manifest(md)[source]["turns"] == count
    assert shelf_lines(md) == []  # turns only: no memory, and so no teaching

    after_first = journal_bytes(md)
    again = import_file(md, path, fmt, NOW + timedelta(hours=1))
    assert (again.added, again.already) == (0, count)
    assert journal_bytes(md) == after_first

    assert undo(md, source, NOW) == count
    assert journal_bytes(md) == before_journal
    assert snapshot(md.root) == before_state  # memdir.yaml, shelves, state/
    assert source not in read_manifest(md)
    with pytest.raises(NotFoundError):
        undo(md, source, NOW)


def test_undo_removes_only_its_own_turns_among_others(md: Memdir) -> None:
    first = import_file(md, FIXTURES / "chatgpt-conversations.json", "chatgpt", NOW)
    journal.add_turns(md, [journal.new_turn(NOW, "user", "live", "typed in between")])
    second = import_file(md, FIXTURES / "claude-conversations.json", "claude", NOW)
    lines = journal_bytes(md).splitlines(keepends=True)
    expected = b"".join(line for line in lines if f"import:{first.source}".encode() not in line)
    assert undo(md, first.source, NOW) == first.added
    assert journal_bytes(md) == expected
    assert second.source in read_manifest(md) and first.source not in read_manifest(md)


def test_an_overlapping_later_export_adds_and_undoes_only_what_is_new(
    md: Memdir, tmp_path: Path
) -> None:
    old = FIXTURES / "transcript.jsonl"
    newer = tmp_path / "transcript-june.jsonl"
    extra = {"role": "user", "content": "The flat in Lisbon has a balcony.",
             "timestamp": "2024-06-03T09:00:00Z", "session": "relocation"}  # fmt: skip
    newer.write_text(old.read_text() + json.dumps(extra) + "\n")
    import_file(md, old, "jsonl", NOW)
    before = journal_bytes(md)
    report = import_file(md, newer, "jsonl", NOW)
    assert (report.added, report.already) == (1, 5)
    assert undo(md, report.source, NOW) == 1
    assert journal_bytes(md) == before


@pytest.mark.parametrize(
    ("name", "fmt", "position"),
    [
        ("chatgpt-malformed.json", "chatgpt",
         "chatgpt-malformed.json: conversation 2 (id c0000000-0000-4000-8000-000000000002, "
         "'Broken conversation'), message node 'd-a1': create_time is not"),
        ("claude-malformed.json", "claude",
         "claude-malformed.json: conversation 1 (uuid e0000000-0000-4000-8000-000000000001, "
         "'Broken sender'), message 2: unknown sender 'narrator'"),
        ("claude-truncated.json", "claude", "claude-truncated.json:3:1: not valid JSON"),
        ("transcript-malformed.jsonl", "jsonl",
         "transcript-malformed.jsonl:3 (session 'bad'): content must be a non-empty string"),
        ("claude-conversations.json", "chatgpt", "conversation 1: no conversation id"),
    ],
    ids=["chatgpt", "claude", "truncated-json", "jsonl", "wrong-format"],
)  # fmt: skip
def test_malformed_exports_are_rejected_whole_with_their_position(
    md: Memdir, name: str, fmt: str, position: str
) -> None:
    before = snapshot(md.root), journal_bytes(md)
    with pytest.raises(FormatError) as raised:
        import_file(md, FIXTURES / name, fmt, NOW)
    assert position in raised.value.message
    assert "nothing was imported" in raised.value.message
    assert (snapshot(md.root), journal_bytes(md)) == before


@pytest.mark.parametrize(
    ("name", "fmt", "kept", "dropped"),
    [
        ("chatgpt-malformed.json", "chatgpt", "chatgpt-c0000000-0000-4000-8000-000000000001",
         "chatgpt-c0000000-0000-4000-8000-000000000002"),
        ("transcript-malformed.jsonl", "jsonl", "good", "bad"),
    ],
)  # fmt: skip
def test_skip_malformed_keeps_nothing_of_a_broken_conversation(
    md: Memdir, name: str, fmt: str, kept: str, dropped: str
) -> None:
    report = import_file(md, FIXTURES / name, fmt, NOW, skip_malformed=True)
    assert len(report.skipped) == 1 and report.added >= 1
    sessions = {turn["session"] for turn in turn_lines(md)}
    assert kept in sessions and dropped not in sessions


def test_assistant_text_never_becomes_a_teaching(md: Memdir) -> None:
    import_file(md, FIXTURES / "chatgpt-conversations.json", "chatgpt", NOW)
    later = T0_DT.replace(year=2024, month=5, day=1, hour=12)  # within 24 h of the chat
    claim = "The user clearly loves gardening and grows vegetables every year"
    assert provenance.teach(md, claim, later).stored_as == "inference"
    words = "I keep them on the kitchen windowsill"
    assert provenance.teach(md, words, later).stored_as == "teaching"  # the user's own words
    sources = {(line["source"], line["author"]) for line in shelf_lines(md)}
    assert sources == {("inference", "assistant"), ("teaching", "user")}


def test_undo_is_refused_once_a_dream_consolidated_the_turns(md: Memdir) -> None:
    report = import_file(md, FIXTURES / "transcript.jsonl", "jsonl", NOW)
    imported = [t["id"] for t in turn_lines(md)]
    journal.add_digests(md, [journal.new_digest(NOW, imported[:2])])
    before = journal_bytes(md)
    with pytest.raises(LifecycleError, match="consolidated by a dream"):
        undo(md, report.source, NOW)
    assert journal_bytes(md) == before


def test_the_command_line(md: Memdir, cli: Callable[..., Run]) -> None:
    path = FIXTURES / "claude-conversations.json"
    done = cli("--dir", str(md.root), "import", str(path), "--format", "claude")
    assert done.code == 0, done
    source = done.out.strip()
    assert source == source_id(path.read_bytes()) and "5 added" in done.err
    listed = cli("--dir", str(md.root), "import", "--list", "--json")
    assert json.loads(listed.out)[source]["format"] == "claude"
    bad = cli("--dir", str(md.root), "import", str(FIXTURES / "claude-malformed.json"),
              "--format", "claude")  # fmt: skip
    assert bad.code == 6 and "message 2: unknown sender" in bad.err.splitlines()[0]
    detected = cli("--dir", str(md.root), "import", str(path))  # no --format: detected
    assert detected.code == 0 and detected.out.strip() == source, detected
    assert "0 added, 5 already present" in detected.err
    unknown = md.root.parent / "notes.json"
    unknown.write_text('[{"title": "not a conversation"}]')
    missing = cli("--dir", str(md.root), "import", str(unknown))
    assert missing.code == 8 and "--format" in missing.err
    done = cli("--dir", str(md.root), "import", "--undo", source)
    assert done.code == 0 and "removed 5 turns" in done.err
    assert turn_lines(md) == []


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("chatgpt-conversations.json", "chatgpt"), ("claude-conversations.json", "claude"),
     ("transcript.jsonl", "jsonl")],
)  # fmt: skip
def test_the_format_is_detected_from_the_content(
    md: Memdir, tmp_path: Path, name: str, fmt: str
) -> None:
    renamed = tmp_path / "export.txt"  # no telling extension: the content decides
    renamed.write_bytes((FIXTURES / name).read_bytes())
    assert detect(renamed.read_bytes(), renamed.name) == fmt
    report = import_file(md, renamed, None, NOW)
    assert report.format == fmt and report.added > 0
    assert read_manifest(md)[report.source]["format"] == fmt


def test_skip_malformed_skips_a_bad_jsonl_line_and_keeps_its_session(
    md: Memdir, cli: Callable[..., Run], tmp_path: Path
) -> None:
    lines = (FIXTURES / "transcript.jsonl").read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([lines[0], '{"role": "user", "content": oops', *lines[1:]]) + "\n")
    refused = cli("--dir", str(md.root), "import", str(broken))
    assert refused.code == 6 and "broken.jsonl:2" in refused.err and "not valid JSON" in refused.err
    assert turn_lines(md) == []
    done = cli("--dir", str(md.root), "import", str(broken), "--skip-malformed")
    assert done.code == 0, done
    assert "skipped broken.jsonl:2" in done.err
    texts = [turn["text"] for turn in turn_lines(md)]
    assert len(texts) == len(lines)  # every good line, the first session's included
    assert "I'm moving to Lisbon in September." in texts
