"""`verify --history`: lines that git once had in a shelf and that are now gone untraced.

Shelves only grow, except for forget (the memory's line becomes a tombstone, events about it
are redacted but keep their ids) and merges that leave a duplicate out. So every id that was
ever in a committed shelf must still be in one: as the same line, a redacted copy, or a
tombstone. A removed `reject` event, for instance, is invisible to the plain `verify`.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import BadInputError
from .memdir import Memdir


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run git in `root` (never interactive, no pager), capturing its output."""
    return subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        check=False,
    )


def in_git(root: Path) -> bool:
    try:
        done = git(root, "rev-parse", "--is-inside-work-tree")
    except FileNotFoundError:
        return False
    return done.returncode == 0 and done.stdout.strip() == "true"


def _removed_lines(root: Path) -> Iterator[tuple[str, str, str]]:
    """(commit, shelf path, line) for every line a commit took out of a shelf (merges too)."""
    done = git(
        root,
        "log", "-p", "-m", "--no-color", "--no-ext-diff", "--no-renames", "--format=%x00%H",
        "--", "shelves/",
    )  # fmt: skip
    if done.returncode != 0:
        return  # no commit yet
    commit, path = "", ""
    for line in done.stdout.splitlines():
        if line.startswith("\0"):
            commit = line[1:]
        elif line.startswith("--- "):
            path = line[6:] if line.startswith("--- a/") else path
        elif line.startswith("-") and not line.startswith("---"):
            yield commit, path, line[1:]


def _present_ids(memdir: Memdir) -> set[str]:
    present: set[str] = set()
    for shelf_path in memdir.shelves():
        for raw in shelf_path.read_bytes().split(b"\n"):
            try:
                data = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if isinstance(data, dict) and isinstance(data.get("id"), str):
                present.add(data["id"])
    return present


def _what(data: dict[str, Any]) -> str:
    """A removed line named for a message: its kind, an event with its op and target."""
    if data.get("kind") == "event":
        return f"{data.get('op')} event about {data.get('target')}"
    return str(data.get("kind", "line"))


def uncommitted_deletions(memdir: Memdir) -> list[str]:
    """What plain `verify` reports in git: a line the last commit's shelves hold that no shelf
    holds now (deleted by hand or by a tool, not committed yet), one message each; memdir's own
    rewrites keep every id (a forget leaves the tombstone, a sealed memory moves to its shelf)."""
    if not in_git(memdir.root):
        return []
    done = git(memdir.root, "diff", "--no-color", "--no-ext-diff", "--no-renames", "HEAD", "--",
               "shelves/")  # fmt: skip
    if done.returncode != 0 or not done.stdout:
        return []  # no commit yet, or nothing changed
    present: set[str] | None = None
    found: dict[str, str] = {}
    path = ""
    for line in done.stdout.splitlines():
        if line.startswith("--- "):
            path = line[6:] if line.startswith("--- a/") else path
            continue
        if not line.startswith("-") or line.startswith("---"):
            continue
        try:
            data = json.loads(line[1:])
        except (ValueError, RecursionError):
            continue
        line_id = data.get("id") if isinstance(data, dict) else None
        if not isinstance(line_id, str) or line_id in found:
            continue
        present = _present_ids(memdir) if present is None else present
        if line_id in present:
            continue
        found[line_id] = (
            f"{path}: {_what(data)} {line_id} is gone since the last commit and not committed "
            "(`git diff HEAD -- shelves/` shows it; `git checkout HEAD -- FILE` brings it back)"
        )
    return list(found.values())


def gone_lines(memdir: Memdir) -> list[str]:
    """What `verify --history` reports: one message per line gone without a trace."""
    if not in_git(memdir.root):
        raise BadInputError(
            f"{memdir.root} is not in a git repository",
            hint="`verify --history` reads the shelves' git history; drop --history",
        )
    present = _present_ids(memdir)
    found: dict[str, str] = {}
    for commit, path, text in _removed_lines(memdir.root):
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            continue
        line_id = data.get("id") if isinstance(data, dict) else None
        if not isinstance(line_id, str) or line_id in present or line_id in found:
            continue
        found[line_id] = (
            f"{path}: {_what(data)} {line_id} was removed in commit {commit[:12]} without a tombstone"
        )
    return list(found.values())
