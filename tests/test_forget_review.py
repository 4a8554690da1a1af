"""Red-team checks of the tombstones' stamp (archive_format/tombstones.py, 7c6851d): what the
prefix fingerprint trusts after git wrote a shelf, and what a stamp of an older version costs."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from clones import git, new_memdir_repo
from conftest import T0_DT

from memdir.archive_format import lifecycle, tombstones
from memdir.archive_format.clock import format_time
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.records import Tombstone, encode_line
from memdir.cli.main import main

SECRET_WORDS = "Quillborne"
SECRET = (
    f"My safe word is {SECRET_WORDS} and nobody may know it; I wrote it on the back of the "
    "blue notebook that stays in the second drawer of the desk in the study, under the map"
)
FORGET_AT = T0_DT + timedelta(days=1)


def _filler(md: Memdir, label: str, count: int) -> None:
    """Enough ordinary memories for 64 KiB and more of a shelf (the fingerprint's window)."""
    for number in range(count):
        lifecycle.teach(
            md,
            f"{label} note {number}: the kettle on the left burner whistles a little early, the "
            "radiator in the hall knocks twice at dawn, and the plants by the window need water "
            "on Sundays",
            T0_DT,
        )


def _line_of(md: Memdir, memory_id: str) -> bytes:
    [line] = [raw for raw in md.memory_shelf.read_bytes().splitlines(keepends=True)
              if f'"id":"{memory_id}"'.encode() in raw]  # fmt: skip
    return line


def _commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def _restored_at_the_same_length(tmp_path: Path) -> Memdir:
    """`git checkout OTHER -- shelves/memories.jsonl` (take another branch's or the hub's copy
    of the memory shelf) brings back a forgotten memory's line in the middle of the shelf; the
    events shelf still holds the forget, so the text must go again (docs/FORMAT.md, "Forget
    after a merge"). Here the restored shelf has the same length as the one the stamp saw and
    the same 64 KiB at either end: a union merge had put one line of ours (L) right after the
    memory, and L is exactly as long as the memory's line was longer than its tombstone."""
    root = new_memdir_repo(tmp_path / "r")
    md = Memdir.open(root)
    _filler(md, "head", 180)
    secret = lifecycle.teach(md, SECRET, T0_DT).id
    _commit(root, "the head and the secret")
    git(root, "branch", "other")

    # ours: one line right after the secret, as long as the secret's line minus a tombstone
    created = json.loads(_line_of(md, secret))["created"]
    stone = encode_line(Tombstone(secret, created, format_time(FORGET_AT)).to_line())
    ours = lifecycle.teach(md, "L" * (len(SECRET) - len(stone)), T0_DT).id
    assert len(_line_of(md, ours)) == len(_line_of(md, secret)) - len(stone)
    _commit(root, "ours")

    git(root, "checkout", "-q", "other")
    _filler(md, "theirs", 180)  # the other side's lines: 64 KiB and more
    _commit(root, "theirs")
    git(root, "checkout", "-q", "main")
    git(root, "merge", "-q", "--no-edit", "other")  # union: head, secret, ours, theirs

    lifecycle.forget(md, secret, FORGET_AT)
    assert SECRET_WORDS.encode() not in md.memory_shelf.read_bytes()
    _commit(root, "forget")

    git(root, "checkout", "other", "--", "shelves/memories.jsonl")  # head, secret, theirs
    restored = md.memory_shelf.read_bytes()
    assert SECRET_WORDS.encode() in restored, "the test must bring the line back"
    assert json.loads((root / ".memdir" / "tombstones.json").read_text())["shelves"][
        "memories.jsonl"
    ][1] == len(restored), "the same length as the shelf the stamp saw"
    return md


def test_the_next_write_after_git_restored_the_line_at_the_same_length(tmp_path: Path) -> None:
    """The fingerprint's windows match; the CRC-32 of every old byte does not."""
    md = _restored_at_the_same_length(tmp_path)
    lifecycle.teach(md, "I take the early train on Mondays", FORGET_AT)  # the next write
    assert SECRET_WORDS.encode() not in md.memory_shelf.read_bytes()


def test_sync_after_git_restored_the_line_at_the_same_length_removes_it(tmp_path: Path) -> None:
    """`memdir sync` re-applies the tombstones over every shelf whole, whatever the stamp says
    (exact, where the write path's check is a checksum): the same-length restore goes there too."""
    md = _restored_at_the_same_length(tmp_path)
    os.environ["MEMDIR_NOW"] = format_time(FORGET_AT)
    try:
        assert main(["--dir", str(md.root), "sync", "--local"]) == 0
    finally:
        del os.environ["MEMDIR_NOW"]
    assert SECRET_WORDS.encode() not in md.memory_shelf.read_bytes()


def test_a_stamp_of_the_older_version_does_not_cost_a_whole_read_on_every_write(
    md: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stamp written before 7c6851d keeps [inode, size] per shelf. The first re-application
    reads those shelves whole (it cannot trust them); after it, a shelf that did not change is
    not read again, as with a stamp of this version."""
    secret = lifecycle.teach(md, SECRET, T0_DT).id
    lifecycle.teach(md, "I drink my coffee black", T0_DT)
    lifecycle.forget(md, secret, FORGET_AT)
    stamp_path = md.cache_dir / tombstones.STAMP_NAME
    stamp = json.loads(stamp_path.read_text())
    stamp["shelves"] = {name: entry[:2] for name, entry in stamp["shelves"].items()}
    stamp_path.write_text(json.dumps(stamp))  # as the version before wrote it

    seen: list[tuple[str, str, int]] = []
    search = tombstones._needs_compaction

    def watched(blob: Any, memory_id: str, begin: int = 0) -> bool:
        seen.append((memory_id, "memory" if b'"kind":"memory"' in blob[:200] else "other", begin))
        return search(blob, memory_id, begin)

    monkeypatch.setattr(tombstones, "_needs_compaction", watched)
    with md.lock():
        tombstones.reapply(md)  # the upgrade: every shelf read whole once
    assert seen
    seen.clear()
    size = os.stat(md.event_shelf).st_size
    with md.lock():
        tombstones.reapply(md)  # nothing changed since
    assert os.stat(md.event_shelf).st_size == size
    assert seen == [], "a shelf that did not change is read again"


@pytest.mark.parametrize("how", ["cp", "git show"])
def test_a_shelf_restored_in_place_from_before_the_forget(tmp_path: Path, how: str) -> None:
    """`cp backup/memories.jsonl shelves/` (cp writes into the existing file: the same inode)
    or `git show HEAD~1:shelves/memories.jsonl > shelves/memories.jsonl` puts back the copy from
    before the forget: longer than the shelf the stamp saw, so it looks as if it only grew. The
    events shelf still holds the forget: the next command must remove the text again."""
    root = new_memdir_repo(tmp_path / "r")
    md = Memdir.open(root)
    _filler(md, "head", 20)
    secret = lifecycle.teach(md, SECRET, T0_DT).id
    _filler(md, "after", 20)
    _commit(root, "before the forget")
    backup = md.memory_shelf.read_bytes()
    lifecycle.forget(md, secret, FORGET_AT)
    _commit(root, "forget")
    tombstones.catch_up(md)  # any command after the commit: the stamp follows git's index
    assert not tombstones.pending(md)
    inode = md.memory_shelf.stat().st_ino
    if how == "cp":
        (tmp_path / "backup.jsonl").write_bytes(backup)
        with open(md.memory_shelf, "r+b") as handle:  # what cp does to an existing file
            handle.truncate(0)
            handle.write(backup)
    else:
        shown = git(root, "show", "HEAD~1:shelves/memories.jsonl").stdout.encode()
        with open(md.memory_shelf, "wb") as handle:  # the shell's `>`
            handle.write(shown)
    assert md.memory_shelf.stat().st_ino == inode
    assert SECRET_WORDS.encode() in md.memory_shelf.read_bytes(), "the test must bring it back"

    lifecycle.teach(md, "I take the early train on Mondays", FORGET_AT)  # the next write
    assert SECRET_WORDS.encode() not in md.memory_shelf.read_bytes()


def test_a_pull_that_lands_while_a_command_re_applies_the_tombstones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git takes no memdir lock: a plain `git pull` in a terminal can write the shelves and its
    index while a memdir command (the MCP server answering, a write) is between its scan of the
    shelves and its stamp. The stamp must then not vouch for lines nobody searched: the next
    command removes the text the pull brought back."""
    root = new_memdir_repo(tmp_path / "r")
    md = Memdir.open(root)
    _filler(md, "head", 3)
    secret = lifecycle.teach(md, SECRET, T0_DT).id
    line = _line_of(md, secret)
    lifecycle.forget(md, secret, FORGET_AT)
    _commit(root, "forget")
    tombstones.catch_up(md)
    assert not tombstones.pending(md)

    write_stamp = tombstones._write_stamp
    pulled: list[bool] = []

    def a_pull_lands(*args: Any) -> None:
        if not pulled:  # what a merge leaves: the shelf written anew, then git's index
            pulled.append(True)
            written = root / "written-by-git.tmp"
            written.write_bytes(md.memory_shelf.read_bytes() + line)
            os.replace(written, md.memory_shelf)
            (root / "pulled.txt").write_text("pulled\n")
            git(root, "add", "pulled.txt")
        write_stamp(*args)

    monkeypatch.setattr(tombstones, "_write_stamp", a_pull_lands)
    lifecycle.teach(md, "I take the early train on Mondays", FORGET_AT)  # the write in progress
    assert pulled and SECRET_WORDS.encode() in md.memory_shelf.read_bytes()
    monkeypatch.setattr(tombstones, "_write_stamp", write_stamp)

    tombstones.catch_up(md)  # the next command
    assert SECRET_WORDS.encode() not in md.memory_shelf.read_bytes()


@pytest.mark.parametrize("entry", [[1, -5, "x", 0], [1, "big", None, None], [None] * 4, "text"])
def test_a_damaged_stamp_means_a_whole_check_not_a_traceback(md: Memdir, entry: Any) -> None:
    """The stamp is a cache: any value in it that makes no sense is read as "unknown", and the
    shelves are checked whole."""
    secret = lifecycle.teach(md, SECRET, T0_DT).id
    line = _line_of(md, secret)
    lifecycle.forget(md, secret, FORGET_AT)
    stamp_path = md.cache_dir / tombstones.STAMP_NAME
    stamp = json.loads(stamp_path.read_text())
    stamp["shelves"] = {name: entry for name in stamp["shelves"]}
    stamp_path.write_text(json.dumps(stamp))
    with open(md.memory_shelf, "ab") as handle:  # a merge brought the line back
        handle.write(line)
    lifecycle.teach(md, "I take the early train on Mondays", FORGET_AT)
    assert SECRET_WORDS.encode() not in md.memory_shelf.read_bytes()
