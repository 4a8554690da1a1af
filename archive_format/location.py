"""Where a memdir is: --dir, $MEMDIR, or the nearest memdir upward (as git finds its repository).

Kept apart from memdir.py (which reads memdir.yaml with PyYAML and the schemas) so that the
client of a running `memdir serve` can find its memdir without importing either.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import NotAMemdirError

CONFIG_NAME = "memdir.yaml"
MEMDIR_ENV = "MEMDIR"
CACHE_NAME = ".memdir"


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
