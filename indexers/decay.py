"""Decay in practice: the rehearsal times of the memories (the index keeps them) and one
memory's fidelity (recall's decay component, `memdir decay ID`).

The fidelity itself is archive_format.decay's closed form. Rehearsals are `recall` lines and
`confirm` events, which may sit in any shelf; scanning every shelf on each recall would cost
more than the recall, so the index keeps them: the updater adds those it reads to a catalog
table as the shelves are indexed (the one rehearsal cache), and recall asks it for its
candidates' times only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
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
from memdir.archive_format.memdir import Memdir


def rehearsals(memdir: Memdir) -> dict[str, list[float]]:
    """memory id → sorted epoch seconds of its rehearsals: the index's, brought up to date
    with the shelves first (`memdir decay`, `sleep`; recall asks its index for fewer)."""
    from .index import MemoryIndex

    index = MemoryIndex(memdir)
    try:
        if index.needs_update():
            index.update()
        return index.rehearsals()
    finally:
        index.close()


def _rehearsals_of(memdir: Memdir, memory_id: str) -> dict[str, list[float]]:
    """One memory's rehearsal times read from the shelves: `memdir decay ID` needs no index
    (building one would embed every memory)."""
    from memdir.archive_format import shelf

    wanted = (
        item.data
        for path in memdir.shelves()
        for item in shelf.read(path)
        if item.data.get("kind") in ("recall", "event")
        and (memory_id in (item.data.get("memories") or ()) or item.data.get("target") == memory_id)
    )  # fmt: skip
    return rehearsal_times(wanted)


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
    current = memory_fidelity(line, affect, _rehearsals_of(memdir, line["id"]), now, settings)
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
