"""Decay in practice: the rehearsal times of every memory (a small incremental cache) and one
memory's fidelity (recall's decay component, `memdir decay ID`).

The fidelity itself is archive_format.decay's closed form. Rehearsals are `recall` lines and
`confirm` events, which may sit in any shelf; scanning every shelf on each recall would cost
more than the recall, so the times are cached in `.memdir/rehearsals.json` with, per shelf, the
offset read so far, the inode and a hash of the bytes just before that offset. A shelf that was
rewritten (forget) or does not match is read again from the start. The cache is derived:
deleting it loses nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memdir.archive_format.clock import parse_time
from memdir.archive_format.decay import (
    DecaySettings,
    Fidelity,
    fidelity,
    intensity,
    multiplier,
    rehearsal_times,
)
from memdir.archive_format.errors import BadInputError
from memdir.archive_format.memdir import Memdir

CACHE_NAME = "rehearsals.json"
CACHE_VERSION = 1
_TAIL = 256  # bytes hashed just before a checkpoint


def _tail_hash(path: Path, offset: int) -> str:
    with open(path, "rb") as handle:
        handle.seek(max(0, offset - _TAIL))
        return hashlib.sha256(handle.read(offset - max(0, offset - _TAIL))).hexdigest()[:16]


def _load_cache(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return None
    return data


def _still_valid(shelf: Path, mark: dict[str, Any]) -> bool:
    try:
        stat = shelf.stat()
    except FileNotFoundError:
        return False
    offset = int(mark["offset"])
    return (
        stat.st_ino == mark["inode"]
        and stat.st_size >= offset
        and _tail_hash(shelf, offset) == mark["tail"]
    )


def _scan(shelf: Path, start: int) -> tuple[list[dict[str, Any]], int]:
    """Rehearsal lines of `shelf` from byte `start`, and the offset after its last full line."""
    with open(shelf, "rb") as handle:
        handle.seek(start)
        blob = handle.read()
    end = blob.rfind(b"\n") + 1
    found = []
    for raw in blob[:end].split(b"\n"):
        # cheap filter first: only recall lines and confirm events matter
        if b"recall" in raw or b"confirm" in raw:
            try:
                line = json.loads(raw)
            except ValueError:
                continue  # `verify` reports it; a bad line must not break recall
            if isinstance(line, dict):
                found.append(line)
    return found, start + end


def rehearsals(memdir: Memdir) -> dict[str, list[float]]:
    """memory id → sorted epoch seconds of its rehearsals, brought up to date from the shelves."""
    cache_path = memdir.cache_dir / CACHE_NAME
    cached = _load_cache(cache_path)
    shelves = memdir.shelves()
    marks: dict[str, dict[str, Any]] = dict(cached["shelves"]) if cached else {}
    valid = cached is not None and all(
        (memdir.shelves_dir / name).exists() and _still_valid(memdir.shelves_dir / name, mark)
        for name, mark in marks.items()
    )
    times: dict[str, list[float]] = (
        {key: list(value) for key, value in cached["times"].items()} if valid and cached else {}
    )
    if not valid:
        marks = {}
    changed = not valid
    lines: list[dict[str, Any]] = []
    for shelf in shelves:
        start = int(marks[shelf.name]["offset"]) if shelf.name in marks else 0
        if shelf.stat().st_size == start:
            continue
        found, end = _scan(shelf, start)
        lines.extend(found)
        if end != start:
            marks[shelf.name] = {"offset": end, "inode": shelf.stat().st_ino,
                                 "tail": _tail_hash(shelf, end)}  # fmt: skip
            changed = True
    for memory_id, moments in rehearsal_times(parseable(lines)).items():
        merged = times.setdefault(memory_id, [])
        merged.extend(moments)
        merged.sort()
    if changed:
        _save(cache_path, {"version": CACHE_VERSION, "shelves": marks, "times": times})
    return times


def parseable(lines: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    """The lines whose time can be read (a malformed one is `verify`'s business, not recall's)."""
    for line in lines:
        try:
            parse_time(str(line.get("at", "")))
        except BadInputError:
            continue  # a malformed time is `verify`'s business, not recall's
        yield line


def _save(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
    os.replace(temp, path)


def memory_fidelity(
    line: dict[str, Any],
    affect: dict[str, Any] | None,
    times: Mapping[str, Sequence[float]],
    now: datetime,
    settings: DecaySettings,
) -> Fidelity:
    """Fidelity of the memory `line` at `now` (affect: the user's, else the annotation)."""
    return fidelity(
        parse_time(line["created"]),
        times.get(line["id"], ()),
        now,
        line.get("store", "episodic"),
        intensity(affect),
        settings,
    )


def describe(memdir: Memdir, line: dict[str, Any], now: datetime) -> dict[str, Any]:
    """One memory's decay for `memdir decay ID`: fidelity now, its inputs, and a forecast if
    nothing rehearses it."""
    from memdir.archive_format.clock import format_time
    from memdir.archive_format.decay import days_until, forecast

    from .affect import load_annotator

    settings = memdir.settings.decay
    given = line.get("affect") or {}
    if "valence" in given or "arousal" in given:
        affect, origin = dict(given), "user"
    else:
        name = memdir.settings.affect.annotator
        affect, origin = load_annotator(name).annotate(line["text"]).to_dict(), name
    current = memory_fidelity(line, affect, rehearsals(memdir), now, settings)
    half = days_until(current, 0.5, settings)
    try:
        below_half = current.last + timedelta(days=half) if half is not None else None
    except OverflowError:
        below_half = None  # not within any date Python can write
    return {
        "id": line["id"],
        "text": line["text"],
        "store": line.get("store"),
        "created": line["created"],
        "now": format_time(now),
        **current.to_dict(),
        "affect_from": origin,
        "recall_multiplier": round(multiplier(current.value, settings), 4),
        "below_half_at": format_time(below_half) if below_half else None,
        "forecast": [
            {"after": label, "fidelity": round(value, 4)}
            for label, value in forecast(current, now, settings)
        ],
        "settings": {
            "exponent": settings.exponent,
            "growth": settings.growth,
            "emotion": settings.emotion,
            "strength": settings.strength,
            "spacing_seconds": settings.spacing_seconds,
            "stability_days": dict(settings.stability_days or {}),
        },  # fmt: skip
    }
