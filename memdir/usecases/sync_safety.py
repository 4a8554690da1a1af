"""What `memdir sync` will not take from a clone (docs/FORMAT.md, "Sync" and "A clone is data"):

- a merge that deletes lines: shelves only grow (forget leaves a tombstone or a redacted copy
  with the same id), so every memory, tombstone and event id this clone held before the merge
  must still be there after it. A clone that drops a `reject` event would otherwise bring the
  rejected inference back here; the merge is undone and sync stops with the ids it would lose;
- a shelf git takes for binary: one raw NUL byte (memdir itself never writes one: JSON escapes
  control characters) makes git refuse to merge the file ("Cannot merge binary files"), and every
  later sync would fail. Such conflicts in `*.jsonl` files are merged here as git's union driver
  would, line by line, with raw NUL bytes written as the JSON escape `\\u0000`;
- a git operation that never ends: each runs with a timeout (`git_timeout`, default
  GIT_TIMEOUT seconds, `$MEMDIR_GIT_TIMEOUT` overrides it), after which git and whatever it
  started (ssh, a remote helper) are killed and sync stops with a one-line error.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from memdir.archive_format.errors import MemdirError
from memdir.archive_format.memdir import Memdir
from memdir.words import counted

GIT_TIMEOUT = 120.0  # seconds for one git operation (a fetch over a slow link fits)
TIMEOUT_ENV = "MEMDIR_GIT_TIMEOUT"
# Set for the git merge `memdir sync` runs: git starts the post-merge hook even for
# `merge --no-commit` when it fast-forwards, and the hook's `memdir sync --local` would wait for
# the lock this sync holds; sync does what the hook would, so the hook and `sync --local` skip.
SYNCING_ENV = "MEMDIR_SYNCING"
NUL, ESCAPED_NUL = b"\x00", b"\\u0000"
KEPT_KINDS = ("memory", "tombstone", "event")  # the lines a merge must never delete


def git_timeout(environ: Mapping[str, str] = os.environ) -> float:
    """$MEMDIR_GIT_TIMEOUT seconds when it is a number above 0, else GIT_TIMEOUT."""
    try:
        seconds = float(environ.get(TIMEOUT_ENV, ""))
    except ValueError:
        return GIT_TIMEOUT
    return seconds if seconds > 0 else GIT_TIMEOUT


def git_timed(
    root: Path, *args: str, timeout: float | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run git in `root` like history.git, but in its own process group, killed with everything
    it started once `timeout` seconds pass (a MemdirError then). No prompt ever waits for a
    terminal: GIT_TERMINAL_PROMPT=0 and ssh in batch mode. `env` adds variables."""
    limit = git_timeout() if timeout is None else timeout
    env = {**os.environ, **(env or {}), "GIT_TERMINAL_PROMPT": "0"}
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    process = subprocess.Popen(
        ["git", "-C", str(root), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=env,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.communicate()
        raise MemdirError(
            f"git {args[0]} did not finish within {limit:g} s and was stopped",
            hint=f"check the remote (`git {args[0]}` by hand); ${TIMEOUT_ENV} sets the limit",
        ) from None
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def kept_ids(memdir: Memdir) -> dict[str, str]:
    """Every memory, tombstone and event id in the shelves → what it is (for a message)."""
    found: dict[str, str] = {}
    for path in memdir.shelves():
        for raw in path.read_bytes().replace(NUL, ESCAPED_NUL).split(b"\n"):
            try:
                line = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if not isinstance(line, dict) or line.get("kind") not in KEPT_KINDS:
                continue
            line_id = line.get("id")
            if isinstance(line_id, str):
                what = "memory" if line["kind"] == "tombstone" else str(line["kind"])
                if what == "event":
                    what = f"{line.get('op')} event about {line.get('target')}"
                found.setdefault(line_id, what)
    return found


def lost_lines(before: Mapping[str, str], after: Iterable[str]) -> list[str]:
    """'ID (what)' for each id held before a merge and gone after it."""
    present = set(after)
    return [f"{line_id} ({what})" for line_id, what in before.items() if line_id not in present]


def refuse_deletions(lost: list[str], remote: str) -> None:
    """Stop the sync: the merge (already undone by the caller) would have deleted lines."""
    shown = ", ".join(lost[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
    raise MemdirError(
        f"the merge with {remote} would delete {counted(len(lost), 'shelf line')}: {shown}; a clone "
        "cannot delete lines (a rejection or a forget would come undone), so nothing was merged",
        hint=f"find the commit on {remote} that removed them (`memdir verify --history` there) "
        "and revert it, then sync again",
    )


def escape_nul(data: bytes) -> bytes:
    """The same lines with each raw NUL byte as the JSON escape \\u0000: git then sees text."""
    return data.replace(NUL, ESCAPED_NUL)


def union(ours: bytes, theirs: bytes) -> bytes:
    """Our lines, then their lines we do not hold (each once, in order), NULs escaped: what the
    union driver keeps, except that a line is never dropped because one side deleted it."""
    kept: list[bytes] = []
    seen: set[bytes] = set()
    for raw in escape_nul(ours).splitlines() + escape_nul(theirs).splitlines():
        if raw.strip() and raw not in seen:
            seen.add(raw)
            kept.append(raw)
    return b"".join(raw + b"\n" for raw in kept)


def _stage(root: Path, stage: int, path: str) -> bytes:
    done = subprocess.run(["git", "-C", str(root), "show", f":{stage}:{path}"],
                          capture_output=True, check=False, timeout=git_timeout())  # fmt: skip
    return done.stdout if done.returncode == 0 else b""


def merge_text_conflicts(root: Path, conflicted: list[str]) -> list[str]:
    """Resolve the conflicts in `*.jsonl` files (git took them for binary: a NUL byte) by
    `union`, staged; returns the conflicted paths left (not memdir's to merge). The paths are
    as git prints them, relative to the top of the work tree."""
    top = Path(subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"],
                              capture_output=True, text=True, check=False).stdout.strip() or root)  # fmt: skip
    left = []
    for path in conflicted:
        if not path.endswith(".jsonl"):
            left.append(path)
            continue
        merged = union(_stage(top, 2, path), _stage(top, 3, path))
        (top / path).write_bytes(merged)
        subprocess.run(["git", "-C", str(top), "add", "--", path], check=True,
                       capture_output=True, timeout=git_timeout())  # fmt: skip
    return left


def escape_local_nul(memdir: Memdir) -> list[str]:
    """Escape raw NUL bytes in this clone's shelves and journal before they are committed, so
    that git keeps treating them as text; returns the files changed (relative paths)."""
    from memdir.archive_format.rewrite import Lines, rewrite

    changed = []
    for path in [*memdir.shelves(), *sorted((memdir.root / "journal").rglob("*.jsonl"))]:
        if NUL not in path.read_bytes():
            continue
        old = Lines.read(path)
        if rewrite(memdir, old, [escape_nul(line) for line in old.lines], escape_nul(old.tail)):
            changed.append(str(path.relative_to(memdir.root)))
    return changed
