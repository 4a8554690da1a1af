"""A `.memdir` that is a plain file (a stray copy, a sync gone wrong) is not the cache:
commands that need the cache name the problem and the remedy in one line, nothing stored is
touched, and `memdir index --rebuild` moves the file aside — kept, inside the new cache — and
builds the cache again."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from conftest import T0_DT

from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import Memdir
from memdir.cli.main import main

NOW = "2026-05-02T09:00:00Z"


def run(root: Path, *args: str) -> int:
    return main(["--dir", str(root), "--now", NOW, *args])


def canonical(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".memdir" not in p.parts}  # fmt: skip


@pytest.mark.parametrize("content", [b"", b"not a directory\n", bytes(range(256))])
def test_a_memdir_whose_cache_is_a_file_is_recovered_by_index_rebuild(
    hashed: Memdir, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    root = hashed.root
    taught = lifecycle.teach(hashed, "I take my coffee black", T0_DT).id
    assert run(root, "index") == 0
    shutil.rmtree(hashed.cache_dir)
    hashed.cache_dir.write_bytes(content)
    before = canonical(root)
    capsys.readouterr()
    for args in (["search", "coffee"], ["recall", "coffee"], ["teach", "I like tea"]):
        assert run(root, *args) == 6, args
        err = capsys.readouterr().err
        assert ".memdir is not a directory" in err and "index --rebuild" in err, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 2
    assert canonical(root) == before, "nothing stored was touched"
    assert run(root, "list") == 0 and taught in capsys.readouterr().out

    assert run(root, "index", "--rebuild") == 0
    err = capsys.readouterr().err
    assert ".memdir was a file, not the cache directory: moved it to .memdir/stray-" in err
    kept = list(hashed.cache_dir.glob("stray-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == content, "moved aside, not deleted"
    assert str(kept[0].relative_to(root)) in err
    assert not [p for p in root.iterdir() if p.name.startswith(".memdir.")], "no leftover"
    assert ".memdir/" in (root / ".gitignore").read_text(), "git ignores what was moved"
    assert run(root, "search", "coffee") == 0 and taught in capsys.readouterr().out
    assert run(root, "teach", "I like tea") == 0
    assert run(root, "verify") == 0
    capsys.readouterr()
    assert run(root, "index", "--rebuild") == 0  # a directory again: nothing is moved
    assert "was a file" not in capsys.readouterr().err
    assert len(list(hashed.cache_dir.glob("stray-*"))) == 1
