"""Rewriting a shelf or journal file: the one way memdir replaces lines of a file in place.

Forget's compaction (and the tombstones re-applied after a merge), a merge's duplicate lines,
forgotten or moved journal turns, an undone import and escaped NUL bytes all rewrite a file the
id cache covers. Each reads the file (`Lines.read`), says what takes each line's place, and
`rewrite` replaces the file atomically (atomic.py) and hands the id cache the edits, which moves
its rows instead of reading the file again: the next write after a forget costs what it would
have cost without it. The caller holds the writer lock.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import atomic, idcache
from .memdir import Memdir


@dataclass(frozen=True)
class Lines:
    """A file's complete lines as read, with the stat of the file they were read from."""

    path: Path
    stat: os.stat_result
    lines: list[bytes]  # each with its newline
    tail: bytes  # a newline-less last line (a torn write), or b""

    @classmethod
    def read(cls, path: Path) -> Lines:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            parts = handle.read().split(b"\n")
        tail = parts.pop()
        return cls(path, stat, [raw + b"\n" for raw in parts], tail)


def rewrite(memdir: Memdir, old: Lines, new: Sequence[bytes], tail: bytes | None = None) -> bool:
    """Replace `old`'s file: `new[i]` takes the place of `old.lines[i]` (the same bytes keep it,
    b"" drops it, other complete lines replace it), then `tail` (by default the old tail).
    Returns False, writing nothing, when nothing changed."""
    if len(new) != len(old.lines):
        raise ValueError(f"{len(new)} replacements for {len(old.lines)} lines")
    edits: list[idcache.Edit] = []
    offset = 0
    for before, after in zip(old.lines, new, strict=True):
        if after != before:
            edits.append((offset, len(before), after))
        offset += len(before)
    tail = old.tail if tail is None else tail
    if not edits and tail == old.tail:
        return False
    _replace(memdir, old.path, old.stat, offset, edits, [*new, tail])
    return True


def replace_lines(
    memdir: Memdir,
    path: Path,
    stat: os.stat_result,
    data: bytes | mmap.mmap,
    edits: list[idcache.Edit],
) -> bool:
    """Replace lines of `path`, read as `data` (with `stat`): each edit is a line's offset, its
    length and what takes its place (b"" drops it), in the order of the file; the rest of
    `data`, its torn tail too, stays as it is. For a few lines of a large file: no line is
    split out but those. Returns False, writing nothing, when there is no edit."""
    if not edits:
        return False
    view = memoryview(data)  # the unchanged parts are written from it, not copied
    chunks: list[bytes | memoryview] = []
    at = 0
    for offset, length, replacement in edits:
        chunks += [view[at:offset], replacement]
        at = offset + length
    chunks.append(view[at:])
    try:
        _replace(memdir, path, stat, data.rfind(b"\n") + 1, edits, chunks)
    finally:  # a mapping of `data` can be closed only when no view of it is left
        for chunk in chunks:
            if isinstance(chunk, memoryview):
                chunk.release()
        view.release()
    return True


def _replace(memdir: Memdir, path: Path, stat: os.stat_result, end: int,
             edits: list[idcache.Edit], chunks: Sequence[bytes | memoryview]) -> None:  # fmt: skip
    """Write the file anew from `chunks` and hand the id cache the edits of its complete lines
    (which ended at `end`)."""
    cache = idcache.kept_cache(memdir)  # synced with the file as it is, before the rename
    atomic.write_bytes(path, chunks)
    if cache is not None:
        cache.rewritten(path, stat, end, edits)
