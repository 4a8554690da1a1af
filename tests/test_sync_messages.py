"""What `memdir sync` tells a user around git, tried as written: the README's laptop recipe
leaves an upstream (a plain `git pull` works), the conflict hint is a pull that runs, and
`sync --no-push` without a remote commits and succeeds. Real repositories, the real script."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

from clones import configure_git, conflicts, git, hub_and_clones, new_memdir_repo
from conftest import memdir_cli

ROOT = Path(__file__).parent.parent
NOW = "2026-05-01T09:00:00Z"


def test_the_conflict_hint_is_a_pull_that_runs_as_written(tmp_path: Path) -> None:
    a, b = hub_and_clones(tmp_path)
    git(b, "config", "--unset-all", "pull.rebase", check=False)  # git's default: ask
    for clone, text in ((a, "mine\n"), (b, "theirs\n")):
        (clone / "NOTES.txt").write_text(text)
        git(clone, "add", "NOTES.txt")
        git(clone, "commit", "-q", "-m", "notes")
    assert memdir_cli("--dir", str(a), "sync", now=NOW).code == 0
    done = memdir_cli("--dir", str(b), "sync", now=NOW)
    assert done.code != 0 and "Traceback" not in done.err
    hint = re.search(r"hint: merge by hand: `([^`]+)`", done.err)
    assert hint, done.err
    assert hint[1] == "git pull --no-rebase origin main"  # this clone's remote and branch
    ran = subprocess.run(shlex.split(hint[1]), cwd=b, capture_output=True, text=True)
    # it merges (and stops at the conflict the user is to resolve), not "fatal: Need to specify
    # how to reconcile divergent branches"
    assert "fatal" not in ran.stderr, ran.stderr
    assert conflicts(b) == ["NOTES.txt"]


def test_no_push_without_a_remote_commits_and_succeeds(tmp_path: Path) -> None:
    local = new_memdir_repo(tmp_path / "local")
    assert memdir_cli("--dir", str(local), "teach", "a local thing", now=NOW).code == 0
    done = memdir_cli("--dir", str(local), "sync", "--no-push", now=NOW)
    assert done.code == 0, done
    assert "committed here only" in done.out and "not pushed" in done.out
    assert git(local, "status", "--porcelain").stdout == ""
    assert "a local thing" in git(local, "show", "HEAD:shelves/memories.jsonl").stdout
    pushing = memdir_cli("--dir", str(local), "sync", now=NOW)  # asked to push: still an error
    assert pushing.code == 9 and "--no-push" in pushing.err


def test_the_readme_laptop_recipe_leaves_a_plain_git_pull_working(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    recipe = readme.split("# laptop: create it and publish it", 1)[1].split("# desktop:", 1)[0]
    upstream = next(line.split("#")[0].strip() for line in recipe.splitlines()
                    if line.startswith("git branch"))  # fmt: skip
    hub = tmp_path / "hub.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(hub)], check=True)
    laptop = tmp_path / "memory"
    assert memdir_cli("init", str(laptop), now=NOW).code == 0
    git(laptop, "init", "-q", "-b", "main")
    configure_git(laptop)
    git(laptop, "config", "pull.rebase", "false")
    git(laptop, "remote", "add", "origin", str(hub))
    assert memdir_cli("--dir", str(laptop), "teach", "I take my coffee black", now=NOW).code == 0
    assert memdir_cli("--dir", str(laptop), "sync", now=NOW).code == 0
    subprocess.run(shlex.split(upstream), cwd=laptop, check=True, capture_output=True)
    pulled = subprocess.run(["git", "pull"], cwd=laptop, capture_output=True, text=True)
    assert pulled.returncode == 0, pulled.stderr
