"""Decay: how faithfully a memory is still held, as a closed form of timestamps.

    F = (1 + t / S) ** -d

- t is the time since the memory was last rehearsed (recalled or confirmed), or since it was
  written when it never was;
- S, the stability, starts at a per-store value and is multiplied by `growth` for every spaced
  rehearsal (one at least `spacing` after the previous counted one: cramming counts once), then
  by (1 + emotion × intensity), where intensity = max(|valence|, arousal) of the memory's affect;
- reactivation: a rehearsal of a linked memory counts as a fraction of one (the link type's
  factor in `decay.reactivation`): S grows by growth^factor and the last-rehearsal time moves
  that fraction of the way to it — so recalling a memory keeps its close associates fresher;
- d is the exponent.

Nothing here is stored: F follows from the memory's creation time, the times of the `recall`
lines that list it and of its `confirm` events, and *now*. So the value is the same however
often (or seldom) `memdir sleep` runs, and `--now` replays the past. Decay never deletes; recall
multiplies a memory's score by 1 - strength × (1 - F), and `--perfect` switches that off.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from .clock import format_time, parse_duration, parse_time
from .fold import ArchiveView, MemoryState
from .settings import DecaySettings

FORECAST = ("1d", "7d", "30d", "90d", "365d")
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Fidelity:
    """A memory's fidelity at one moment, with the numbers it came from."""

    value: float  # F, 0..1
    stability_days: float  # S
    elapsed_days: float  # t
    rehearsals: int  # spaced rehearsals counted into S
    last: datetime  # last rehearsal (or creation)
    intensity: float  # emotional intensity 0..1
    reactivated: float = 0.0  # spaced partial rehearsals from linked memories (sum of factors)

    def to_dict(self) -> dict[str, Any]:
        return {
            "fidelity": round(self.value, 4),
            "stability_days": round(self.stability_days, 3),
            "elapsed_days": round(self.elapsed_days, 3),
            "rehearsals": self.rehearsals,
            "reactivated": round(self.reactivated, 3),
            "last_rehearsal": format_time(self.last),
            "intensity": round(self.intensity, 3),
        }


def intensity(affect: Mapping[str, Any] | None) -> float:
    """Emotional intensity of an affect annotation: max(|valence|, arousal), 0..1."""
    if not affect:
        return 0.0
    valence = abs(float(affect.get("valence") or 0.0))
    arousal = float(affect.get("arousal") or 0.0)
    return min(1.0, max(valence, arousal, 0.0))


def fidelity(
    created: datetime,
    rehearsals: Sequence[float],
    now: datetime,
    store: str,
    emotional_intensity: float,
    settings: DecaySettings,
    partial: Sequence[tuple[float, float]] = (),
) -> Fidelity:
    """F at `now`. `rehearsals` are epoch seconds, sorted; those outside [created, now] are
    ignored, so a past *now* sees only the rehearsals that had happened. `partial` are
    reactivations, (epoch seconds, factor): a linked memory's rehearsal counts as `factor` of a
    spaced rehearsal (the strongest one per `spacing` window) and moves the last-rehearsal time
    `factor` of the way. Adding a rehearsal or a reactivation never lowers F."""
    start = created.timestamp()
    end = now.timestamp()
    low = bisect.bisect_left(rehearsals, start)
    high = bisect.bisect_right(rehearsals, end)
    counted = 0
    previous = start
    for moment in rehearsals[low:high]:
        if moment - previous >= settings.spacing_seconds:
            counted += 1
            previous = moment
    # reactivations count apart from rehearsals (so a link never costs a rehearsal its count):
    # per `spacing`-long window after the creation, the strongest one
    windows: dict[float, float] = {}
    spacing = settings.spacing_seconds
    for moment, factor in partial:
        if start <= moment <= end and factor > 0:
            window = (moment - start) // spacing if spacing > 0 else moment
            windows[window] = max(windows.get(window, 0.0), min(1.0, factor))
    reactivated = sum(windows.values())
    # the last-rehearsal time: a rehearsal moves it there, a reactivation `factor` of the way
    last = start
    timeline = sorted([(moment, 0, 1.0) for moment in rehearsals[low:high]]
                      + [(at, 1, factor) for at, factor in partial
                         if start <= at <= end and factor > 0])  # fmt: skip
    for moment, kind, factor in timeline:
        last = moment if kind == 0 else last + min(1.0, factor) * (moment - last)
    stability = (
        settings.base_stability(store)
        * settings.growth ** (counted + reactivated)
        * (1 + settings.emotion * emotional_intensity)
    )
    elapsed = max(0.0, end - last) / 86400
    value = (1 + elapsed / stability) ** -settings.exponent if stability > 0 else 0.0
    return Fidelity(value, stability, elapsed, counted, EPOCH + timedelta(seconds=last),
                    emotional_intensity, round(reactivated, 6))  # fmt: skip


