"""`memdir --help` and the lifecycle commands load no heavy module (numpy, faiss, tantivy, psycopg, …)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import T0, clean_env

from memdir.archive_format.memdir import Memdir

HEAVY = (
    "numpy",
    "faiss",
    "tantivy",
    "tokenizers",
    "mcp",
    "safetensors",
    "torch",
    "psycopg",
    "pgvector",
)

RUN_MAIN = (
    "import sys; sys.argv = ['memdir', *{args!r}]; "
    "from memdir.cli.main import main; raise SystemExit(main())"
)


def imported_modules(*args: str, cwd: Path) -> tuple[int, set[str]]:
    """Run the CLI in a fresh interpreter under -X importtime: its exit code and every module."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", RUN_MAIN.format(args=list(args))],
        cwd=cwd,
        env=clean_env(MEMDIR_NOW=T0),
        capture_output=True,
        text=True,
        timeout=60,
    )
    modules = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                modules.add(name)
    return done.returncode, modules


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(name for name in modules if name.split(".")[0] in HEAVY)


def test_help_loads_no_heavy_module(tmp_path: Path) -> None:
    code, modules = imported_modules("--help", cwd=tmp_path)
    assert code == 0
    assert {"memdir.cli.main", "typer", "json"} <= modules, "the import log is read correctly"
    assert heavy_in(modules) == []


@pytest.mark.parametrize(
    "args",
    [
        ("teach", "cold start check"),
        ("infer", "a cold guess", "--ttl", "1d"),
        ("list",),
        ("verify",),
    ],
    ids=["teach", "infer", "list", "verify"],
)
def test_lifecycle_commands_load_no_heavy_module(md: Memdir, args: tuple[str, ...]) -> None:
    code, modules = imported_modules("--dir", str(md.root), *args, cwd=md.root)
    assert code == 0
    assert "memdir.archive_format.lifecycle" in modules
    assert heavy_in(modules) == []


RUN_LAUNCH = (
    "import sys; sys.argv = ['memdir', *{args!r}]; from memdir.cli.launch import run; run()"
)


def test_the_client_of_a_running_service_loads_no_heavy_module_and_not_the_cli(
    hashed: Memdir, tmp_path: Path
) -> None:
    from memdir.archive_format import lifecycle
    from memdir.cli.service import socket_path

    from conftest import MEMDIR_BIN, T0_DT  # isort: skip

    lifecycle.teach(hashed, "cold clients ask the warm service", T0_DT)
    log = tmp_path / "serve.log"
    service = subprocess.Popen(
        [str(MEMDIR_BIN), "--dir", str(hashed.root), "serve", "--no-watch", "--log", str(log)],
        env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not (log.exists() and "serving " in log.read_text()):
            assert service.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.02)
        assert socket_path(hashed.cache_dir).exists()
        for args in (("recall", "warm service"), ("search", "warm"), ("context", "warm service")):
            done = subprocess.run(
                [sys.executable, "-X", "importtime", "-c",
                 RUN_LAUNCH.format(args=["--dir", str(hashed.root), *args])],
                cwd=tmp_path, env=clean_env(MEMDIR_NOW=T0), capture_output=True, text=True,
                timeout=60,
            )  # fmt: skip
            modules = {
                line.rsplit("|", 1)[1].strip()
                for line in done.stderr.splitlines()
                if line.startswith("import time:") and "|" in line
            }
            assert done.returncode == 0 and "warm" in done.stdout, done.stderr[-2000:]
            assert "memdir.cli.service" in modules, "the import log is read correctly"
            assert heavy_in(modules) == []
            assert not {"typer", "yaml", "memdir.cli.main"} & modules, "answered by the service"
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=30)
