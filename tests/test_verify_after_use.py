"""verify and restore after ordinary use: forgetting an inference that had expired (sleep's
journal entry names its id) leaves no generated document naming it, and verify's printed fix
works in one run."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import pytest

from memdir.archive_format import lifecycle
from memdir.archive_format.clock import parse_time
from memdir.archive_format.errors import ExitStatus
from memdir.archive_format.memdir import Memdir


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from memdir.cli.main import main

    logging.getLogger("memdir").handlers.clear()  # log to this test's captured stderr
    capsys.readouterr()
    code = main(list(argv))
    done = capsys.readouterr()
    return code, done.out + done.err


def test_forgetting_an_expired_inference_keeps_verify_and_restore_clean(
    capsys: pytest.CaptureFixture[str], hashed: Memdir, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    root = str(hashed.root)
    guess = lifecycle.infer(hashed, "Sam seems to like jazz", parse_time("2026-05-01T09:00:00Z"),
                            ttl=timedelta(days=1)).id  # fmt: skip
    assert run(capsys, "--dir", root, "--now", "2026-05-03T09:00:00Z", "sleep")[0] == 0
    entries = list((hashed.root / "journal" / "entries").glob("*-sleep-*.md"))
    assert any(guess in path.read_text() for path in entries)  # the entry names it
    assert run(capsys, "--dir", root, "--now", "2026-05-03T10:00:00Z", "forget", guess)[0] == 0
    code, out = run(capsys, "--dir", root, "--now", "2026-05-03T10:00:00Z", "verify")
    assert code == ExitStatus.OK, out
    for path in (hashed.root / "documents").glob("*.md"):
        assert guess not in path.read_text(), path
    assert run(capsys, "--dir", root, "--now", "2026-05-03T11:00:00Z", "sleep")[0] == 0
    assert run(capsys, "--dir", root, "--now", "2026-05-03T11:00:00Z", "verify")[0] == 0
    archive = tmp_path / "memory.tar.gz"
    assert run(capsys, "--dir", root, "export", "--out", str(archive))[0] == 0
    code, out = run(capsys, "restore", str(archive), str(tmp_path / "back"))
    assert code == ExitStatus.OK, out


def test_verify_s_printed_fix_works_in_one_run(
    capsys: pytest.CaptureFixture[str], hashed: Memdir
) -> None:
    root = str(hashed.root)
    guess = lifecycle.infer(hashed, "Sam seems to like jazz", parse_time("2026-05-01T09:00:00Z"),
                            ttl=timedelta(days=1)).id  # fmt: skip
    assert run(capsys, "--dir", root, "--now", "2026-05-03T09:00:00Z", "sleep")[0] == 0
    assert run(capsys, "--dir", root, "--now", "2026-05-03T10:00:00Z", "forget", guess)[0] == 0
    # a wake document written before this fix, still naming the id
    wake = hashed.root / "documents" / "wake.md"
    wake.write_text(wake.read_text() + f"\n- 1 inference expired unconfirmed: {guess}\n")
    code, out = run(capsys, "--dir", root, "--now", "2026-05-03T10:00:00Z", "verify")
    assert code == ExitStatus.PROBLEMS and "`memdir sleep`" in out
    assert run(capsys, "--dir", root, "--now", "2026-05-03T11:00:00Z", "sleep")[0] == 0
    code, out = run(capsys, "--dir", root, "--now", "2026-05-03T11:00:00Z", "verify")
    assert code == ExitStatus.OK, out
