"""Secrets never leave in plain text (docs/FORMAT.md, sections 5 and 8): a secret turn is kept in
the git-ignored journal/secret.jsonl and a sealed memory, with every event and tombstone naming
it, in the git-ignored shelves/sealed.jsonl, so `memdir sync` neither commits nor pushes them; an
older memdir's are moved there by sync; `verify` fails on a tracked file holding one and `sync`
refuses to push a commit that adds one. Real git repositories, in-process commands."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from clones import git, hub_and_clones, new_memdir_repo
from conftest import T0, T0_DT

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.journal import Turn, new_turn
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.records import encode_line, new_event
from memdir.cli.main import main

PIN = "My bank PIN is 4711"


def run(root: Path, *args: str) -> int:
    os.environ["MEMDIR_NOW"] = T0
    try:
        return main(["--dir", str(root), *args])
    finally:
        del os.environ["MEMDIR_NOW"]


def ok(root: Path, *args: str) -> None:
    assert run(root, *args) == 0, args


def everything_git_holds(repo: Path) -> str:
    """Every blob of every commit reachable in the repository (history included)."""
    objects = git(repo, "rev-list", "--objects", "--all").stdout.split("\n")
    texts = []
    for line in objects:
        if not line.strip():
            continue
        sha = line.split()[0]
        if git(repo, "cat-file", "-t", sha).stdout.strip() == "blob":
            texts.append(git(repo, "cat-file", "-p", sha).stdout)
    return "".join(texts)


def test_a_secret_turn_is_masked_kept_here_and_never_committed_or_pushed(tmp_path: Path) -> None:
    a, b = hub_and_clones(tmp_path)
    ok(a, "journal", "add", "--session", "s1", "--role", "user", "--secrecy", "secret", PIN)
    ok(a, "journal", "add", "--session", "s1", "--role", "user", "the weather is fine")
    ok(a, "sync")
    hub = tmp_path / "hub.git"
    assert "PIN is 4711" not in everything_git_holds(
        hub
    ) and "PIN is 4711" not in everything_git_holds(a)
    assert "the weather is fine" in everything_git_holds(hub)  # the rest travels
    # still here, for this machine: in the journal, masked on every surface
    turns = journal.read_journal(Memdir.open(a)).turns
    assert [t.secrecy for t in turns if "PIN is 4711" in t.text] == ["secret"]
    assert git(a, "check-ignore", "-q", "journal/secret.jsonl", check=False).returncode == 0
    ok(b, "sync")
    assert not any("PIN is 4711" in t.text for t in journal.read_journal(Memdir.open(b)).turns)
    assert run(b, "verify") == 0 and run(a, "verify") == 0


def secret_in_turns_file(tmp_path: Path) -> tuple[Path, Memdir, Turn]:
    """A clone whose secret turn stands in the committed turns file, as an older memdir wrote it."""
    (a,) = hub_and_clones(tmp_path, ("a",))
    memdir = Memdir.open(a)
    secret = new_turn(T0, "user", "s1", PIN, secrecy="secret")
    memdir.journal_dir.mkdir(exist_ok=True)
    journal.turns_path(memdir).write_text(
        json.dumps(secret.to_line(), separators=(",", ":")) + "\n"
    )
    return a, memdir, secret


def test_an_older_memdirs_secret_turn_is_moved_out_before_sync_commits(tmp_path: Path) -> None:
    a, memdir, secret = secret_in_turns_file(tmp_path)
    ok(a, "sync")
    assert "PIN is 4711" not in everything_git_holds(tmp_path / "hub.git")
    assert "PIN is 4711" not in journal.turns_path(memdir).read_text()
    assert [t.id for t in journal.read_journal(memdir).turns] == [secret.id]  # nothing lost


def test_verify_fails_on_a_tracked_secret_and_sync_refuses_to_push_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, memdir, secret = secret_in_turns_file(tmp_path)
    git(a, "add", "-A")
    git(a, "commit", "-q", "-m", "committed by hand")
    capsys.readouterr()
    assert run(a, "verify") != 0
    out = capsys.readouterr().out
    assert "journal/turns.jsonl:1: a secret turn or sealed memory in a file git tracks" in out
    assert run(a, "sync") != 0
    error = capsys.readouterr().err
    errors = [line for line in error.splitlines() if line.startswith("memdir: error:")]
    assert len(errors) == 1 and errors[0].startswith("memdir: error: refusing to push")
    assert "hint:" in error
    assert "Traceback" not in error
    assert "PIN is 4711" not in everything_git_holds(tmp_path / "hub.git")
    # the turn is safe on this machine, and out of the tracked file now
    assert [t.id for t in journal.read_journal(memdir).turns] == [secret.id]
    assert run(a, "verify") == 0


def test_forgetting_a_secret_turn_leaves_its_tombstone_on_this_machine(tmp_path: Path) -> None:
    root = new_memdir_repo(tmp_path / "m")
    ok(root, "journal", "add", "--session", "s1", "--role", "user", "--secrecy", "secret", PIN)
    memdir = Memdir.open(root)
    (turn,) = journal.read_journal(memdir).turns
    ok(root, "journal", "forget", turn.id)
    # the turn's id is a hash over its text: a committed tombstone would let a guess be checked
    assert turn.id in journal.secret_path(memdir).read_text()
    committed = journal.turns_path(memdir)
    assert not committed.exists() or turn.id not in committed.read_text()
    assert journal.read_journal(memdir).turns == []


def ids_written(root: Path, text: str, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    ok(root, *args, text)
    return capsys.readouterr().out.strip().split()[-1]


def test_a_sealed_memory_and_everything_naming_it_stay_on_this_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = hub_and_clones(tmp_path)
    sealed = ids_written(a, PIN, capsys, "teach", "--visibility", "sealed")
    coffee = ids_written(a, "I drink my coffee black", capsys, "teach")
    ok(a, "link", coffee, sealed, "--type", "related")  # an event that names the sealed memory
    ok(a, "sync")
    hub = tmp_path / "hub.git"
    for held in (everything_git_holds(hub), everything_git_holds(a)):
        assert "PIN is 4711" not in held and sealed not in held
        assert coffee in held  # the rest travels
    memdir = Memdir.open(a)
    assert git(a, "check-ignore", "-q", "shelves/sealed.jsonl", check=False).returncode == 0
    assert sealed in memdir.sealed_shelf.read_text()
    state = lifecycle.load_view(memdir, T0_DT).states.get(sealed)
    assert state is not None and state.memory.visibility == "sealed"
    ok(b, "sync")
    assert coffee in (b / "shelves" / "memories.jsonl").read_text()
    assert run(b, "verify") == 0 and run(a, "verify") == 0  # b holds nothing that names it
    ok(a, "forget", sealed)  # its tombstone and forget event stay here too
    ok(a, "sync")
    ok(b, "sync")
    assert sealed not in everything_git_holds(hub)
    assert run(b, "verify") == 0 and run(a, "verify") == 0


def test_an_older_memdirs_sealed_memory_moves_out_with_its_events_before_sync_commits(
    tmp_path: Path,
) -> None:
    (a,) = hub_and_clones(tmp_path, ("a",))
    memdir = Memdir.open(a)
    # as an older memdir wrote them: in the committed shelves
    coffee = lifecycle.teach(memdir, "I drink my coffee black", T0_DT).id
    memory = lifecycle._memory(PIN, "teaching", "user", T0_DT, visibility="sealed")
    event = new_event(at=T0, op="link", target=coffee, actor="user", to=memory.id,
                      link_type="related")  # fmt: skip
    with memdir.memory_shelf.open("ab") as out:
        out.write(encode_line(memory.to_line()))
    with memdir.event_shelf.open("ab") as out:
        out.write(encode_line(event.to_line()))
    ok(a, "sync")
    held = everything_git_holds(tmp_path / "hub.git")
    assert "PIN is 4711" not in held and memory.id not in held
    assert "coffee" in held
    for path in (memdir.memory_shelf, memdir.event_shelf):
        assert memory.id not in path.read_text()
    moved = memdir.sealed_shelf.read_text()
    assert memory.id in moved and event.id in moved  # nothing lost
    assert memory.id in lifecycle.load_view(memdir, T0_DT).states
    assert run(a, "verify") == 0


def test_verify_fails_on_a_tracked_sealed_memory_and_sync_refuses_to_push_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (a,) = hub_and_clones(tmp_path, ("a",))
    memdir = Memdir.open(a)
    memory = lifecycle._memory(PIN, "teaching", "user", T0_DT, visibility="sealed")
    with memdir.memory_shelf.open("ab") as out:
        out.write(encode_line(memory.to_line()))
    git(a, "add", "-A")
    git(a, "commit", "-q", "-m", "committed by hand")
    capsys.readouterr()
    assert run(a, "verify") != 0
    assert "shelves/memories.jsonl:1: a secret turn or sealed memory" in capsys.readouterr().out
    assert run(a, "sync") != 0
    error = capsys.readouterr().err
    assert "memdir: error: refusing to push" in error and "Traceback" not in error
    assert "PIN is 4711" not in everything_git_holds(tmp_path / "hub.git")
    assert memory.id in memdir.sealed_shelf.read_text()
    assert run(a, "verify") == 0
