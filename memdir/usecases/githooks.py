"""The git post-merge hook that `memdir init` and `memdir sync` install where the memdir is in a
git repository: after a plain `git pull` or `git merge` it runs `memdir sync --local`, which
re-applies the forgets the merge may have undone (a clone that still had a forgotten memory's
line brings its text back next to the tombstone), drops duplicated lines and re-indexes.

A hook the user wrote is never replaced: memdir's hook carries a marker line, and any other
`post-merge` is left alone with a warning that names what to add to it. Every memdir command
re-applies pending forgets anyway (tombstones.catch_up); the hook makes the files clean right
after the merge, before anything reads them.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
from pathlib import Path

from memdir.archive_format import atomic
from memdir.archive_format.history import git, in_git

log = logging.getLogger("memdir")

MARKER = "# memdir post-merge hook (installed by memdir init / memdir sync)"


def hook_text(root: Path, top: Path) -> str:
    """The hook: `memdir sync --local` for the memdir at `root` (relative to the repository's
    top, so the clone may move), with this installation's Python, else `memdir` on PATH."""
    relative = os.path.relpath(root, top)
    python = shlex.quote(sys.executable)
    return "\n".join(
        [
            "#!/bin/sh",
            MARKER,
            "# After a plain `git pull` or `git merge`: re-apply the forgets the merge may have",
            "# undone, drop duplicated lines, commit that and re-index (docs/FORMAT.md, Sync).",
            '[ -n "$MEMDIR_SYNCING" ] && exit 0  # inside `memdir sync`, which does this itself',
            'cd "$(git rev-parse --show-toplevel)" || exit 0',
            f"memdir_dir={shlex.quote(relative)}",
            f"if [ -x {python} ]; then",
            f'  exec {python} -m memdir --dir "$memdir_dir" sync --local',
            "fi",
            'exec memdir --dir "$memdir_dir" sync --local',
            "",
        ]
    )


def hook_path(root: Path) -> Path | None:
    """Where git looks for the post-merge hook of the repository holding `root` (honouring
    core.hooksPath and worktrees); None outside a git repository."""
    if not in_git(root):
        return None
    done = git(root, "rev-parse", "--path-format=absolute", "--git-path", "hooks/post-merge")
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return Path(done.stdout.strip())


def install(root: Path) -> Path | None:
    """Install or refresh memdir's post-merge hook; returns its path when it is memdir's (None
    outside git, or when the user's own hook is there: it is kept, with a warning)."""
    path = hook_path(root)
    if path is None:
        return None
    top = Path(git(root, "rev-parse", "--show-toplevel").stdout.strip() or root)
    wanted = hook_text(root.resolve(), top.resolve())
    try:
        present = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        present = None
    except OSError as error:
        log.warning("could not read the git hook %s: %s", path, error.strerror or error)
        return None
    if present is not None and MARKER not in present:
        log.warning(
            "%s is not memdir's; after a plain `git pull` add `memdir sync --local` to it "
            "(or run `memdir sync`) so that forgets a merge undid are re-applied",
            path,
        )
        return None
    if present != wanted:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(path, wanted)
    if not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path
