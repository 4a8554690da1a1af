"""Decay in practice: the rehearsal times of the memories (the index keeps them) and one
memory's fidelity (recall's decay component, `memdir decay ID`).

The fidelity itself is archive_format.decay's closed form. Rehearsals are `recall` lines and
`confirm` events, which may sit in any shelf; scanning every shelf on each recall would cost
more than the recall, so the index keeps them: the updater adds those it reads to a catalog
table as the shelves are indexed (the one rehearsal cache), and recall asks it for its
candidates' times only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memdir.archive_format.clock import parse_time
from memdir.archive_format.decay import (
    DecaySettings,
    Fidelity,
    fidelity,
    intensity,
    may_reactivate,
    multiplier,
    reactivations,
    rehearsal_times,
)
from memdir.archive_format.memdir import Memdir

from .backends import neighbours as every_neighbour

if TYPE_CHECKING:
    from .backends import CatalogReader


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


def _rehearsals_of(memdir: Memdir, ids: set[str]) -> dict[str, list[float]]:
    """These memories' rehearsal times read from the shelves: `memdir decay ID` needs no index
    (building one would embed every memory)."""
    from memdir.archive_format import shelf

    wanted = (
        item.data
        for path in memdir.shelves()
        for item in shelf.read(path)
        if item.data.get("kind") in ("recall", "event")
        and (not ids.isdisjoint(item.data.get("memories") or ()) or item.data.get("target") in ids)
    )  # fmt: skip
    return rehearsal_times(wanted)


def reactivations_of(
    catalog: CatalogReader, ids: Iterable[str], factors: Mapping[str, float]
) -> dict[str, list[tuple[float, float]]]:
    """Memory id → its partial rehearsals (archive_format.decay.reactivations) from the index's
    links and rehearsal times; both ends must pass `may_reactivate` (the catalog's status, the
    line's visibility)."""
    wanted = set(ids)
    if not wanted or not any(value > 0 for value in factors.values()):
        return {}
    linked = every_neighbour(catalog.links())
    neighbours: dict[str, list[tuple[str, str]]] = {}
    for mine in wanted:
        pairs = [(theirs, kind) for theirs, kind in linked.get(mine, ())
                 if factors.get(kind, 0.0) > 0]  # fmt: skip
        if pairs:
            neighbours[mine] = pairs
    if not neighbours:
        return {}
    ends = set(neighbours) | {other for pairs in neighbours.values() for other, _ in pairs}
    allowed = {memory_id for memory_id, memory in catalog.memories_by_id(ends).items()
               if may_reactivate(memory.status, memory.line.get("visibility", "normal"))}  # fmt: skip
    times = catalog.rehearsal_times(
        {other for pairs in neighbours.values() for other, _ in pairs} & allowed
    )
    return {memory_id: reactivations([pair for pair in pairs if pair[0] in allowed], times,
                                     factors)
            for memory_id, pairs in neighbours.items() if memory_id in allowed}  # fmt: skip


def memory_fidelity(
    line: dict[str, Any],
    affect: dict[str, Any] | None,
    times: Mapping[str, Sequence[float]],
    now: datetime,
    settings: DecaySettings,
    partial: Sequence[tuple[float, float]] = (),
) -> Fidelity:
    """Fidelity of the memory `line` at `now` (affect: the user's, else the annotation;
    `partial`: its reactivations)."""
    return fidelity(
        parse_time(line["created"]),
        times.get(line["id"], ()),
        now,
        line.get("store", "episodic"),
        intensity(affect),
        settings,
        partial,
    )


def describe(
    memdir: Memdir,
    line: dict[str, Any],
    now: datetime,
    neighbours: Sequence[tuple[str, str]] = (),
    times: Mapping[str, Sequence[float]] | None = None,
) -> dict[str, Any]:
    """One memory's decay for `memdir decay ID`: fidelity now, its inputs (the linked memories
    `neighbours` (id, link type) whose rehearsals refresh it among them), and a forecast if
    nothing rehearses it. `times`: every memory's rehearsal times, when the caller has read
    them already (archive_format.decay.rehearsal_times); else they are read from the shelves."""
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
    if times is None:
        times = _rehearsals_of(memdir, {line["id"], *(other for other, _ in neighbours)})
    partial = reactivations(neighbours, times, settings.reactivation)
    current = memory_fidelity(line, affect, times, now, settings, partial)
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
        "reactivated_by": [
            {
                "id": other,
                "link": kind,
                "factor": settings.reactivation[kind],
                "rehearsals": len(times.get(other, ())),
            }
            for other, kind in neighbours
        ],  # fmt: skip
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
            "reactivation": dict(settings.reactivation),
            "spacing_seconds": settings.spacing_seconds,
            "stability_days": dict(settings.stability_days or {}),
        },  # fmt: skip
    }
