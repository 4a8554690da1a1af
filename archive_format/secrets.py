"""Secrets never leave in plain text: a secret turn lives in `journal/secret.jsonl` and a sealed
memory, with every event and tombstone about it, in `shelves/sealed.jsonl`; both files are
git-ignored, so that `memdir sync` never commits or pushes them (docs/FORMAT.md, sections 5
and 8). A sealed memory is never shown or summarised anywhere, so nothing another clone does
needs it: it stays on the machine it was written on (and in what that machine exports).

Writers put new secret turns (and their tombstones) there (journal.path_for), and sealed
memories and the events that name one in the sealed shelf (`shelf_for`, `event_shelf_for`). A
memdir written before this rule may hold them in committed files: `move_out` moves them to the
per-machine files (appended there first, then removed from the other file by an atomic rewrite,
so a crash in between leaves the turn twice, which counts once), and `memdir sync` runs it
before it commits. `tracked` finds what git would still carry: a secret turn or a sealed
memory in a tracked file (verify fails on it), and `unpushed` one added by a commit not yet on
the remote (sync refuses to push it).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from . import journal, shelf
from .errors import FormatError
from .memdir import Memdir
from .rewrite import Lines, rewrite

# how a secret turn's and a sealed memory's lines read, whatever else they hold (keys are
# written in table order, without spaces)
NEEDLES = (b'"secrecy":"secret"', b'"visibility":"sealed"')


def _is_secret_line(raw: bytes, where: str) -> bool:
    """A secret turn or a sealed memory (a malformed line naming either counts: it may hold
    the text)."""
    if not any(needle in raw for needle in NEEDLES):
        return False
    try:
        data = shelf.decode_line(raw, where)
    except FormatError:
        return True
    if data.get("kind") == "turn":
        return data.get("secrecy") == "secret"
    return data.get("kind") == "memory" and data.get("visibility") == "sealed"


def sealed_ids(memdir: Memdir) -> set[str]:
    """The ids of the sealed memories this machine holds (the sealed shelf is small: it holds
    only them and what names them)."""
    path = memdir.sealed_shelf
    if not path.is_file():
        return set()
    return {
        item.data["id"]
        for item in shelf.read(path)
        if item.data.get("kind") in ("memory", "tombstone")
    }


def shelf_for(memdir: Memdir, visibility: str) -> Path:
    """Where a new memory's line goes: a sealed one to the per-machine sealed shelf."""
    return memdir.sealed_shelf if visibility == "sealed" else memdir.memory_shelf


def event_shelf_for(memdir: Memdir, named: set[str], sealed: set[str] | None = None) -> Path:
    """Where an event naming the memories `named` goes: beside a sealed memory it names, so no
    clone holds an event about a memory it cannot have; `sealed` is sealed_ids when known."""
    held = sealed_ids(memdir) if sealed is None else sealed
    return memdir.sealed_shelf if named & held else memdir.event_shelf


def _names(data: object, sealed: set[str]) -> bool:
    if not isinstance(data, dict):
        return False
    if data.get("kind") == "event":
        return bool({data.get("target"), data.get("to")} & sealed)
    return data.get("kind") == "tombstone" and data.get("id") in sealed


def move_out(memdir: Memdir) -> int:
    """Move every secret turn of a committed journal file to journal/secret.jsonl, and every
    sealed memory of a committed shelf, with the events and tombstones naming it, to
    shelves/sealed.jsonl (caller holds the writer lock); returns how many lines moved."""
    moved = sum(
        _move(memdir, path, journal.secret_path(memdir), NEEDLES, _is_secret_line)
        for path in journal.journal_files(memdir)
    )
    held = sealed_ids(memdir) | _sealed_elsewhere(memdir)

    def sealed_line(raw: bytes, where: str) -> bool:
        if _is_secret_line(raw, where):
            return True
        try:
            return _names(shelf.decode_line(raw, where), held)
        except FormatError:
            return False

    needles = (*NEEDLES, *(name.encode() for name in sorted(held)))
    return moved + sum(
        _move(memdir, path, memdir.sealed_shelf, needles, sealed_line) for path in memdir.shelves()
    )


def _sealed_elsewhere(memdir: Memdir) -> set[str]:
    """The ids of sealed memories in the committed shelves (written before the sealed shelf)."""
    found: set[str] = set()
    for path in memdir.shelves():
        if path != memdir.sealed_shelf and NEEDLES[1] in path.read_bytes():
            found |= {
                item.data["id"]
                for item in shelf.read(path)
                if item.data.get("kind") == "memory" and item.data.get("visibility") == "sealed"
            }
    return found


def _move(
    memdir: Memdir,
    path: Path,
    target: Path,
    needles: tuple[bytes, ...],
    secret: Callable[[bytes, str], bool],
) -> int:
    """Move the lines of `path` that `secret` picks (only lines holding one of `needles` can be
    picked) to the end of `target`: appended there first, then removed from `path` by an
    atomic rewrite, so a crash in between leaves a line twice, which counts once."""
    if path == target:
        return 0
    blob = path.read_bytes()
    if not any(needle in blob for needle in needles):
        return 0
    old = Lines.read(path)  # a torn tail is kept as it is (the next writer quarantines it)
    picked = {
        line
        for number, line in enumerate(old.lines, 1)
        if any(needle in line for needle in needles) and secret(line[:-1], f"{path}:{number}")
    }
    if not picked:
        return 0
    shelf.append(target, [line for line in old.lines if line in picked], memdir.quarantine_dir)
    rewrite(memdir, old, [b"" if line in picked else line for line in old.lines])  # cache follows
    return sum(line in picked for line in old.lines)


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)


def tracked(memdir: Memdir) -> list[str]:
    """`FILE:LINE` of every secret turn or sealed memory in a file git tracks (empty outside
    git)."""
    try:
        listed = _git(memdir.root, "ls-files", "-z", "--", ".")
    except FileNotFoundError:
        return []
    if listed.returncode != 0:
        return []
    found = []
    for name in sorted(filter(None, listed.stdout.decode("utf-8", "replace").split("\0"))):
        path = memdir.root / name
        try:
            blob = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        except OSError:
            continue
        if not any(needle in blob for needle in NEEDLES):
            continue
        for number, raw in enumerate(blob.split(b"\n"), start=1):
            if _is_secret_line(raw, f"{name}:{number}"):
                found.append(f"{name}:{number}")
    return found


def unpushed(root: Path, remote: str) -> list[str]:
    """`COMMIT FILE` for every commit not yet on `remote` that adds a secret turn's or a sealed
    memory's line."""
    done = _git(root, "log", "-p", "--no-color", "--no-ext-diff", "--format=%x00%h",
                "HEAD", "--not", f"--remotes={remote}", "--", ".")  # fmt: skip
    if done.returncode != 0:
        return []
    found: list[str] = []
    commit, name = "", ""
    for line in done.stdout.split(b"\n"):
        if line.startswith(b"\0"):
            commit = line[1:].decode("ascii", "replace")
        elif line.startswith(b"+++ "):
            name = line[6:].decode("utf-8", "replace") if line.startswith(b"+++ b/") else ""
        elif line.startswith(b"+") and _is_secret_line(line[1:], name):
            entry = f"{commit} {name}"
            if entry not in found:
                found.append(entry)
    return found
