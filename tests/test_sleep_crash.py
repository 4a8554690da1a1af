"""A sleep killed at any point leaves a memdir that `verify` passes, and the next sleep
finishes the work once: real SIGKILLs, injected before each canonical write of a real run
(each shelf append, each temp-then-rename)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import T0_DT, clean_env, shelf_lines

from benchmarks.attack import KILLER
from memdir.archive_format import lifecycle
from memdir.archive_format.clock import format_time
from memdir.archive_format.memdir import Memdir
from memdir.cli.main import main

NOW = format_time(T0_DT + timedelta(days=10))


def run(root: Path, *args: str, now: str = NOW) -> int:
    return main(["--dir", str(root), "--now", now, *args])


def killed_sleep(root: Path, point: int) -> subprocess.CompletedProcess[str]:
    """`memdir sleep` in a process of its own (the attack benchmark's KILLER script) that counts the
    canonical writes (shelf appends and atomic renames) and at write number `point` (0: never)
    SIGKILLs itself, as `kill -9` or the OOM killer would, before that write happens."""
    return subprocess.run([sys.executable, str(KILLER), str(root), str(point), NOW],
                          capture_output=True, text=True, timeout=300,
                          env=clean_env(MEMDIR_NO_SERVICE="1"))  # fmt: skip


@pytest.fixture
def sleepy(hashed: Memdir) -> Memdir:
    """Work for every step of a sleep: closed groups of turns to dream (one with a private
    turn), an inference past its TTL, memories close enough to link."""
    for session, texts in {
        "s1": ["I started learning the cello this spring", "My teacher says my bowing improved"],
        "s2": ["We adopted a grey cat called Pixel", "Pixel sleeps on the cello case"],
    }.items():
        for minute, text in enumerate(texts):
            at = format_time(T0_DT + timedelta(minutes=minute))
            assert run(hashed.root, "journal", "add", "--role", "user", "--session", session,
                       text, now=at) == 0  # fmt: skip
    assert run(hashed.root, "journal", "add", "--role", "user", "--session", "s2",
               "--visibility", "private", "my cat's vet bill was huge",
               now=format_time(T0_DT + timedelta(minutes=3))) == 0  # fmt: skip
    lifecycle.infer(hashed, "The user may want a cello lesson reminder", T0_DT,
                    ttl=timedelta(days=2))  # fmt: skip
    lifecycle.teach(hashed, "I practise the cello every evening", T0_DT)
    lifecycle.teach(hashed, "I practise the cello every single evening", T0_DT)
    return hashed


def digests(root: Path) -> list[dict]:
    path = root / "journal" / "digests.jsonl"
    return [json.loads(raw) for raw in path.read_text().splitlines()] if path.exists() else []


def outcome(root: Path) -> tuple[list, list, list]:
    """What a sleep leaves in the canonical files (ids are content-derived, so two runs that
    did the same work leave the same lines)."""
    lines = shelf_lines(root)
    derived = sorted(line["id"] for line in lines if line.get("kind") == "memory"
                     and line.get("source") in ("derived", "inference"))  # fmt: skip
    digested = sorted(tuple(sorted(d["turns"])) for d in digests(root))
    events = sorted((line.get("op"), line.get("id"), line.get("to")) for line in lines
                    if line.get("kind") == "event")  # fmt: skip
    return derived, digested, events


def test_a_sleep_killed_at_any_write_leaves_verify_passing_and_the_next_sleep_completes_it(
    sleepy: Memdir, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    pristine = tmp_path / "pristine"
    shutil.copytree(sleepy.root, pristine)
    whole = killed_sleep(sleepy.root, 0)
    assert whole.returncode == 0, whole.stderr
    writes = int(whole.stdout.split()[-1])
    expected = outcome(sleepy.root)
    assert expected[1] and expected[0], "the run dreamt something to be killed in"
    assert any(op == "expire" for op, *_ in expected[2]), "and expired an inference"
    assert run(sleepy.root, "verify") == 0
    capsys.readouterr()
    # every write point (a long run: an even spread of them, the dream's two always included)
    points = list(range(1, writes + 1))
    if len(points) > 14:
        points = sorted(set(points[:: len(points) // 12] + points[:6] + [writes]))
    interrupted = 0
    for point in points:
        victim = tmp_path / f"killed-{point}"
        shutil.copytree(pristine, victim)
        died = killed_sleep(victim, point)
        assert died.returncode == -9, (point, died.stdout, died.stderr)
        status = run(victim, "verify")
        said = capsys.readouterr()
        assert status == 0, (point, said.out, said.err)
        interrupted += "a dream stopped before writing its digest" in said.out + said.err
        assert run(victim, "sleep") == 0, point
        capsys.readouterr()
        assert outcome(victim) == expected, f"killed at write {point}"
        assert run(victim, "verify") == 0, point
        said = capsys.readouterr()
        assert "a dream stopped" not in said.out + said.err, point
    assert interrupted >= 1, "no kill fell between a dream's summaries and its digest"
