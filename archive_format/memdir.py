"""A memdir on disk: finding it, creating it, reading memdir.yaml, and where each file lives."""

from __future__ import annotations

import copy
import os
import uuid
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from . import atomic
from .clock import format_time
from .errors import FormatError, NotAMemdirError
from .lock import WriterLock
from .state import write_yaml
from .validate import load_schema, problems

CONFIG_NAME = "memdir.yaml"
FORMAT_VERSION = "1.0"
SUPPORTED_MAJOR = 1
MEMDIR_ENV = "MEMDIR"

DEFAULT_SETTINGS: dict[str, Any] = {
    "timezone": "UTC",
    "inference_ttl": "7d",
    "provisional_weight": 0.4,
    "embedder": {"kind": "auto", "path": None},
    "affect": {"annotator": "vader+nrc"},
    "recall": {"profile": "default"},
    # continuity (docs/CONTINUITY.md)
    "journal": {"raw_window_turns": 6, "raw_window_hours": 48},
    "decay": {
        "exponent": 0.5,
        "stability": {"episodic": "7d", "semantic": "30d", "procedural": "30d"},
        "growth": 2.0,
        "spacing": "1h",
        "emotion": 1.0,
        "strength": 0.1,
    },
    "dream": {
        "summariser": None,
        "timeout": "60s",
        "gap": "45m",
        "quick_gap": "10m",
        "min_overlap": 0.08,
    },
    "wake": {"budget": 1500},
}

GITATTRIBUTES = "# Shelves are append-only: two machines' appends merge without conflicts.\n*.jsonl merge=union\n"
GITIGNORE = "# Derived cache (indexes, embeddings, locks): rebuild with `memdir index`.\n.memdir/\n"


def _merge(defaults: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(defaults)
    for key, value in given.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def read_config(path: Path) -> dict[str, Any]:
    """memdir.yaml, validated; an unknown major format version is refused."""
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
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
    if not isinstance(data.get("settings", {}), dict):
        raise FormatError(f"{path}: settings must be a mapping", hint="see docs/FORMAT.md")
    return data


@dataclass(frozen=True)
class Memdir:
    """An opened memdir: its root, its configuration, and the paths of its files."""

    root: Path
    config: dict[str, Any]

    @cached_property
    def settings(self) -> dict[str, Any]:
        """memdir.yaml's settings over the defaults (computed once per opened memdir)."""
        return _merge(DEFAULT_SETTINGS, self.config.get("settings") or {})

    @property
    def shelves_dir(self) -> Path:
        return self.root / "shelves"

    @property
    def memory_shelf(self) -> Path:
        return self.shelves_dir / "memories.jsonl"

    @property
    def event_shelf(self) -> Path:
        return self.shelves_dir / "events.jsonl"

    @property
    def recall_shelf(self) -> Path:
        return self.shelves_dir / "recalls.jsonl"

    @property
    def journal_dir(self) -> Path:
        return self.root / "journal"

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def documents_dir(self) -> Path:
        return self.root / "documents"

    @property
    def quarantine_dir(self) -> Path:
        return self.root / "quarantine"

    @property
    def cache_dir(self) -> Path:
        return self.root / ".memdir"

    def shelves(self) -> list[Path]:
        """Every shelf file, in a stable order."""
        return sorted(self.shelves_dir.glob("*.jsonl"))

    def lock(self, timeout: float | None = None) -> WriterLock:
        """The writer lock; hold it for every write to the canonical files."""
        return WriterLock(self.cache_dir / "lock", timeout)

    @classmethod
    def open(cls, root: Path) -> Memdir:
        config_path = root / CONFIG_NAME
        if not config_path.is_file():
            raise NotAMemdirError(
                f"{root} is not a memdir (no {CONFIG_NAME})",
                hint=f"create one with `memdir init {root}`",
            )
        return cls(root.resolve(), read_config(config_path))


def is_memdir(path: Path) -> bool:
    return (path / CONFIG_NAME).is_file()


def find_root(explicit: str | None = None, start: Path | None = None) -> Path:
    """--dir, else $MEMDIR, else the nearest memdir upward from `start` (as git does)."""
    for given, origin in ((explicit, "--dir"), (os.environ.get(MEMDIR_ENV), f"${MEMDIR_ENV}")):
        if given:
            path = Path(given).expanduser()
            if not is_memdir(path):
                raise NotAMemdirError(
                    f"{origin} {given} is not a memdir (no {CONFIG_NAME})",
                    hint=f"create one with `memdir init {given}`",
                )
            return path.resolve()
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if is_memdir(candidate):
            return candidate
    raise NotAMemdirError(
        "no memdir here or in any parent directory",
        hint=f"create one with `memdir init PATH`, or pass --dir PATH or set ${MEMDIR_ENV}",
    )


def init(root: Path, now: datetime) -> tuple[Memdir, bool]:
    """Create a memdir (or fill in what is missing); returns it and whether it is new.

    Existing files are never overwritten.
    """
    root = root.expanduser()
    created = not is_memdir(root)
    for sub in ("shelves", "journal", "state", "documents"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for shelf in ("memories.jsonl", "events.jsonl"):
        (root / "shelves" / shelf).touch(exist_ok=True)
    for name, text in ((".gitattributes", GITATTRIBUTES), (".gitignore", GITIGNORE)):
        if not (root / name).exists():
            atomic.write_text(root / name, text)  # a crash must not leave half a file for good
    if created:
        config = {
            "format": FORMAT_VERSION,
            "id": uuid.uuid4().hex,
            "created": format_time(now),
            "settings": copy.deepcopy(DEFAULT_SETTINGS),
        }
        write_yaml(root / CONFIG_NAME, config)
    return Memdir.open(root), created
