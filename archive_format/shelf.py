"""Append-only JSONL files: crash-safe appends, torn-line quarantine, strict reading.

A shelf line is written with one O_APPEND write followed by fsync, under the writer lock. A
crash can leave at most one torn (newline-less) last line; the next writer moves it to the
quarantine directory and reports it, so it is never silently dropped and never glued to the
next line. Whole-file rewrites (`forget`, `import --undo`) go through `atomic.write_bytes`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .errors import FormatError

log = logging.getLogger("memdir")


@dataclass(frozen=True)
class ShelfLine:
    """A decoded line and where it came from."""

    path: Path
    number: int  # 1-based line number
    offset: int  # byte offset of the line's start
    data: dict[str, Any]
    end: int  # byte offset just after the line's newline


def quarantine_torn_tail(path: Path, quarantine_dir: Path) -> int:
    """Move a newline-less last line (a crashed write) to the quarantine; returns bytes moved."""
    torn_bytes = torn_tail(path)
    if torn_bytes == 0:
        return 0
    with open(path, "rb+") as handle:
        keep = handle.seek(0, os.SEEK_END) - torn_bytes
        handle.seek(keep)
        torn = handle.read()
        quarantine_dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        target = quarantine_dir / f"{path.name}.{stamp}.torn"
        with open(target, "wb") as out:
            out.write(torn)
            out.flush()
            os.fsync(out.fileno())
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    log.warning(
        "moved a torn last line (%d bytes) from %s to %s — a writer crashed mid-write",
        len(torn),
        path,
        target,
    )
    return len(torn)


def append(path: Path, payloads: Iterable[bytes], quarantine_dir: Path) -> int:
    """Append complete lines (caller holds the writer lock); returns the start offset.

    On a failed write the file is truncated back to where it was, as mailbox does.
    """
    data = b"".join(payloads)
    if not data:
        return path.stat().st_size if path.exists() else 0
    path.parent.mkdir(parents=True, exist_ok=True)
    quarantine_torn_tail(path, quarantine_dir)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        except BaseException:
            os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)
    return start


def decode_line(raw: bytes, where: str) -> dict[str, Any]:
    """One line as a JSON object, or a FormatError naming `where` (file:line)."""
    hint = "fix or remove that line; `memdir verify` lists every problem"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FormatError(
            f"{where}: not UTF-8 ({error.reason} at byte {error.start})", hint=hint
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise FormatError(
            f"{where}: not valid JSON ({error.msg}, column {error.colno})", hint=hint
        ) from None
    if not isinstance(data, dict):
        raise FormatError(f"{where}: a line must be a JSON object", hint=hint)
    return data


def read(path: Path, start: int = 0) -> Iterator[ShelfLine]:
    """Complete lines from byte `start` on (line numbers count from there).

    A newline-less last line (being written, or torn) is not yielded: `verify` reports it and
    the next writer quarantines it.
    """
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            blob = handle.read()
    except FileNotFoundError:
        return
    offset = start
    for number, raw in enumerate(blob.split(b"\n")[:-1], start=1):
        if raw.strip():
            where = f"{path}:{number}" if start == 0 else f"{path} (byte {offset})"
            yield ShelfLine(path, number, offset, decode_line(raw, where), offset + len(raw) + 1)
        offset += len(raw) + 1


def torn_tail(path: Path) -> int:
    """Bytes after the last newline (0 when the file ends cleanly), read backwards in chunks."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    chunk = 1 << 16
    with open(path, "rb") as handle:
        position = size
        while position > 0:
            start = max(0, position - chunk)
            handle.seek(start)
            newline = handle.read(position - start).rfind(b"\n")
            if newline >= 0:
                return size - (start + newline + 1)
            position = start
    return size
