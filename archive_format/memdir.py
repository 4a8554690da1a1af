"""A memdir on disk: finding it, creating it, reading memdir.yaml, and where each file lives."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from . import gitrules
from .clock import format_time
from .errors import FormatError, NotAMemdirError
from .location import CACHE_NAME, CONFIG_NAME, is_memdir
from .location import MEMDIR_ENV as MEMDIR_ENV  # re-exported: callers find them here too
from .location import find_root as find_root
from .lock import WriterLock
from .paths import check_no_links
from .settings import INIT_KEYS, LOCAL_NAME, Settings, default_yaml, load_settings
from .state import parse_yaml, write_yaml
from .validate import load_schema, problems

FORMAT_VERSION = "1.1"  # 1.1: nonces in memory and event lines (docs/FORMAT.md, "Ids")
SUPPORTED_MAJOR = 1
log = logging.getLogger("memdir")


def read_config(path: Path) -> dict[str, Any]:
    """memdir.yaml, validated; an unknown major format version is refused."""
    try:
        text = path.read_text(encoding="utf-8")
        data = parse_yaml(text)  # libyaml's loader: memdir.yaml is read by every command
    except UnicodeDecodeError:
        raise FormatError(f"{path}: not UTF-8", hint="memdir.yaml must be UTF-8 YAML") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise FormatError(
            f"{path}: invalid YAML{where}", hint="fix the syntax; see docs/FORMAT.md"
        ) from None
    if not isinstance(data, dict):
        raise FormatError(f"{path}: expected a mapping", hint="see docs/FORMAT.md")
    if isinstance(data.get("format"), (int, float)):
        data["format"] = (
            f"{data['format']}" if "." in str(data["format"]) else f"{data['format']}.0"
        )
    found = problems(data, load_schema("config"))
    if found:
        raise FormatError(f"{path}: {found[0]}", hint="see docs/FORMAT.md for memdir.yaml")
    major = int(str(data["format"]).split(".")[0])
    if major != SUPPORTED_MAJOR:
        raise FormatError(
            f"{path}: format version {data['format']} is not supported (this memdir reads {SUPPORTED_MAJOR}.x)",
            hint="use a memdir release that supports it",
        )
    return data


class _Below:
    """A path below the memdir's root, as a read-only attribute of Memdir."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts

    def __get__(self, memdir: Memdir, owner: type | None = None) -> Path:
        return memdir.root.joinpath(*self.parts)


@dataclass(frozen=True)
class Memdir:
    """An opened memdir: its root, its configuration, and the paths of its files."""

    root: Path
    config: dict[str, Any]
    settings: Settings = field(default_factory=Settings)
    settings_problem: str | None = None  # a wrong setting, when opened leniently (verify, restore)

    shelves_dir = _Below("shelves")
    memory_shelf = _Below("shelves", "memories.jsonl")
    event_shelf = _Below("shelves", "events.jsonl")
    sealed_shelf = _Below("shelves", "sealed.jsonl")  # per machine, git-ignored (secrets.py)
    recall_shelf = _Below("shelves", "recalls.jsonl")
    journal_dir = _Below("journal")
    state_dir = _Below("state")
    documents_dir = _Below("documents")
    quarantine_dir = _Below("quarantine")
    cache_dir = _Below(CACHE_NAME)  # derived: indexes, caches, locks

    def shelves(self) -> list[Path]:
        """Every shelf file, in a stable order."""
        return sorted(self.shelves_dir.glob("*.jsonl"))

    def lock(self, timeout: float | None = None) -> WriterLock:
        """The writer lock itself. A write takes it through `tombstones.writing`, which also
        re-applies the tombstones a merge may have undone."""
        check_cache(self)
        return WriterLock(self.cache_dir / "lock", timeout)

    @classmethod
    def open(cls, root: Path, lenient: bool = False) -> Memdir:
        """Open a memdir; a wrong setting is a FormatError, or with `lenient` (for commands
        that inspect or rescue a memdir) a warning, and every setting takes its default."""
        config_path = root / CONFIG_NAME
        if not config_path.is_file():
            raise NotAMemdirError(
                f"{root} is not a memdir (no {CONFIG_NAME})",
                hint=f"create one with `memdir init {root}`",
            )
        check_no_links(root)
        config = read_config(config_path)
        try:
            settings, warnings = load_settings(
                config.get("settings"), str(config_path), *read_local(root)
            )
        except FormatError as error:
            if not lenient:
                raise
            log.warning(f"{error.message}; using the default settings")
            return cls(root.resolve(), config, Settings(), settings_problem=error.message)
        for warning in warnings:
            log.warning(warning)
        return cls(root.resolve(), config, settings)


