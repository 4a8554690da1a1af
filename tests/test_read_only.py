"""A read-only memdir (a backup on a read-only mount) answers search and recall from its index
as it is, writes nothing, and says when that index is behind the shelves or a recall could not
be recorded. As root, chmod does not stop writes, so the memdir is bind-mounted read-only in a
private mount namespace (`unshare -m`): the kernel refuses every write, as for a real backup."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import T0_DT, clean_env

from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import Memdir
from memdir.cli.main import main

NOW = "2026-05-02T09:00:00Z"

# Runs each command line (argv[2], JSON) on the memdir argv[1] in one process, through the
# CLI's main(), and prints [(status, stdout, stderr), ...] as JSON.
RUNNER = """
import contextlib, io, json, os, sys, tempfile
from memdir.cli.main import main
root, commands, done = sys.argv[1], json.loads(sys.argv[2]), []
saved = os.dup(2)
for args in commands:
    out = io.StringIO()
    with tempfile.TemporaryFile() as err:  # the log writes to fd 2 itself
        os.dup2(err.fileno(), 2)
        with contextlib.redirect_stdout(out):
            status = main(["--dir", root, "--now", sys.argv[3], *args])
        sys.stderr.flush()
        os.dup2(saved, 2)
        err.seek(0)
        done.append((status, out.getvalue(), err.read().decode()))
print(json.dumps(done))
"""


def can_mount_read_only() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


def run_read_only(root: Path, view: Path, commands: list[list[str]]) -> list[tuple[int, str, str]]:
    """The commands on `root` seen read-only at `view` (the same path in every output)."""
    view.mkdir(exist_ok=True)
    runner = [sys.executable, "-c", RUNNER, str(view), json.dumps(commands), NOW]
    environment = clean_env(MEMDIR_NO_SERVICE="1")
    if os.geteuid() == 0:
        if not can_mount_read_only():
            pytest.skip("root without a mount namespace: nothing here can make a memdir read-only")
        script = ('mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" && shift 2 && '
                  'exec "$@"')  # fmt: skip
        done = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(root), str(view),
                               *runner], capture_output=True, text=True, env=environment,
                              timeout=300)  # fmt: skip
    else:
        view.rmdir()
        view.symlink_to(root)
        paths = [root, *root.rglob("*")]
        modes = {path: path.stat().st_mode for path in paths}
        for path in paths:
            path.chmod(modes[path] & ~0o222)
        try:
            done = subprocess.run(runner, capture_output=True, text=True, env=environment,
                                  timeout=300)  # fmt: skip
        finally:
            for path in paths:
                path.chmod(modes[path])
    assert done.returncode == 0, done.stderr
    return [tuple(result) for result in json.loads(done.stdout)]  # type: ignore[misc]


def tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}  # fmt: skip


def writable_run(root: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = main(["--dir", str(root), "--now", NOW, *args])
    return status, capsys.readouterr().out


@pytest.fixture
def backup(hashed: Memdir, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Memdir:
    for text in ("I take my coffee black", "My sister lives in Lisbon", "Tea after lunch"):
        lifecycle.teach(hashed, text, T0_DT)
    lifecycle.teach(hashed, "My coffee debt to Ana is private", T0_DT, visibility="private")
    assert main(["--dir", str(hashed.root), "--now", NOW, "index"]) == 0
    capsys.readouterr()
    return hashed


def test_a_read_only_memdir_answers_search_and_recall_as_the_writable_one_does(
    backup: Memdir, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    view = tmp_path / "view"
    commands = [
        ["search", "coffee", "--json"],
        ["recall", "coffee", "--no-record", "--json"],
        ["recall", "Lisbon sister"],
        ["similar", "tea", "--json"],
        ["list", "--json"],
        ["wake", "--json"],
    ]
    before = tree(backup.root)
    done = run_read_only(backup.root, view, commands)
    assert tree(backup.root) == before, "nothing written"
    for args, (status, _, err) in zip(commands, done, strict=True):
        assert status == 0, (args, err)
        assert "Traceback" not in err and "error" not in err, (args, err)
    # the same answers as the writable memdir gives (its own path swapped in)
    for number in (0, 1, 3):
        status, expected = writable_run(backup.root, *commands[number], capsys=capsys)
        answered = json.loads(done[number][1].replace(str(view), str(backup.root)))
        if commands[number][0] == "recall":
            ids = [row["id"] for row in answered["results"]]
            assert ids == [row["id"] for row in json.loads(expected)["results"]]
        else:
            assert answered == json.loads(expected), commands[number]
    shown = [row["text"] for row in json.loads(done[0][1])]
    assert "I take my coffee black" in shown and not any("private" in t for t in shown)
    status, out, err = done[2]
    assert "My sister lives in Lisbon" in out
    assert "read-only; this recall was not recorded" in err


def test_a_read_only_memdir_whose_index_is_behind_says_so(backup: Memdir, tmp_path: Path) -> None:
    lifecycle.teach(backup, "I bought a new coffee grinder", T0_DT)  # after the last index
    done = run_read_only(backup.root, tmp_path / "view", [["search", "coffee", "--json"]])
    status, out, err = done[0]
    assert status == 0 and "I take my coffee black" in out
    assert err.count("read-only: answering from its index as last built") == 1, err
