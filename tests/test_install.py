"""The install paths a newcomer takes: a wheel that builds without setuptools warnings, the
demo's headline query grounded by the example memdir, and the README saying how `memdir` gets
on PATH after `make demo`."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from conftest import clean_env

ROOT = Path(__file__).parent.parent


def test_the_wheel_builds_without_warnings(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr
    assert "Warning" not in output and "would be ignored" not in output, output
    import zipfile

    (wheel,) = tmp_path.glob("memdir-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "memdir/archive_format/schemas/memory.schema.json" in names


def test_the_demo_headline_query_is_grounded(tmp_path: Path) -> None:
    """The query examples/demo.sh ends with, on a copy of examples/memdir, at the demo's date
    (with MiniLM, as `make demo` installs it)."""
    import shutil

    import pytest

    from memdir.indexers.embedding import find_model_dir

    if find_model_dir() is None:
        pytest.skip("all-MiniLM-L6-v2 not installed: the demo runs with it")

    script = (ROOT / "examples" / "demo.sh").read_text()
    now = re.search(r"MEMDIR_NOW=(\S+)", script)
    recall = [line for line in script.splitlines() if line.startswith('run "$memdir" recall ')]
    assert now and len(recall) == 1
    args = shlex.split(recall[0])[2:]
    memory = tmp_path / "memory"
    shutil.copytree(ROOT / "examples" / "memdir", memory)
    done = subprocess.run(
        [str(Path(sys.executable).with_name("memdir")), *args, "--no-record", "--json"],
        env=clean_env(MEMDIR=str(memory), MEMDIR_NOW=now[1], MEMDIR_NO_SERVICE="1"),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    import json

    assert json.loads(done.stdout)["verdict"] == "GROUNDED"


def test_the_readme_says_how_to_get_memdir_on_path_after_make_demo() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    head = text.split("## ", 1)[0]  # before the first section: right under `make demo`
    assert "source .venv/bin/activate" in head and ".venv/bin:$PATH" in head