STRAY_CACHE = "stray-"  # the name, inside the new cache, of a `.memdir` that was a file


def check_cache(memdir: Memdir) -> None:
    """A `.memdir` that is not a directory (a stray file) cannot hold the cache or the lock:
    name it and the remedy, rather than fail on a path below it."""
    cache = memdir.cache_dir
    if (cache.exists() or cache.is_symlink()) and not cache.is_dir():
        raise FormatError(
            f"{cache} is not a directory (it must hold the index cache and the locks)",
            hint="`memdir index --rebuild` moves it aside and builds the cache again",
        )


def move_stray_cache(memdir: Memdir, now: datetime) -> Path | None:
    """Move a `.memdir` that is not a directory into a new, empty cache directory, as
    `stray-TIME` — kept, not deleted (whatever it holds is the user's to look at; git ignores
    it there). Where it went, or None when `.memdir` is a directory or absent."""
    cache = memdir.cache_dir
    if not (cache.exists() or cache.is_symlink()) or cache.is_dir():
        return None
    stamp = format_time(now).replace(":", "").replace("-", "")
    moving = cache.with_name(f"{CACHE_NAME}.{STRAY_CACHE}{stamp}.{uuid.uuid4().hex[:8]}")
    cache.rename(moving)
    cache.mkdir()
    target = cache / f"{STRAY_CACHE}{stamp}"
    moving.rename(target)
    return target


def read_local(root: Path) -> tuple[Any, str]:
    """The per-machine file's `settings:` (None when there is none) and its path, for
    load_settings: the settings a clone may not choose (settings.LOCAL_ONLY)."""
    from .state import read_yaml

    path = root / LOCAL_NAME
    data = read_yaml(path, None)
    if data is not None and not isinstance(data, dict):
        raise FormatError(
            f"{path}: expected a mapping", hint="e.g. settings: {distill: {command: …}}"
        )
    return (data or {}).get("settings"), str(path)


def init(root: Path, now: datetime, settings: dict[str, Any] | None = None) -> tuple[Memdir, bool]:
    """Create a memdir (or fill in what is missing); returns it and whether it is new.

    A new memdir.yaml gets the usual defaults with `settings` (top-level keys) over them.
    Existing files are never overwritten; memdir's lines are added to an existing
    `.gitattributes` and `.gitignore`.
    """
    root = root.expanduser()
    created = not is_memdir(root)
    for sub in ("shelves", "journal", "state", "documents"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for shelf in ("memories.jsonl", "events.jsonl"):
        (root / "shelves" / shelf).touch(exist_ok=True)
    gitrules.merge(root)  # added to existing .gitattributes/.gitignore, the rest kept
    if created:
        config = {
            "format": FORMAT_VERSION,
            "id": uuid.uuid4().hex,
            "created": format_time(now),
            "settings": {**default_yaml(keys=INIT_KEYS), **(settings or {})},
        }
        write_yaml(root / CONFIG_NAME, config)
    return Memdir.open(root), created


def set_local_settings(root: Path, values: dict[str, Any]) -> None:
    """Set per-machine settings ({dotted settings.LOCAL_ONLY key: value}) in memdir.local.yaml,
    keeping what it already holds: for a program that configures a memdir on this machine (a
    benchmark, the safety lab, a test)."""
    from .settings import LOCAL_ONLY, _overlay

    wrong = sorted(set(values) - set(LOCAL_ONLY))
    if wrong:
        raise ValueError(f"not per-machine settings: {', '.join(wrong)}")
    local, _ = read_local(root)
    write_yaml(root / LOCAL_NAME, {"settings": _overlay(local or {}, values)})


def localize_settings(root: Path) -> list[str]:
    """Move the per-machine settings (settings.LOCAL_ONLY) that memdir.yaml sets into the
    git-ignored memdir.local.yaml, where they take effect; returns the keys moved. The user runs
    it (`memdir init` in an existing memdir), having checked them: a value a clone brought would
    run from then on. A key the local file already sets keeps the local value."""
    from .settings import _overlay, split_local

    config_path = root / CONFIG_NAME
    config = read_config(config_path)
    shared = config.get("settings")
    if not isinstance(shared, dict):
        return []
    rest, taken = split_local(shared)
    if not taken:
        return []
    local, _ = read_local(root)
    _, present = split_local(local if isinstance(local, dict) else {})
    merged = _overlay(local if isinstance(local, dict) else {}, {**taken, **present})
    write_yaml(root / LOCAL_NAME, {"settings": merged})
    config["settings"] = rest
    write_yaml(config_path, config)
    return sorted(taken)
