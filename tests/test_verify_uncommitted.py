"""Plain `verify` in git notices a shelf line deleted since the last commit (issue 30, item 9):
a line the committed shelves hold that no shelf holds now is a problem, with the way back;
memdir's own rewrites (a forget's tombstone, dropped duplicates) keep every id and pass."""

from __future__ import annotations

import pytest
from clones import git, new_memdir_repo
from conftest import memdir_main

LATER = "2026-05-02T09:00:00Z"


def run(root, *args: str):
    return memdir_main("--dir", str(root), *args, now=LATER)


def test_verify_fails_on_an_uncommitted_deletion_and_passes_once_it_is_back(tmp_path) -> None:
    root = new_memdir_repo(tmp_path / "m")
    kept = run(root, "teach", "I drink my coffee black").out.strip()
    gone = run(root, "teach", "The spare key is with the neighbours").out.strip()
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "two teachings")
    assert run(root, "verify").code == 0
    shelf = root / "shelves" / "memories.jsonl"
    shelf.write_text("".join(line + "\n" for line in shelf.read_text().splitlines()
                             if gone not in line))  # fmt: skip
    done = run(root, "verify")
    assert done.code != 0 and "Traceback" not in done.err
    assert f"memory {gone} is gone since the last commit" in done.out + done.err
    assert kept not in done.out + done.err
    git(root, "checkout", "HEAD", "--", "shelves/memories.jsonl")
    assert run(root, "verify").code == 0


@pytest.mark.parametrize("operation", ["forget", "reject"])
def test_memdirs_own_rewrites_since_the_last_commit_pass(tmp_path, operation: str) -> None:
    root = new_memdir_repo(tmp_path / "m")
    taught = run(root, "infer", "The user seems to like jazz").out.strip()
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "an inference")
    args = (operation, taught) if operation == "forget" else (operation, taught, "--reason", "no")
    assert run(root, *args).code == 0
    assert run(root, "verify").code == 0
