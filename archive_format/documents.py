"""Generated text files (documents/boot.md, documents/wake.md, journal entries): atomic writes.

A reader (a person with `cat`, an assistant reading its boot document) must never see half a
file, so every document is written to a temporary file in the same directory and renamed.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_text(path: Path, text: str) -> None:
    """Replace `path` with `text` atomically: temp file, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def estimate_tokens(text: str) -> int:
    """A rough token count (≈ 4 characters a token): enough to keep recall results and the wake
    document inside a prompt budget."""
    return max(1, (len(text) + 3) // 4)
