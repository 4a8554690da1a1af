"""Secrets never leave in plain text: a secret turn lives in `journal/secret.jsonl`, which is
git-ignored, so that `memdir sync` never commits or pushes it (docs/FORMAT.md, section 8).

Writers put new secret turns (and their tombstones) there (journal.path_for). A memdir written
before this rule may hold secret turns in a committed journal file: `move_out` moves them to the
per-machine file (appended there first, then removed from the other file by an atomic rewrite,
so a crash in between leaves the turn twice, which counts once), and `memdir sync` runs it
before it commits. `tracked` finds what git would still carry: a secret turn in a tracked file
(verify fails on it), and `unpushed` a secret turn added by a commit not yet on the remote
(sync refuses to push it).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from . import journal, shelf
from .errors import FormatError
from .memdir import Memdir
from .rewrite import Lines, rewrite

# how a secret turn's line reads, whatever else it holds (keys are written in table order)
NEEDLE = b'"secrecy":"secret"'


def _is_secret_turn(raw: bytes, where: str) -> bool:
    if NEEDLE not in raw:
        return False
    try:
        data = shelf.decode_line(raw, where)
    except FormatError:
        return True  # a malformed line that names the secrecy may still hold the text
    return data.get("kind") == "turn" and data.get("secrecy") == "secret"


def move_out(memdir: Memdir) -> int:
    """Move every secret turn of a committed journal file to journal/secret.jsonl (caller holds
    the writer lock); returns how many lines moved."""
    target = journal.secret_path(memdir)
    moved = 0
    for path in journal.journal_files(memdir):
        if path == target:
            continue
        old = Lines.read(path)  # a torn tail is kept as it is (the next writer quarantines it)
        secret = {
            line for n, line in enumerate(old.lines, 1) if _is_secret_turn(line[:-1], f"{path}:{n}")
        }
        if not secret:
            continue
        shelf.append(target, [line for line in old.lines if line in secret], memdir.quarantine_dir)
        rewrite(memdir, old, [b"" if line in secret else line for line in old.lines])
        moved += sum(line in secret for line in old.lines)
    return moved


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)


def tracked(memdir: Memdir) -> list[str]:
    """`FILE:LINE` of every secret turn in a file git tracks (empty outside git)."""
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
        if NEEDLE not in blob:
            continue
        for number, raw in enumerate(blob.split(b"\n"), start=1):
            if _is_secret_turn(raw, f"{name}:{number}"):
                found.append(f"{name}:{number}")
    return found


def unpushed(root: Path, remote: str) -> list[str]:
    """`COMMIT FILE` for every commit not yet on `remote` that adds a secret turn's line."""
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
        elif line.startswith(b"+") and _is_secret_turn(line[1:], name):
            entry = f"{commit} {name}"
            if entry not in found:
                found.append(entry)
    return found
