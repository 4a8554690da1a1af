"""Decay: how faithfully a memory is still held, as a closed form of timestamps.

    F = (1 + t / S) ** -d

- t is the time since the memory was last rehearsed (recalled or confirmed), or since it was
  written when it never was;
- S, the stability, starts at a per-store value and is multiplied by `growth` for every spaced
  rehearsal (one at least `spacing` after the previous counted one: cramming counts once), then
  by (1 + emotion × intensity), where intensity = max(|valence|, arousal) of the memory's affect;
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "fidelity": round(self.value, 4),
            "stability_days": round(self.stability_days, 3),
            "elapsed_days": round(self.elapsed_days, 3),
            "rehearsals": self.rehearsals,
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
) -> Fidelity:
    """F at `now`. `rehearsals` are epoch seconds, sorted; those outside [created, now] are
    ignored, so a past *now* sees only the rehearsals that had happened."""
    start = created.timestamp()
    end = now.timestamp()
    low = bisect.bisect_left(rehearsals, start)
    high = bisect.bisect_right(rehearsals, end)
    counted = 0
    previous = start
    last = start
    for moment in rehearsals[low:high]:
        if moment - previous >= settings.spacing_seconds:
            counted += 1
            previous = moment
        last = moment
    stability = (
        settings.base_stability(store)
        * settings.growth**counted
        * (1 + settings.emotion * emotional_intensity)
    )
    elapsed = max(0.0, end - last) / 86400
    value = (1 + elapsed / stability) ** -settings.exponent if stability > 0 else 0.0
    return Fidelity(value, stability, elapsed, counted,
                    EPOCH + timedelta(seconds=last), emotional_intensity)  # fmt: skip


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
