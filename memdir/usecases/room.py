"""Reading the room (`memdir room`, CAMA's read_room): the affective state of the conversation
right now — each recent turn's valence, arousal and strongest emotion, the user's mood over
them (mean, latest, trend, the chord of emotions) and whether recall's counterweights would
engage on the user's latest words (docs/AFFECT.md, "Reading the room").

Numbers only come from the turns the surface may show (the policy's `room` rows): a private,
sealed or secret turn is left out, so its mood is no clue to what it said."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memdir.archive_format import journal
from memdir.archive_format.errors import BadInputError
from memdir.archive_format.memdir import Memdir

DEFAULT_TURNS = 20  # the last turns of the session read
SNIPPET = 60  # characters of each turn's text shown beside its numbers
TREND = 0.2  # a change in the user's mean valence, first half to second, this big is a trend
SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], low: float = -1.0, high: float = 1.0) -> str:
    """One block character per value, from ▁ (`low`) to █ (`high`)."""
    span = high - low
    steps = len(SPARKS) - 1
    return "".join(SPARKS[round((min(max(v, low), high) - low) / span * steps)] for v in values)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _trend(values: list[float]) -> str:
    """'falling', 'rising' or 'steady': the mean of the later half against the earlier half."""
    if len(values) < 2:
        return "steady"
    half = len(values) // 2
    change = (_mean(values[-half:]) or 0.0) - (_mean(values[:half]) or 0.0)
    return "falling" if change <= -TREND else "rising" if change >= TREND else "steady"


def room(
    memdir: Memdir,
    now: datetime,
    session: str | None = None,
    turns: int = DEFAULT_TURNS,
    surface: str = "room",
) -> dict[str, Any]:
    """The last `turns` turns of `session` (default: the latest turn's session) as of `now`,
    each with its affect, and the user's mood over them; only turns `surface` may show."""
    from memdir.indexers.affect import PLUTCHIK, is_strongly_negative, load_annotator
    from memdir.indexers.recall.query import NEGATIVE_QUERY

    if turns < 1:
        raise BadInputError("--turns must be at least 1", hint="e.g. --turns 20")
    name = memdir.settings.affect.annotator
    if name == "none":
        raise BadInputError(
            "affect annotation is switched off (affect.annotator: none)",
            hint="set affect.annotator in memdir.yaml (docs/AFFECT.md) to read the room",
        )
    book = journal.read_journal(memdir, until=now)
    shown = [(turn, text) for turn in book.turns
             if (text := turn.text_on(surface)) is not None and turn.moment <= now]  # fmt: skip
    if session is None and shown:
        session = shown[-1][0].session
    recent = [(turn, text) for turn, text in shown if turn.session == session][-turns:]
    annotator = load_annotator(name)
    rows: list[dict[str, Any]] = []
    chord = dict.fromkeys(PLUTCHIK, 0.0)
    user_affects = []
    for turn, text in recent:
        affect = annotator.annotate(text)
        strongest = max(PLUTCHIK, key=lambda emotion: affect.chord[emotion])
        rows.append({
            "id": turn.id, "at": turn.at, "role": turn.role,
            "valence": round(affect.valence, 3), "arousal": round(affect.arousal, 3),
            "emotion": strongest if affect.chord[strongest] > 0 else None,
            "text": text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…",
        })  # fmt: skip
        if turn.role == "user":
            user_affects.append(affect)
            for emotion in PLUTCHIK:
                chord[emotion] += affect.chord[emotion]
    total = sum(chord.values())
    valences = [affect.valence for affect in user_affects]
    latest = user_affects[-1] if user_affects else None
    mood = {
        "user_turns": len(user_affects),
        "valence": None if not valences else round(_mean(valences) or 0.0, 3),
        "arousal": None if not user_affects else round(
            _mean([a.arousal for a in user_affects]) or 0.0, 3),
        "latest_valence": None if latest is None else round(latest.valence, 3),
        "trend": _trend(valences),
        "chord": {e: round(w / total, 3) for e, w in chord.items() if w > 0} if total else {},
        "counterweights": latest is not None and is_strongly_negative(latest, NEGATIVE_QUERY),
        "sparkline": sparkline(valences),
    }  # fmt: skip
    return {"session": session, "now": now.isoformat(), "annotator": name, "turns": rows,
            "mood": mood}  # fmt: skip
