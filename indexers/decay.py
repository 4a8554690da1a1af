"""Decay in practice: the rehearsal times of the memories, and the decay step of recall.

The fidelity itself is archive_format.decay's closed form. Rehearsals are `recall` lines and
`confirm` events, which may sit in any shelf; scanning every shelf on each recall would cost
more than the recall, so the index keeps them: the updater adds those it reads to a catalog
table as the shelves are indexed (the one rehearsal cache), and recall asks it for its
candidates' times only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from memdir.archive_format.clock import parse_time
from memdir.archive_format.decay import DecaySettings, Fidelity, fidelity, intensity, multiplier
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


class Scored(Protocol):
    """What the recall step needs from a candidate (indexers.recall.Candidate)."""

    @property
    def id(self) -> str: ...

    memory: Any
    affect: dict[str, Any]
    components: dict[str, float]
    raw: dict[str, float]
    score: float


def apply_to_recall(
    memdir: Memdir,
    candidates: Sequence[Scored],
    now: datetime,
    perfect: bool,
    times: Mapping[str, Sequence[float]] | None = None,
) -> list[str]:
    """Recall's decay step: each score × (1 - strength × (1 - F)); `perfect` leaves scores alone.

    Sets the `decay` component (F, or 1 when perfect) and returns notes for `--explain`.
    `times` are the candidates' rehearsals (from the index); without them, every memory's are
    read here.
    """
    settings = DecaySettings.from_settings(memdir.settings)
    if perfect:
        for candidate in candidates:
            candidate.components["decay"] = 1.0
        return ["perfect recall: decay ignored"]
    if times is None:
        times = rehearsals(memdir)
    for candidate in candidates:
        result = memory_fidelity(candidate.memory.line, candidate.affect, times, now, settings)
        candidate.components["decay"] = result.value
        candidate.raw["stability_days"] = result.stability_days
        candidate.raw["rehearsals"] = result.rehearsals
        candidate.score *= multiplier(result.value, settings)
    return [
        f"score × (1 - {settings.strength:g} × (1 - F)), F = (1 + t/S)^-{settings.exponent:g}"
        " from rehearsal timestamps (`memdir decay ID` shows one memory)"
    ]


def describe(memdir: Memdir, line: dict[str, Any], now: datetime) -> dict[str, Any]:
    """One memory's decay for `memdir decay ID`: fidelity now, its inputs, and a forecast if
    nothing rehearses it."""
    from memdir.archive_format.clock import format_time
    from memdir.archive_format.decay import days_until, forecast

    from .affect import load_annotator

    settings = DecaySettings.from_settings(memdir.settings)
    given = line.get("affect") or {}
    if "valence" in given or "arousal" in given:
        affect, origin = dict(given), "user"
    else:
        name = str((memdir.settings.get("affect") or {}).get("annotator", "vader+nrc"))
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
