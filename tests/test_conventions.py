"""One vocabulary across commands, and output that says what is true: counts are `--k`, times
ISO or a duration back, counts agree with their noun, no line ends in a space; refused input
gets a hint (memory types, a short passphrase); `show`, `distill`, `sleep --dry-run` and `wake`
say what they do."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import T0

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.clock import parse_time
from memdir.archive_format.errors import ExitStatus
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.records import MEMORY_TYPES

ROOT = Path(__file__).parent.parent


def run(capsys: pytest.CaptureFixture[str], memdir: Memdir, *argv: str) -> tuple[int, str, str]:
    import logging

    from memdir.cli.main import main

    # memdir's log handler writes to the sys.stderr of its first run: make it this test's
    logging.getLogger("memdir").handlers.clear()
    capsys.readouterr()
    code = main(["--dir", str(memdir.root), "--now", T0, *argv])
    done = capsys.readouterr()
    return code, done.out, done.err


def test_list_counts_with_k_and_still_takes_limit(capsys, hashed: Memdir) -> None:
    for n in range(3):
        lifecycle.teach(hashed, f"note number {n}", parse_time(T0))
    code, out, _ = run(capsys, hashed, "list", "--k", "2", "--json")
    assert code == 0 and len(json.loads(out)) == 2
    code, out, _ = run(capsys, hashed, "list", "-k", "1", "--json")
    assert code == 0 and len(json.loads(out)) == 1
    code, out, _ = run(capsys, hashed, "list", "--limit", "2", "--json")  # the old spelling
    assert code == 0 and len(json.loads(out)) == 2
    code, out, _ = run(capsys, hashed, "list", "--help")
    assert "--k" in out and "--limit" not in out


def test_list_since_takes_a_duration_as_journal_read_does(capsys, hashed: Memdir) -> None:
    lifecycle.teach(hashed, "an old note", parse_time("2026-04-01T09:00:00Z"))
    lifecycle.teach(hashed, "a new note", parse_time("2026-04-30T09:00:00Z"))
    code, out, err = run(capsys, hashed, "list", "--since", "2d", "--json")
    assert code == 0, err
    assert [row["text"] for row in json.loads(out)] == ["a new note"]
    code, out, _ = run(capsys, hashed, "list", "--until", "2026-04-02", "--json")
    assert [row["text"] for row in json.loads(out)] == ["an old note"]


def test_an_unknown_memory_type_is_refused_with_the_list(capsys, hashed: Memdir) -> None:
    code, out, err = run(capsys, hashed, "teach", "I like tea", "--type", "NOTATYPE")
    assert code == ExitStatus.BAD_INPUT and out == ""
    assert "NOTATYPE" in err and all(kind in err for kind in MEMORY_TYPES)
    assert (
        run(capsys, hashed, "infer", "maybe tea", "--type", "NOTATYPE")[0] == ExitStatus.BAD_INPUT
    )
    assert list(lifecycle.load_view(hashed, parse_time(T0))) == []  # nothing written
    code, out, _ = run(capsys, hashed, "teach", "I like tea", "--type", "fact:preference")
    assert code == 0
    code, shown, _ = run(capsys, hashed, "show", out.strip(), "--json")
    data = json.loads(shown)
    assert (data["type"], data["subtype"]) == ("FACT", "preference")  # in capitals, as documented


def test_the_distiller_knows_only_the_documented_types() -> None:
    from memdir.indexers.distill import PROTOTYPES

    assert {label.split(":")[0] for label in PROTOTYPES} <= set(MEMORY_TYPES)


def test_a_short_passphrase_is_refused_for_encrypt(
    capsys, hashed: Memdir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memdir.cli.commands.archive import MIN_PASSPHRASE

    lifecycle.teach(hashed, "a secret worth keeping", parse_time(T0))
    out = tmp_path / "export.tar.gz"
    monkeypatch.setenv("MEMDIR_PASSPHRASE", "x")
    code, _, err = run(capsys, hashed, "export", "--out", str(out), "--encrypt")
    assert code == ExitStatus.BAD_INPUT and f"at least {MIN_PASSPHRASE}" in err
    assert not out.exists()
    monkeypatch.setenv("MEMDIR_PASSPHRASE", "x" * MIN_PASSPHRASE)
    code, _, err = run(capsys, hashed, "export", "--out", str(out), "--encrypt")
    assert code == 0 and out.exists(), err


def test_show_displays_the_distilled_labels_and_distill_names_no_none(
    capsys, hashed: Memdir
) -> None:
    memory = lifecycle.teach(hashed, "I take 20 mg of citalopram daily", parse_time(T0))
    lifecycle.teach(hashed, "zzz qqq", parse_time(T0))  # nothing the taxonomy knows
    code, out, err = run(capsys, hashed, "distill")
    assert code == 0
    assert "None" not in out + err, err
    code, out, _ = run(capsys, hashed, "show", memory.id, "--json")
    distilled = json.loads(out)["distilled"]
    assert distilled["type"] and distilled["annotator"].startswith("memdir-distill")
    code, out, _ = run(capsys, hashed, "show", memory.id)
    assert re.search(r"^distilled:\s+type ", out, re.M)


def test_sleep_dry_run_reports_what_the_run_writes(capsys, hashed: Memdir) -> None:
    turns = [journal.new_turn(at=f"2026-04-30T10:0{n}:00Z", role=role, session="garden", text=text)
             for n, (role, text) in enumerate([
                 ("user", "I planted tomatoes in the allotment today"),
                 ("assistant", "Which variety did you choose?"),
                 ("user", "Gardener's Delight, six plants along the south fence")])]  # fmt: skip
    journal.add_turns(hashed, turns)
    code, out, _ = run(capsys, hashed, "sleep", "--dry-run", "--json")
    planned = json.loads(out)["dream"]["memories_to_write"]
    code, out, _ = run(capsys, hashed, "sleep", "--dry-run")
    assert f"{len(planned)} memor" in out and "to write" in out
    code, out, _ = run(capsys, hashed, "sleep", "--json")
    written = json.loads(out)["dream"]["memories_written"]
    assert planned and sorted(planned) == sorted(written)


def test_counts_agree_with_their_noun_and_no_line_ends_in_a_space(
    capsys, hashed: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    memory = lifecycle.teach(hashed, "Sam drinks his coffee black", parse_time(T0))
    lifecycle.infer(hashed, "Sam seems to like mornings", parse_time(T0))
    journal.add_turns(hashed, [journal.new_turn(at="2026-04-30T10:00:00Z", role="user",
                                                session="s", text="hello there")])  # fmt: skip
    commands = [
        ("list",), ("list", "--k", "1"), ("stats",), ("ring",), ("show", memory.id),
        ("log", memory.id), ("search", "coffee"), ("recall", "coffee", "--no-record"),
        ("recall", "coffee", "--no-record", "--explain"), ("index", "--status"), ("distill",),
        ("verify",), ("review",), ("wake",), ("journal", "read"), ("sleep", "--dry-run"),
        ("dream", "--dry-run"), ("decay", memory.id), ("expire",),
    ]  # fmt: skip
    everything = ""
    for argv in commands:
        code, out, err = run(capsys, hashed, *argv)
        assert code in (0, ExitStatus.PROBLEMS), (argv, err)
        for line in (out + err).splitlines():
            assert line == line.rstrip(), (argv, line)
        everything += out + err
    assert "(s)" not in everything
    assert not re.search(
        r"\b1 (memories|inferences|turns|groups|problems|lines|links)\b", everything
    )
    assert re.search(r"\b1 memory\b", run(capsys, hashed, "list", "--k", "1")[2])


def test_wake_writes_nothing_as_its_help_and_the_docs_say(capsys, hashed: Memdir) -> None:
    lifecycle.teach(hashed, "Sam drinks his coffee black", parse_time(T0))
    wake_md = hashed.root / "documents" / "wake.md"
    before = wake_md.read_bytes() if wake_md.exists() else None
    code, out, _ = run(capsys, hashed, "wake")
    assert code == 0 and out
    assert (wake_md.read_bytes() if wake_md.exists() else None) == before
    assert "Writes nothing" in " ".join(run(capsys, hashed, "wake", "--help")[1].split())
    for doc in ("docs/MCP.md", "docs/FORMAT.md", "docs/CONTINUITY.md", "README.md"):
        text = " ".join((ROOT / doc).read_text(encoding="utf-8").split())
        assert not re.search(r"`wake`, which writes|by `boot`, `wake`", text), doc