def may_reactivate(status: str, visibility: str) -> bool:
    """Whether a memory may refresh, or be refreshed by, a linked one's rehearsal: only what
    recall may show (archive_format/visibility.py) — never a rejected, forgotten, superseded,
    expired, private or sealed memory."""
    from .visibility import present

    return present("recall", "-", status, visibility) is not None


def linked_memories(view: ArchiveView, state: MemoryState,
                    factors: Mapping[str, float]) -> list[tuple[str, str]]:  # fmt: skip
    """The memories (id, link type) whose rehearsals refresh `state`: linked to it either way
    by a type with a factor, and both ends allowed by `may_reactivate`."""
    if state.memory is None or not may_reactivate(state.status, state.memory.visibility):
        return []
    ends = [(link["to"], link["type"]) for link in state.links]
    ends += [(link["from"], link["type"]) for link in view.incoming(state.id)]
    found = []
    for other_id, kind in ends:
        other = view.states.get(other_id)
        if factors.get(kind, 0.0) > 0 and other is not None and other.memory is not None \
                and may_reactivate(other.status, other.memory.visibility):  # fmt: skip
            found.append((other_id, kind))
    return sorted(set(found))


def reactivations(
    neighbours: Iterable[tuple[str, str]],
    times: Mapping[str, Sequence[float]],
    factors: Mapping[str, float],
) -> list[tuple[float, float]]:
    """A memory's partial rehearsals, sorted (epoch seconds, factor): each rehearsal of a
    neighbour (id, link type) at that link type's factor (`decay.reactivation`); the caller
    passes only the neighbours `may_reactivate` allows."""
    found = [(moment, float(factors.get(kind, 0.0)))
             for other, kind in neighbours for moment in times.get(other, ())]  # fmt: skip
    return sorted(item for item in found if item[1] > 0)


def multiplier(value: float, settings: DecaySettings) -> float:
    """What recall multiplies a score by: 1 for a fresh memory, 1 - strength at F = 0."""
    return 1.0 - settings.strength * (1.0 - value)


def days_until(current: Fidelity, threshold: float, settings: DecaySettings) -> float | None:
    """Days from the last rehearsal until F falls to `threshold` with no further rehearsal."""
    if not 0 < threshold < 1 or settings.exponent <= 0:
        return None
    return current.stability_days * (threshold ** (-1 / settings.exponent) - 1)


def forecast(
    current: Fidelity, now: datetime, settings: DecaySettings, horizons: Iterable[str] = FORECAST
) -> list[tuple[str, float]]:
    """F after each horizon if nothing rehearses the memory meanwhile."""
    rows = []
    for label in horizons:
        later = current.elapsed_days + parse_duration(label).total_seconds() / 86400
        rows.append((label, (1 + later / current.stability_days) ** -settings.exponent))
    return rows


def rehearsal_times(lines: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """memory id → sorted epoch seconds of its rehearsals: the `recall` lines that list it and
    the `confirm` events about it."""
    times: dict[str, list[float]] = {}
    for line in lines:
        kind = line.get("kind")
        if kind == "recall":
            moment = parse_time(line["at"]).timestamp()
            for memory_id in line.get("memories") or ():
                times.setdefault(memory_id, []).append(moment)
        elif kind == "event" and line.get("op") == "confirm":
            times.setdefault(line["target"], []).append(parse_time(line["at"]).timestamp())
    for values in times.values():
        values.sort()
    return times
